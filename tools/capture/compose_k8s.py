#!/usr/bin/env python3
"""Compose Kubernetes-shaped incident bundles from REAL torchrun captures.

Kubernetes cannot run on this machine, so these bundles are COMPOSED, not
captured: the training output (every torchrun agent / worker line, with its
original timestamps) is real, taken from a capture.py bundle; the Kubernetes
layer around it (CRI pod logs, `kubectl describe pod`, `kubectl get events`,
kubelet / kernel journald lines, a device-plugin log) is written by this
script in the shapes seen in real incidents (see the project's notes on real
log shapes: klog `I1129 16:38:01.812345    2211 file.go:123] msg`, journald
`Nov 29 16:38:01 host unit[pid]: ...`, CRI `<rfc3339nano> stdout F <line>`
under /var/log/pods/<ns>_<pod>_<uid>/<container>/0.log).

Edits to the captured text: simulated host names are replaced by pod names
(a pod's host name is its name) and the harness's run-dir paths by a
container path; nothing else. Each line goes to the CRI stream it would have
used (torchrun's --tee worker lines: stdout; agent logs and tracebacks:
stderr) and gets the CRI timestamp of its own logged time (the node's clock),
or of the line before it.
Where the capture recorded each line's arrival time (line_times.json, from
capture.py's pipe reader), that time, on the node's clock, is the CRI
timestamp: what containerd would have written.

    compose_k8s.py oomkilled   SRC_BUNDLE(tr_node_sigkill)        OUT
    compose_k8s.py admission   SRC_BUNDLE(tr_rdzv_missing_node)   OUT
    compose_k8s.py exception   SRC_BUNDLE(tr_exception)           OUT
"""
import datetime as dt
import hashlib
import json
import os
import re
import sys

NS = "ml-train"
JOB = "llm-pretrain"
CONTAINER = "pytorch"
IMAGE = "registry.example.internal/ml/llm-pretrain:2026.11.3"

PYLOG = re.compile(r"(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d),(\d{3}) ")
GLOG = re.compile(r"^[IWEF](\d\d)(\d\d) (\d\d:\d\d:\d\d)\.(\d{6})")
GLOG2 = re.compile(r"^\[[IWEF](\d\d)(\d\d) (\d\d:\d\d:\d\d)\.(\d{6})")


