#!/usr/bin/env python3
"""Compose sample_logs/k8s_gang_partial_restart from sample_logs/k8s_exception_cri_skew.

A broken gang: rank 3 in pod llm-pretrain-worker-1 raises (the real captured exception); the
kubelet restarts that pod's container ALONE (restartPolicy OnFailure, 10 s back-off); the new
container's torchrun starts ranks 2 and 3 again, which block in init_process_group, while the
other six ranks sit in the step-10 all_reduce and print nothing until the NCCL watchdog fires
600 s later; then the PyTorchJob fails.

What is real and what is composed (also in the bundle's README):
- real (captured by tools/capture, tr_exception, wrapped in CRI by compose_k8s.py): every pod
  log line up to step 9, the exception of rank 3, worker-1's first container log verbatim;
- composed: the peers' tails (NCCL watchdog lines in the shape of torch 2.x
  ProcessGroupNCCL.cpp, as in shared/real_log_shapes 020/022; the job was gloo, so the
  'backend=gloo' lines say 'backend=nccl' here), worker-1's second container log (its own first
  44 lines, moved to the restart time with new pids), the kubectl and kubelet output (shapes
  from kubelet pod_workers.go / training-operator pytorchjob_controller.go event strings and
  public `kubectl describe` / `get events` output).
Deterministic: run it again and the bundle is byte-identical.
"""
from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "sample_logs" / "k8s_exception_cri_skew"
OUT = ROOT / "sample_logs" / "k8s_gang_partial_restart"
NS = "ml-train"
UID = {"llm-pretrain-worker-0": "241a65bd-50cf-4b2a-a070-1995ff6beeda",
       "llm-pretrain-worker-1": "e66d30ff-b92e-41d4-a510-d88223f3be2a",
       "llm-pretrain-worker-2": "6f6cffa7-b7fa-41e8-a9e9-1c22d7caef8f",
       "llm-pretrain-worker-3": "7e364395-a29a-4f40-aa3d-b8da24ce7859"}
NODE = {f"llm-pretrain-worker-{i}": f"aks-gpu-31215847-vmss00000{i}" for i in range(4)}
IP = {"llm-pretrain-worker-0": "10.44.1.17", "llm-pretrain-worker-1": "10.44.2.20",
      "llm-pretrain-worker-2": "10.44.3.23", "llm-pretrain-worker-3": "10.44.4.26"}
SKEW = {"llm-pretrain-worker-2": 37.0}            # that node's clock runs 37 s ahead (real capture)
RANKS = {"llm-pretrain-worker-0": [(0, 12350), (1, 12354)], "llm-pretrain-worker-2": [(4, 12355), (5, 12362)],
         "llm-pretrain-worker-3": [(6, 12353), (7, 12361)]}
T_FAIL = dt.datetime(2026, 11, 29, 17, 30, 41, 620000)      # rank 3's traceback (true time)
T_RESTART = dt.datetime(2026, 11, 29, 17, 30, 59, 400000)   # kubelet starts the new container
T_WATCHDOG = T_FAIL + dt.timedelta(seconds=600.1)           # NCCL timeout 600000 ms
T_CAPTURE = dt.datetime(2026, 11, 29, 17, 41, 30)           # when kubectl was run
NEW_CID = "containerd://4c1f0e9a8d2b7e61f3a5c0d9b8e7f6a5c4d3b2a19081726354abcdef01234567"
OLD_CID = "containerd://b9d72a5b5f183a3d8c084b7f2ff6dba00e4557dd6dc67e5e184739f3b33b99de"


def log_path(root: Path, pod: str, n: int) -> Path:
    return root / "var" / "log" / "pods" / f"{NS}_{pod}_{UID[pod]}" / "pytorch" / f"{n}.log"


def cri(t: dt.datetime, stream: str, text: str) -> str:
    return f"{t.strftime('%Y-%m-%dT%H:%M:%S.%f')}000Z {stream} F {text}"


