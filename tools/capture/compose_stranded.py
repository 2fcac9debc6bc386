#!/usr/bin/env python3
"""Compose sample_logs/k8s_volcano_stranded_gpus from sample_logs/k8s_gpu_admission_rdzv.

Stranded GPUs under a gang scheduler: a PyTorchJob of 4 worker pods x 2 GPUs scheduled by Volcano
(PodGroup minMember 4). Workers 0-2 run on three nodes and hold their GPUs while their torchrun
agents wait in the c10d rendezvous; worker-3 cannot be placed (FailedScheduling: no node with 2
free nvidia.com/gpu; Volcano: '1/4 tasks in gang unschedulable'); the three agents give up after
the join timeout.

Real: the three pods' container logs (the real torchrun output of capture tr_rdzv_missing_node,
as in k8s_gpu_admission_rdzv). Composed: the kubectl output (events, get pods -o wide, describe
of worker-3) in the shapes of kube-scheduler's FailedScheduling and Volcano's PodGroup event.
Deterministic; the hand-written README is kept.
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "sample_logs" / "k8s_gpu_admission_rdzv"
OUT = ROOT / "sample_logs" / "k8s_volcano_stranded_gpus"
NS = "ml-train"
NODES = {"llm-pretrain-worker-0": "gke-a100-pool-2hs8", "llm-pretrain-worker-1": "gke-a100-pool-6vb0",
         "llm-pretrain-worker-2": "gke-a100-pool-kk31"}
IPS = {"llm-pretrain-worker-0": "10.52.1.14", "llm-pretrain-worker-1": "10.52.2.9", "llm-pretrain-worker-2": "10.52.3.31"}
FAIL = ("0/12 nodes are available: 3 node(s) had untolerated taint {nvidia.com/gpu-maintenance: true}, 9 Insufficient "
        "nvidia.com/gpu. preemption: 0/12 nodes are available: 12 No preemption victims found for incoming pod.")
GANG = "1/4 tasks in gang unschedulable: pod group is not ready, 3 Running, 4 minAvailable; Pending: 1 Unschedulable"


def main() -> int:
    readme = (OUT / "README.md").read_text() if (OUT / "README.md").exists() else None
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    if readme:
        (OUT / "README.md").write_text(readme)
    for d in sorted((SRC / "var" / "log" / "pods").iterdir()):
        if "_llm-pretrain-worker-" in d.name:
            shutil.copytree(d, OUT / "var" / "log" / "pods" / d.name)
    (OUT / "kubectl_get_events.txt").write_text(
        f"$ kubectl -n {NS} get events --sort-by=.lastTimestamp\n"
        "LAST SEEN   TYPE      REASON             OBJECT                       MESSAGE\n"
        + "".join(f"{'110s':<12}{'Normal':<10}{'Scheduled':<19}{'pod/' + p:<29}Successfully assigned {NS}/{p} to {n}\n"
                  for p, n in NODES.items())
        + "".join(f"{'109s':<12}{'Normal':<10}{'Started':<19}{'pod/' + p:<29}Started container pytorch\n" for p in NODES)
        + f"{'100s (x9 over 110s)':<12}  {'Warning':<10}{'FailedScheduling':<19}{'pod/llm-pretrain-worker-3':<29}{FAIL}\n"
        + f"{'98s (x10 over 110s)':<12}  {'Warning':<10}{'Unschedulable':<19}{'podgroup/llm-pretrain-7c1d':<29}{GANG}\n"
        + f"{'68s':<12}{'Warning':<10}{'PyTorchJobFailed':<19}{'pytorchjob/llm-pretrain':<29}PyTorchJob {NS}/llm-pretrain "
          "is failed because 3 Worker replica(s) failed.\n")
    (OUT / "kubectl_get_pods.txt").write_text(
        f"$ kubectl -n {NS} get pods -o wide\n"
        "NAME                    READY   STATUS    RESTARTS   AGE    IP           NODE\n"
        + "".join(f"{p:<24}{'0/1':<8}{'Error':<10}{'0':<11}{'112s':<7}{IPS[p]:<13}{n}\n" for p, n in NODES.items())
        + f"{'llm-pretrain-worker-3':<24}{'0/1':<8}{'Pending':<10}{'0':<11}{'112s':<7}{'<none>':<13}<none>\n")
    (OUT / "kubectl_describe_pod_llm-pretrain-worker-3.txt").write_text(f"""$ kubectl -n {NS} describe pod llm-pretrain-worker-3
Name:             llm-pretrain-worker-3
Namespace:        {NS}
Priority:         0
Service Account:  default
Node:             <none>
Labels:           training.kubeflow.org/job-name=llm-pretrain
                  training.kubeflow.org/replica-index=3
                  training.kubeflow.org/replica-type=worker
Annotations:      scheduling.k8s.io/group-name: llm-pretrain-7c1d
Status:           Pending
IP:
Controlled By:    PyTorchJob/llm-pretrain
Containers:
  pytorch:
    Image:      registry.example.internal/ml/llm-pretrain:2026.11.3
    Port:       29400/TCP
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
Conditions:
  Type           Status
  PodScheduled   False
QoS Class:       Guaranteed
Node-Selectors:  cloud.example/accelerator=a100
Tolerations:     nvidia.com/gpu:NoSchedule op=Exists
Events:
  Type     Reason            Age                 From     Message
  ----     ------            ----                ----     -------
  Warning  FailedScheduling  100s (x9 over 110s)  volcano  {FAIL}
""")
    src = json.loads((SRC / "expected_verdict.json").read_text())
    want = {"verdict": {"kind": "scheduling", "rank": None, "local_rank": None, "host": None,
                        "pod": "llm-pretrain-worker-3", "pid": None, "gpu": None,
                        "time": "2026-11-29T17:33:35.775Z",
                        "summary": "pod llm-pretrain-worker-3 could not be placed (no node with 2 free nvidia.com/gpu; "
                                   "Volcano: 1/4 tasks in gang unschedulable): workers 0-2 held 6 GPUs on 3 nodes "
                                   "while their torchrun agents waited in the rendezvous until the join timeout"},
            "stranded": {"pods_total": 4, "pods_running": 3, "gpus_idle": 6,
                         "nodes_holding_gpus": sorted(NODES.values()), "blocked": ["llm-pretrain-worker-3"]},
            "composed_from": {"bundle": "k8s_gpu_admission_rdzv", "script": "tools/capture/compose_stranded.py",
                              "scenario": src.get("composed_from", {}).get("scenario")}}
    (OUT / "expected_verdict.json").write_text(json.dumps(want, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