def uid(seed):
    h = hashlib.sha1(seed.encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"


def line_time(line, year):
    s = re.sub(r"^\[[A-Za-z_]+\d+\]:", "", line)
    m = PYLOG.search(s[:40])
    if m:
        return dt.datetime.strptime(f"{m.group(1)} {m.group(2)}.{m.group(3)}", "%Y-%m-%d %H:%M:%S.%f")
    m = GLOG.match(s) or GLOG2.match(s)
    if m:
        return dt.datetime.strptime(f"{year}-{m.group(1)}-{m.group(2)} {m.group(3)}.{m.group(4)}",
                                    "%Y-%m-%d %H:%M:%S.%f")
    return None


def cri(ts):
    return ts.strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"


def to_cri(text, year, start, arrivals=None, skew=0.0):
    """Agent log -> CRI lines. Returns (lines, first_ts, last_ts).

    With `arrivals` (the harness's per-line arrival times, true clock) each
    line gets the time it reached the pipe, on the node's (skewed) clock —
    what containerd stamps. Without them (older captures) a line gets its own
    logged time, or the line before it's time plus a few microseconds (which
    can put a traceback BEFORE the event that caused it: prefer arrivals)."""
    lines = text.split("\n")  # like the harness's readline: "\n" only
    if lines and lines[-1] == "":
        lines.pop()
    if arrivals is not None and len(arrivals) != len(lines):
        arrivals = None
    out, ts, first = [], start, None
    for i, line in enumerate(lines):
        t = line_time(line, year)
        if arrivals is not None:
            ts = max(ts, dt.datetime.utcfromtimestamp(arrivals[i] + skew))
        elif t is not None and t >= ts - dt.timedelta(seconds=2):
            ts = max(t, ts)
        else:
            ts = ts + dt.timedelta(microseconds=7)
        first = first or ts
        # with --tee the agent re-emits worker stdout AND stderr with the same
        # "[default<n>]:" prefix: the job's logging lines went to stdout,
        # everything else (c10d/gloo C++ logs, tracebacks, the agent) to stderr
        body = re.sub(r"^\[[A-Za-z_]+\d+\]:", "", line)
        stream = "stdout" if PYLOG.match(body) else "stderr"
        out.append(f"{cri(ts)} {stream} F {line}")
    return out, first, ts


def rfc1123(ts):
    return ts.strftime("%a, %d %b %Y %H:%M:%S +0000")


def journal(ts):
    return ts.strftime("%b %d %H:%M:%S")


def klog(ts, sev="I"):
    return f"{sev}{ts.strftime('%m%d %H:%M:%S.%f')}"


def age(now, then):
    s = int((now - then).total_seconds())
    return f"{s}s" if s < 120 else f"{s // 60}m{s % 60}s" if s < 600 else f"{s // 60}m"


def describe(pod, node, ip, ts_start, state_lines, conditions, events, gpus=2, status="Failed",
             reason=None, message=None):
    lines = [f"Name:             {pod}", f"Namespace:        {NS}", "Priority:         0",
             "Service Account:  default", f"Node:             {node}/{ip}" if node else "Node:             <none>",
             f"Start Time:       {rfc1123(ts_start)}",
             f"Labels:           training.kubeflow.org/job-name={JOB}",
             f"                  training.kubeflow.org/replica-index={pod.rsplit('-', 1)[1]}",
             "                  training.kubeflow.org/replica-type=worker",
             "Annotations:      <none>", f"Status:           {status}"]
    if reason:
        lines.append(f"Reason:           {reason}")
    if message:
        lines.append(f"Message:          {message}")
    lines += [f"IP:               {ip if node else ''}", f"Controlled By:    PyTorchJob/{JOB}",
              "Containers:", f"  {CONTAINER}:"]
    lines += ["    " + l for l in state_lines]
    lines += ["    Limits:", "      cpu:             16", "      memory:          64Gi",
              f"      nvidia.com/gpu:  {gpus}", "    Requests:", "      cpu:             16",
              "      memory:          64Gi", f"      nvidia.com/gpu:  {gpus}",
              "    Environment:", "      PET_NNODES:          4", "      PET_NPROC_PER_NODE:  2",
              f"      PET_RDZV_ENDPOINT:   {JOB}-worker-0:29400",
              "    Mounts:", "      /dev/shm from dshm (rw)",
              "Conditions:", "  Type              Status"]
    lines += [f"  {c:<17} {v}" for c, v in conditions]
    lines += ["QoS Class:                   Guaranteed",
              "Node-Selectors:              cloud.example/accelerator=a100",
              "Tolerations:                 nvidia.com/gpu:NoSchedule op=Exists",
              "Events:"]
    ev = [("Type", "Reason", "Age", "From", "Message"), ("----", "------", "----", "----", "-------")]
    return "\n".join(lines) + "\n" + table(ev + list(events), indent="  ", pad=2)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class Composer:
    def __init__(self, src, out, nodes):
        self.src, self.out = src, out
        self.truth = json.load(open(os.path.join(src, "truth.json")))
        self.hosts = self.truth["expected_hosts"]
        self.pods = {h: f"{JOB}-worker-{i}" for i, h in enumerate(self.hosts)}
        self.nodes = dict(zip(self.hosts, nodes))
        self.ips = {h: f"10.44.{i + 1}.{17 + 3 * i}" for i, h in enumerate(self.hosts)}
        self.year = self.truth["captured_at"][:4]
        lt = os.path.join(src, "line_times.json")
        self.arrivals = json.load(open(lt))["hosts"] if os.path.exists(lt) else {}
        os.makedirs(out, exist_ok=True)

    def rename(self, text):
        for h, p in self.pods.items():
            text = text.replace(h, p)
        return re.sub(r"/var/tmp/trainjobs/job-[0-9a-f]+", "/workspace/run", text)

    def pod_log(self, host, start):
        p = os.path.join(self.src, host + ".log")
        if not os.path.exists(p):
            return None, None, None
        lines, first, last = to_cri(self.rename(open(p, errors="replace").read()), self.year, start,
                                    self.arrivals.get(host), self.truth["clock_offsets_s"].get(host, 0.0))
        pod = self.pods[host]
        d = os.path.join(self.out, "var/log/pods", f"{NS}_{pod}_{uid(pod)}", CONTAINER)
        write(os.path.join(d, "0.log"), "\n".join(lines) + "\n")
        return first, last, lines

    def first_time(self):
        t0 = dt.datetime.strptime(self.truth["captured_at"], "%Y-%m-%dT%H:%M:%S.%fZ")
        return t0


def compose_oomkilled(src, out):
    """Whole pod OOM-killed (memory.oom.group: every process of the container
    gets SIGKILL at once): from tr_node_sigkill, where all processes of one
    node were SIGKILLed together."""
    c = Composer(src, out, ["gke-a100-pool-7f3k", "gke-a100-pool-9q2m", "gke-a100-pool-c81x",
                            "gke-a100-pool-t5wd"])
    victim = c.truth["host"]
    t_kill = dt.datetime.strptime(c.truth["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
    t0 = c.first_time()
    spans = {h: c.pod_log(h, t0) for h in c.hosts}
    vpod, vnode = c.pods[victim], c.nodes[victim]
    end = max(s[1] for s in spans.values() if s[1])
    now = end + dt.timedelta(seconds=95)  # when the kubectl commands ran
    pid = c.truth["killed_pids"][1] if c.truth.get("killed_pids") else 48213
    # describe the victim and one cascaded pod
    for h in c.hosts:
        pod, first, last = c.pods[h], spans[h][0], spans[h][1]
        if h == victim:
            st = ["Container ID:   containerd://" + hashlib.sha256(pod.encode()).hexdigest(),
                  f"Image:          {IMAGE}", "Image ID:       " + IMAGE.split(":")[0] + "@sha256:" +
                  hashlib.sha256(IMAGE.encode()).hexdigest(),
                  "Port:           29400/TCP", "State:          Terminated", "  Reason:       OOMKilled",
                  "  Exit Code:    137", f"  Started:      {rfc1123(first)}", f"  Finished:     {rfc1123(t_kill)}",
                  "Ready:          False", "Restart Count:  0"]
            ev = [("Normal", "Scheduled", age(now, t0), "default-scheduler",
                   f"Successfully assigned {NS}/{pod} to {c.nodes[h]}"),
                  ("Normal", "Pulled", age(now, t0), "kubelet", f'Container image "{IMAGE}" already present on machine'),
                  ("Normal", "Created", age(now, t0), "kubelet", f"Created container {CONTAINER}"),
                  ("Normal", "Started", age(now, first), "kubelet", f"Started container {CONTAINER}")]
            write(os.path.join(out, f"kubectl_describe_pod_{pod}.txt"),
                  f"$ kubectl -n {NS} describe pod {pod}\n" +
                  describe(pod, c.nodes[h], c.ips[h], t0, st,
                           [("Initialized", "True"), ("Ready", "False"), ("ContainersReady", "False"),
                            ("PodScheduled", "True")], ev))
    # kubectl get events (relative ages, as printed at collection time)
    rows = []
    for h in c.hosts:
        pod = c.pods[h]
        rows += [(t0, "Normal", "Scheduled", f"pod/{pod}", f"Successfully assigned {NS}/{pod} to {c.nodes[h]}"),
                 (t0 + dt.timedelta(seconds=1), "Normal", "Started", f"pod/{pod}", f"Started container {CONTAINER}")]
    rows += [(t_kill + dt.timedelta(milliseconds=40), "Warning", "OOMKilling", f"node/{vnode}",
              f"Memory cgroup out of memory: Killed process {pid} (python3.11) total-vm:71845332kB, "
              "anon-rss:66891204kB, file-rss:184236kB, shmem-rss:0kB, UID:0 pgtables:131840kB oom_score_adj:-997"),
             (end + dt.timedelta(seconds=2), "Warning", "PyTorchJobFailed", f"pytorchjob/{JOB}",
              f"PyTorchJob {NS}/{JOB} is failed because 1 Worker replica(s) failed.")]
    write(os.path.join(out, "kubectl_get_events.txt"), events_table(now, rows))
    # node journal: kernel OOM + kubelet PLEG
    kp = 2211
    j = [f"{journal(t_kill)} {vnode} kernel: python3.11 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=-997",
         f"{journal(t_kill)} {vnode} kernel: memory: usage 67108864kB, limit 67108864kB, failcnt 41",
         f"{journal(t_kill)} {vnode} kernel: Memory cgroup out of memory: Killed process {pid} (python3.11) total-vm:71845332kB, anon-rss:66891204kB, file-rss:184236kB, shmem-rss:0kB, UID:0 pgtables:131840kB oom_score_adj:-997",
         f"{journal(t_kill)} {vnode} kernel: oom_reaper: reaped process {pid} (python3.11), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
         f'{journal(t_kill)} {vnode} kubelet[{kp}]: {klog(t_kill + dt.timedelta(milliseconds=612))}    {kp} kubelet.go:2461] "SyncLoop (PLEG): event for pod" pod="{NS}/{vpod}" event={{"ID":"{uid(vpod)}","Type":"ContainerDied","Data":"{hashlib.sha256(vpod.encode()).hexdigest()}"}}',
         f'{journal(t_kill)} {vnode} kubelet[{kp}]: {klog(t_kill + dt.timedelta(milliseconds=640))}    {kp} kuberuntime_manager.go:1056] "computePodActions got for pod" podActions={{"KillPod":true,"CreateSandbox":false}} pod="{NS}/{vpod}"']
    write(os.path.join(out, f"journal/{vnode}.log"), "\n".join(j) + "\n")
    verdict = dict(kind="oom", rank=None, local_rank=None, host=vnode, pod=vpod, pid=None, gpu=None,
                   time=c.truth["time"],
                   summary=f"pod {vpod} (ranks {c.truth['nodes'][victim]}) on {vnode} was OOMKilled "
                           f"(exit 137): every process of the container got SIGKILL at once; the other "
                           f"pods then failed with gloo connection errors")
    return c, verdict


def table(rows, indent="", pad=3):
    """Columns padded like kubectl's tabwriter (last column unpadded)."""
    w = [max(len(r[i]) for r in rows) + pad for i in range(len(rows[0]) - 1)]
    return "".join(indent + "".join(c.ljust(w[i]) for i, c in enumerate(r[:-1])) + r[-1] + "\n" for r in rows)


def events_table(now, rows):
    rows = [("LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE")] + [
        (age(now, t), ty, r, o, m) for t, ty, r, o, m in sorted(rows)]
    return f"$ kubectl -n {NS} get events --sort-by=.lastTimestamp\n" + table(rows)


def compose_admission(src, out):
    """The 4th pod is rejected at admission (device plugin lost its
    registration while restarting: 0 GPUs allocatable); the 3 others wait in
    the c10d rendezvous and time out. From tr_rdzv_missing_node."""
    c = Composer(src, out, ["gke-a100-pool-2hs8", "gke-a100-pool-6vb0", "gke-a100-pool-kk31",
                            "gke-a100-pool-x9e4"])
    missing = c.truth["host"]
    t0 = c.first_time()
    spans = {h: c.pod_log(h, t0) for h in c.hosts if h != missing}
    end = max(s[1] for s in spans.values())
    now = end + dt.timedelta(seconds=70)  # when the kubectl commands ran
    mpod, mnode = c.pods[missing], c.nodes[missing]
    t_adm = t0 + dt.timedelta(milliseconds=850)
    kp = 1874
    # device plugin pod log on the node (CRI), restarting when the pod was admitted
    dp = "nvidia-device-plugin-daemonset-" + hashlib.sha1(mnode.encode()).hexdigest()[:5]
    tdp = t0 - dt.timedelta(seconds=3)
    dpl = [(tdp, "stderr", f"{klog(tdp)}       1 main.go:317] Stopping plugins."),
           (tdp + dt.timedelta(milliseconds=2), "stderr", f"{klog(tdp + dt.timedelta(milliseconds=2))}       1 server.go:185] Stopping to serve 'nvidia.com/gpu' on /var/lib/kubelet/device-plugins/nvidia-gpu.sock"),
           (tdp + dt.timedelta(milliseconds=9), "stderr", f"{klog(tdp + dt.timedelta(milliseconds=9))}       1 main.go:250] inotify: /var/lib/kubelet/device-plugins/kubelet.sock created, restarting."),
           (t0 + dt.timedelta(seconds=6), "stderr", f"{klog(t0 + dt.timedelta(seconds=6))}       1 main.go:275] Starting Plugins."),
           (t0 + dt.timedelta(seconds=6, milliseconds=4), "stderr", f"{klog(t0 + dt.timedelta(seconds=6, milliseconds=4))}       1 main.go:332] Loading configuration."),
           (t0 + dt.timedelta(seconds=7), "stderr", f"{klog(t0 + dt.timedelta(seconds=7))}       1 server.go:165] Starting GRPC server for 'nvidia.com/gpu'"),
           (t0 + dt.timedelta(seconds=7, milliseconds=30), "stderr", f"{klog(t0 + dt.timedelta(seconds=7, milliseconds=30))}       1 server.go:117] Starting to serve 'nvidia.com/gpu' on /var/lib/kubelet/device-plugins/nvidia-gpu.sock"),
           (t0 + dt.timedelta(seconds=7, milliseconds=41), "stderr", f"{klog(t0 + dt.timedelta(seconds=7, milliseconds=41))}       1 server.go:125] Registered device plugin for 'nvidia.com/gpu' with Kubelet")]
    write(os.path.join(out, "var/log/pods", f"kube-system_{dp}_{uid(dp)}", "nvidia-device-plugin-ctr", "0.log"),
          "\n".join(f"{cri(t)} {s} F {l}" for t, s, l in dpl) + "\n")
    msg = ("Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. "
           "Requested: 2, Available: 0, which is unexpected")
    j = [f'{journal(t_adm)} {mnode} kubelet[{kp}]: {klog(t_adm, "E")}    {kp} manager.go:560] "Failed to allocate device plugin resource for pod" err="requested number of devices unavailable for nvidia.com/gpu. Requested: 2, Available: 0" pod="{NS}/{mpod}" containerName="{CONTAINER}"',
         f'{journal(t_adm)} {mnode} kubelet[{kp}]: {klog(t_adm + dt.timedelta(microseconds=1400))}    {kp} event.go:294] "Event occurred" object="{NS}/{mpod}" kind="Pod" apiVersion="v1" type="Warning" reason="UnexpectedAdmissionError" message="{msg}"',
         f'{journal(t_adm)} {mnode} kubelet[{kp}]: {klog(t_adm + dt.timedelta(microseconds=2900))}    {kp} kubelet.go:2171] "SyncLoop (PLEG): event for pod" pod="{NS}/{mpod}" event=&{{ID:{uid(mpod)} Type:ContainerDied Data:<none>}}']
    write(os.path.join(out, f"journal/{mnode}.log"), "\n".join(j) + "\n")
    write(os.path.join(out, f"kubectl_describe_pod_{mpod}.txt"),
          f"$ kubectl -n {NS} describe pod {mpod}\n" +
          describe(mpod, mnode, c.ips[missing], t0,
                   ["Image:          " + IMAGE, "Port:           29400/TCP", "State:          Waiting",
                    "  Reason:       ContainerCreating",
                    "Ready:          False", "Restart Count:  0"],
                   [("PodScheduled", "True")],
                   [("Normal", "Scheduled", age(now, t0), "default-scheduler",
                     f"Successfully assigned {NS}/{mpod} to {mnode}"),
                    ("Warning", "UnexpectedAdmissionError", age(now, t_adm), "kubelet", msg)],
                   status="Failed", reason="UnexpectedAdmissionError", message=f"Pod {msg}"))
    rows = []
    for h in c.hosts:
        pod = c.pods[h]
        rows.append((t0, "Normal", "Scheduled", f"pod/{pod}", f"Successfully assigned {NS}/{pod} to {c.nodes[h]}"))
        if h != missing:
            rows.append((t0 + dt.timedelta(seconds=1), "Normal", "Started", f"pod/{pod}", f"Started container {CONTAINER}"))
    rows += [(t_adm, "Warning", "UnexpectedAdmissionError", f"pod/{mpod}", msg),
             (end + dt.timedelta(seconds=2), "Warning", "PyTorchJobFailed", f"pytorchjob/{JOB}",
              f"PyTorchJob {NS}/{JOB} is failed because 4 Worker replica(s) failed.")]
    write(os.path.join(out, "kubectl_get_events.txt"), events_table(now, rows))
    verdict = dict(kind="scheduling", rank=None, local_rank=None, host=mnode, pod=mpod, pid=None, gpu=None,
                   time=t_adm.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
                   summary=f"pod {mpod} was rejected by the kubelet on {mnode} (UnexpectedAdmissionError: "
                           f"0 of 2 nvidia.com/gpu allocatable while the device plugin restarted), so the "
                           f"job never assembled: the 3 other pods timed out in the c10d rendezvous")
    return c, verdict


def compose_exception(src, out):
    """Rank raises in one pod; CRI logs keep each node's clock (one node is
    skewed in the source capture). From tr_exception."""
    c = Composer(src, out, ["aks-gpu-31215847-vmss000000", "aks-gpu-31215847-vmss000001",
                            "aks-gpu-31215847-vmss000002", "aks-gpu-31215847-vmss000003"])
    t0 = c.first_time()
    spans = {}
    for h in c.hosts:
        off = dt.timedelta(seconds=c.truth["clock_offsets_s"].get(h, 0.0))
        spans[h] = c.pod_log(h, t0 + off)
    end = max(s[1] for s in spans.values())
    now = end + dt.timedelta(seconds=40)  # when the kubectl commands ran
    culprit = c.truth["host"]
    cpod = c.pods[culprit]
    t_fail = dt.datetime.strptime(c.truth["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
    for h in (culprit,):
        first, last = spans[h][0], spans[h][1]
        st = ["Container ID:   containerd://" + hashlib.sha256(cpod.encode()).hexdigest(),
              f"Image:          {IMAGE}", "Port:           29400/TCP", "State:          Terminated",
              "  Reason:       Error", "  Exit Code:    1", f"  Started:      {rfc1123(first)}",
              f"  Finished:     {rfc1123(last)}", "Ready:          False", "Restart Count:  0"]
        write(os.path.join(out, f"kubectl_describe_pod_{cpod}.txt"),
              f"$ kubectl -n {NS} describe pod {cpod}\n" +
              describe(cpod, c.nodes[h], c.ips[h], t0, st,
                       [("Initialized", "True"), ("Ready", "False"), ("ContainersReady", "False"),
                        ("PodScheduled", "True")],
                       [("Normal", "Scheduled", age(now, t0), "default-scheduler",
                         f"Successfully assigned {NS}/{cpod} to {c.nodes[h]}"),
                        ("Normal", "Started", age(now, first), "kubelet", f"Started container {CONTAINER}")]))
    rows = []
    for h in c.hosts:
        pod = c.pods[h]
        rows.append((t0, "Normal", "Scheduled", f"pod/{pod}", f"Successfully assigned {NS}/{pod} to {c.nodes[h]}"))
        rows.append((t0 + dt.timedelta(seconds=1), "Normal", "Started", f"pod/{pod}", f"Started container {CONTAINER}"))
    rows.append((end + dt.timedelta(seconds=2), "Warning", "PyTorchJobFailed", f"pytorchjob/{JOB}",
                 f"PyTorchJob {NS}/{JOB} is failed because 4 Worker replica(s) failed."))
    write(os.path.join(out, "kubectl_get_events.txt"), events_table(now, rows))
    write(os.path.join(out, "kubectl_get_pods.txt"),
          f"$ kubectl -n {NS} get pods -o wide\n" +
          table([("NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE")] +
                [(c.pods[h], "0/1", "Error", "0", age(now, t0), c.ips[h], c.nodes[h]) for h in c.hosts]))
    verdict = dict(kind="exception", rank=c.truth["rank"], local_rank=c.truth["local_rank"],
                   host=c.nodes[culprit], pod=cpod, pid=c.truth["pid"], gpu=None, time=c.truth["time"],
                   summary=f"rank {c.truth['rank']} in pod {cpod} raised RuntimeError (corrupted input "
                           f"batch at step 10); the other pods then failed in the all_reduce")
    return c, verdict


def main(argv):
    kind, src, out = argv
    fn = {"oomkilled": compose_oomkilled, "admission": compose_admission, "exception": compose_exception}[kind]
    c, verdict = fn(src, out)
    ev = {"verdict": verdict}
    offs = c.truth["clock_offsets_s"]
    if any(offs.values()):
        ev["clock"] = [{"host": c.nodes[h], "offset_s": offs[h], "uncertainty_s": 0.0,
                        "basis": "true offset injected by the capture harness (libfaketime) on the source "
                                 "capture; CRI timestamps follow the node's clock"}
                       for h in c.hosts if h in c.truth["nodes"] and c.truth["nodes"][h]]
    ev["composed_from"] = {"scenario": c.truth["scenario"], "captured_at": c.truth["captured_at"],
                           "pods": {c.pods[h]: {"node": c.nodes[h], "ranks": c.truth["nodes"].get(h, []),
                                                "source_host": h} for h in c.hosts}}
    with open(os.path.join(out, "expected_verdict.json"), "w") as f:
        json.dump(ev, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