def shift_line(line: str, delta: dt.timedelta, pids: dict[str, str]) -> str:
    """Every time written in a line moved by delta (CRI, glog, c10d, python logging); pids renamed."""
    def iso(m):
        t = dt.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f") + delta
        return t.strftime("%Y-%m-%dT%H:%M:%S.%f") + m.group(2)
    line = re.sub(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6})(\d*Z)", iso, line)

    def glog(m):
        t = dt.datetime.strptime("2026" + m.group(2) + " " + m.group(3), "%Y%m%d %H:%M:%S.%f") + delta
        return f"{m.group(1)}{t.strftime('%m%d %H:%M:%S.%f')}{m.group(4)}"
    line = re.sub(r"([IWE\[]I?)(\d{4}) (\d\d:\d\d:\d\d\.\d{6})(\d*)", glog, line)

    def pylog(m):
        t = dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f") + delta
        return t.strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    line = re.sub(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})", pylog, line)
    for old, new in pids.items():
        line = re.sub(rf"\b{old}\b", new, line)
    return line


def peer_log(pod: str, lines: list[str]) -> list[str]:
    """A peer: its real lines up to its last step line, then silence, then the NCCL watchdog."""
    last = max(i for i, ln in enumerate(lines) if " step 9 loss " in ln or " step 8 loss " in ln)
    keep = [ln.replace("backend=gloo", "backend=nccl") for ln in lines[: last + 1]]
    agent = re.search(r" (\d+) torch/distributed/", lines[0]).group(1)
    skew = dt.timedelta(seconds=SKEW.get(pod, 0.0))
    out = list(keep)
    for i, (rank, pid) in enumerate(RANKS[pod]):
        t = T_WATCHDOG + skew + dt.timedelta(milliseconds=7 * rank + 3 * i)
        g = t.strftime("%m%d %H:%M:%S.%f") + f"{(rank * 137) % 1000:03d}"
        lr = i
        out.append(cri(t, "stderr", f"[default{lr}]:[rank{rank}]:[E{g} ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog "
                                    "caught collective operation timeout: WorkNCCL(SeqNum=11, OpType=ALLREDUCE, "
                                    f"NumelIn=1056, NumelOut=1056, Timeout(ms)=600000) ran for {600089 + 7 * rank} "
                                    "milliseconds before timing out."))
        t2 = t + dt.timedelta(microseconds=2100)
        g2 = t2.strftime("%m%d %H:%M:%S.%f") + "418"
        out.append(cri(t2, "stderr", f"[default{lr}]:[rank{rank}]:[E{g2} ProcessGroupNCCL.cpp:2268] [PG ID 0 PG GUID "
                                     f"0(default_pg) Rank {rank}]  failure detected by watchdog at work sequence id: 11 "
                                     "PG status: last enqueued work: 11, last completed work: 10"))
        t3 = t2 + dt.timedelta(microseconds=900)
        g3 = t3.strftime("%m%d %H:%M:%S.%f") + "051"
        out.append(cri(t3, "stderr", f"[default{lr}]:[rank{rank}]:[E{g3} ProcessGroupNCCL.cpp:698] [Rank {rank}] To "
                                     "avoid data inconsistency, we are taking the entire process down."))
    t4 = T_WATCHDOG + skew + dt.timedelta(seconds=1.48)
    for i, (rank, pid) in enumerate(RANKS[pod]):
        t5 = t4 + dt.timedelta(milliseconds=2 * i)
        out.append(cri(t5, "stderr", f"E{t5.strftime('%m%d %H:%M:%S.%f')} {agent} torch/distributed/elastic/"
                                     f"multiprocessing/api.py:1002] failed (exitcode: -6) local_rank: {i} (pid: {pid}) "
                                     "of binary: /opt/ranktrace-torch/bin/python3.11"))
    return out


def restarted_log(lines: list[str]) -> list[str]:
    """worker-1's second container: its torchrun starting again, ranks 2 and 3 starting again."""
    end = max(i for i, ln in enumerate(lines) if "worker started" in ln)
    t0 = dt.datetime.strptime(lines[0][:26], "%Y-%m-%dT%H:%M:%S.%f")
    delta = T_RESTART - t0
    pids = {"12140": "12941", "12352": "13152", "12363": "13163"}
    return [shift_line(ln.replace("backend=gloo", "backend=nccl"), delta, pids) for ln in lines[: end + 1]]


def age(t: dt.datetime) -> str:
    s = int((T_CAPTURE - t).total_seconds())
    return f"{s}s" if s < 120 else f"{s // 60}m{s % 60}s" if s < 600 else f"{s // 60}m"


def main() -> int:
    readme = (OUT / "README.md").read_text() if (OUT / "README.md").exists() else None   # hand-written
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    if readme:
        (OUT / "README.md").write_text(readme)
    for pod in UID:
        src = log_path(SRC, pod, 0).read_text().splitlines()
        if pod == "llm-pretrain-worker-1":
            p = log_path(OUT, pod, 0)
            p.parent.mkdir(parents=True)
            p.write_text("\n".join(ln.replace("backend=gloo", "backend=nccl") for ln in src) + "\n")
            log_path(OUT, pod, 1).write_text("\n".join(restarted_log(src)) + "\n")
        else:
            p = log_path(OUT, pod, 0)
            p.parent.mkdir(parents=True)
            p.write_text("\n".join(peer_log(pod, src)) + "\n")
    w1 = "llm-pretrain-worker-1"
    start = dt.datetime(2026, 11, 29, 17, 29, 48)
    (OUT / "kubectl_get_pods.txt").write_text(
        f"$ kubectl -n {NS} get pods -o wide\n"
        "NAME                    READY   STATUS    RESTARTS      AGE     IP           NODE\n"
        + "".join(f"{p:<24}{'1/1' if p == w1 else '0/1':<8}{'Running' if p == w1 else 'Error':<10}"
                  f"{('1 (' + age(T_RESTART) + ' ago)') if p == w1 else '0':<14}{age(start):<8}{IP[p]:<13}{NODE[p]}\n"
                  for p in UID))
    (OUT / f"kubectl_describe_pod_{w1}.txt").write_text(f"""$ kubectl -n {NS} describe pod {w1}
Name:             {w1}
Namespace:        {NS}
Priority:         0
Service Account:  default
Node:             {NODE[w1]}/10.44.2.20
Start Time:       Sun, 29 Nov 2026 17:29:48 +0000
Labels:           training.kubeflow.org/job-name=llm-pretrain
                  training.kubeflow.org/replica-index=1
                  training.kubeflow.org/replica-type=worker
Annotations:      <none>
Status:           Running
IP:               10.44.2.20
Controlled By:    PyTorchJob/llm-pretrain
Containers:
  pytorch:
    Container ID:   {NEW_CID}
    Image:          registry.example.internal/ml/llm-pretrain:2026.11.3
    Port:           29400/TCP
    State:          Running
      Started:      Sun, 29 Nov 2026 17:30:59 +0000
    Last State:     Terminated
      Reason:       Error
      Exit Code:    1
      Started:      Sun, 29 Nov 2026 17:30:00 +0000
      Finished:     Sun, 29 Nov 2026 17:30:48 +0000
    Ready:          True
    Restart Count:  1
    Limits:
      cpu:             16
      memory:          64Gi
      nvidia.com/gpu:  2
    Requests:
      cpu:             16
      memory:          64Gi
      nvidia.com/gpu:  2
    Environment:
      PET_NNODES:          4
      PET_NPROC_PER_NODE:  2
      PET_RDZV_ENDPOINT:   llm-pretrain-worker-0:29400
    Mounts:
      /dev/shm from dshm (rw)
Conditions:
  Type              Status
  Initialized       True
  Ready             True
  ContainersReady   True
  PodScheduled      True
QoS Class:                   Guaranteed
Node-Selectors:              cloud.example/accelerator=a100
Tolerations:                 nvidia.com/gpu:NoSchedule op=Exists
Events:
  Type     Reason     Age                  From               Message
  ----     ------     ----                 ----               -------
  Normal   Scheduled  {age(start):<20} default-scheduler  Successfully assigned {NS}/{w1} to {NODE[w1]}
  Normal   Pulled     {age(T_RESTART) + ' (x2 over ' + age(start) + ')':<20} kubelet            Container image "registry.example.internal/ml/llm-pretrain:2026.11.3" already present on machine
  Normal   Created    {age(T_RESTART) + ' (x2 over ' + age(start) + ')':<20} kubelet            Created container pytorch
  Normal   Started    {age(T_RESTART) + ' (x2 over ' + age(start) + ')':<20} kubelet            Started container pytorch
  Warning  BackOff    {age(T_RESTART - dt.timedelta(seconds=9)):<20} kubelet            Back-off restarting failed container pytorch in pod {w1}_{NS}({UID[w1]})
""")
    ev = [(start, "Normal", "Scheduled", f"pod/{p}", f"Successfully assigned {NS}/{p} to {NODE[p]}") for p in UID]
    ev += [(start + dt.timedelta(seconds=1), "Normal", "Started", f"pod/{p}", "Started container pytorch") for p in UID]
    ev += [(T_RESTART - dt.timedelta(seconds=9), "Warning", "BackOff", f"pod/{w1}",
            f"Back-off restarting failed container pytorch in pod {w1}_{NS}({UID[w1]})"),
           (T_RESTART - dt.timedelta(seconds=10), "Warning", "PyTorchJobRestarting", "pytorchjob/llm-pretrain",
            "PyTorchJob llm-pretrain is restarting because 1 Worker replica(s) failed."),
           (T_RESTART, "Normal", "Started", f"pod/{w1}", "Started container pytorch"),
           (T_WATCHDOG + dt.timedelta(seconds=4), "Warning", "PyTorchJobFailed", "pytorchjob/llm-pretrain",
            f"PyTorchJob {NS}/llm-pretrain is failed because 3 Worker replica(s) failed.")]
    ev.sort(key=lambda e: e[0])
    (OUT / "kubectl_get_events.txt").write_text(
        f"$ kubectl -n {NS} get events --sort-by=.lastTimestamp\n"
        "LAST SEEN   TYPE      REASON                 OBJECT                      MESSAGE\n"
        + "".join(f"{age(t):<12}{ty:<10}{r:<23}{o:<28}{m}\n" for t, ty, r, o, m in ev))
    k = "kubelet[2211]:"
    n1 = NODE[w1]

    def kl(t, lvl, src, msg):
        return f"{t.strftime('%b %d %H:%M:%S')} {n1} {k} {lvl}{t.strftime('%m%d %H:%M:%S.%f')}    2211 {src}] {msg}"
    died = dt.datetime(2026, 11, 29, 17, 30, 49, 102000)
    j = [kl(died, "I", "kubelet.go:2461", f'"SyncLoop (PLEG): event for pod" pod="{NS}/{w1}" event={{"ID":"{UID[w1]}",'
                                           f'"Type":"ContainerDied","Data":"{OLD_CID.split("//")[1]}"}}'),
         kl(died + dt.timedelta(milliseconds=31), "E", "pod_workers.go:1301",
            f'"Error syncing pod, skipping" err="failed to \\"StartContainer\\" for \\"pytorch\\" with CrashLoopBackOff: '
            f'\\"back-off 10s restarting failed container=pytorch pod={w1}_{NS}({UID[w1]})\\"" pod="{NS}/{w1}" '
            f'podUID="{UID[w1]}"'),
         kl(T_RESTART + dt.timedelta(milliseconds=140), "I", "kubelet.go:2461",
            f'"SyncLoop (PLEG): event for pod" pod="{NS}/{w1}" event={{"ID":"{UID[w1]}","Type":"ContainerStarted",'
            f'"Data":"{NEW_CID.split("//")[1]}"}}')]
    (OUT / "journal").mkdir()
    (OUT / "journal" / f"{n1}.log").write_text("\n".join(j) + "\n")
    truth = json.loads((SRC / "expected_verdict.json").read_text())
    want = {"verdict": dict(truth["verdict"], summary=(
        "rank 3 in pod llm-pretrain-worker-1 raised RuntimeError (corrupted input batch at step 10); the kubelet "
        "restarted that pod's container alone, its ranks 2 and 3 started again while the 6 other ranks waited in "
        "the step-10 all_reduce until the NCCL watchdog 600 s later")),
        "clock": truth["clock"],
        "gang": {"restarted_pods": [w1], "restarted_ranks": [2, 3], "waiting_ranks": [0, 1, 4, 5, 6, 7],
                 "idle_ranks": 8, "waiting_nodes": [NODE[p] for p in ("llm-pretrain-worker-0", "llm-pretrain-worker-2",
                                                                      "llm-pretrain-worker-3")],
                 "restart_at": T_RESTART.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
                 "idle_to": T_WATCHDOG.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"},
        "impact": {"gpus": 8, "gpu_hours_about": round(8 * 600 / 3600, 2)},
        "composed_from": {"bundle": "k8s_exception_cri_skew", "script": "tools/capture/compose_gang.py"}}
    (OUT / "expected_verdict.json").write_text(json.dumps(want, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
