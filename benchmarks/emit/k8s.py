"""Kubernetes: the CRI pod-log line, kubelet journal lines, `kubectl describe pod` / `get events` / `get pods`.

Sources: the CRI log format ('<RFC3339Nano> <stream> <P|F> <text>', kubernetes/cri-api, written by
containerd); kubelet klog lines as journald shows them ('Nov 29 17:30:49 <node> kubelet[2211]: I1129 ...
kubelet.go:2461] "SyncLoop (PLEG): event for pod" ... "ContainerDied"', pod_workers.go 'Error syncing
pod, skipping' with 'CrashLoopBackOff: "back-off 10s restarting failed container=..."', the event reason
'BackOff' 'Back-off restarting failed container <c> in pod <pod>_<ns>(<uid>)': kubernetes/kubernetes
pkg/kubelet/kuberuntime/kuberuntime_manager.go, pkg/kubelet/pod_workers.go; NodeNotReady from
pkg/controller/nodelifecycle), as in sample_logs/k8s_gang_partial_restart and k8s_oomkilled_pod;
kubeflow/training-operator event 'PyTorchJob %s is restarting because %d %s replica(s) failed.';
kubectl describe's layout (kubernetes/kubectl pkg/describe/describe.go: 'Restart Count:', 'Last State:
Terminated', 'Reason:', 'Exit Code:').
"""

from __future__ import annotations

import datetime as dt
import json

from . import timefmt


def cri(t: dt.datetime, text: str, stream: str = "stderr") -> str:
    return f"{timefmt.rfc3339_nano(t)} {stream} F {text}"


def journal(t: dt.datetime, node: str, program: str, pid: int | None, text: str) -> str:
    p = f"{program}[{pid}]" if pid is not None else program
    return f"{timefmt.syslog(t)} {node} {p}: {text}"


def kubelet(t: dt.datetime, node: str, kpid: int, level: str, src: str, msg: str) -> str:
    return journal(t, node, "kubelet", kpid, f"{timefmt.klog(level, t)}    {kpid} {src}] {msg}")


def pleg(t, node, kpid, ns, pod, uid, typ, cid) -> str:
    ev = json.dumps({"ID": uid, "Type": typ, "Data": cid}, separators=(",", ":"))
    return kubelet(t, node, kpid, "I", "kubelet.go:2461",
                   f'"SyncLoop (PLEG): event for pod" pod="{ns}/{pod}" event={ev}')


def backoff(t, node, kpid, ns, pod, uid, container, secs) -> str:
    return kubelet(t, node, kpid, "E", "pod_workers.go:1301",
                   f'"Error syncing pod, skipping" err="failed to \\"StartContainer\\" for \\"{container}\\" with '
                   f'CrashLoopBackOff: \\"back-off {secs}s restarting failed container={container} '
                   f'pod={pod}_{ns}({uid})\\"" pod="{ns}/{pod}" podUID="{uid}"')


def describe_pod(pod: str, ns: str, node: str, ip: str, start: dt.datetime, cid: str, image: str, state: dict,
                 last: dict | None, restarts: int, gpus: int, nnodes: int, events: list[tuple]) -> list[str]:
    """`kubectl describe pod`: state/last are dicts with keys state ('Running'/'Terminated'), reason, exit,
    started, finished (datetimes in the API server's clock)."""
    out = [f"$ kubectl -n {ns} describe pod {pod}", f"Name:             {pod}", f"Namespace:        {ns}",
           "Priority:         0", "Service Account:  default", f"Node:             {node}/{ip}",
           f"Start Time:       {timefmt.rfc1123z(start)}",
           f"Labels:           training.kubeflow.org/job-name={pod.rsplit('-worker-', 1)[0]}",
           f"                  training.kubeflow.org/replica-index={pod.rsplit('-', 1)[1]}",
           "                  training.kubeflow.org/replica-type=worker", "Annotations:      <none>",
           f"Status:           {'Running' if state['state'] == 'Running' else 'Failed'}", f"IP:               {ip}",
           f"Controlled By:    PyTorchJob/{pod.rsplit('-worker-', 1)[0]}", "Containers:", "  pytorch:",
           f"    Container ID:   containerd://{cid}", f"    Image:          {image}", "    Port:           29400/TCP"]

    def block(title, s):
        lines = [f"    {title}{s['state']}"]
        if s["state"] == "Terminated":
            lines += [f"      Reason:       {s['reason']}", f"      Exit Code:    {s['exit']}",
                      f"      Started:      {timefmt.rfc1123z(s['started'])}",
                      f"      Finished:     {timefmt.rfc1123z(s['finished'])}"]
        else:
            lines.append(f"      Started:      {timefmt.rfc1123z(s['started'])}")
        return lines
    out += block("State:          ", state)
    if last:
        out += block("Last State:     ", last)
    out += [f"    Ready:          {'True' if state['state'] == 'Running' else 'False'}",
            f"    Restart Count:  {restarts}", "    Limits:", "      cpu:             16",
            "      memory:          256Gi", f"      nvidia.com/gpu:  {gpus}", "    Environment:",
            f"      PET_NNODES:          {nnodes}", f"      PET_NPROC_PER_NODE:  {gpus}", "Events:",
            "  Type     Reason     Age                  From               Message",
            "  ----     ------     ----                 ----               -------"]
    for typ, reason, age, frm, msg in events:
        out.append(f"  {typ:<8} {reason:<10} {age:<20} {frm:<18} {msg}")
    return out


def age(d: dt.timedelta) -> str:
    s = int(d.total_seconds())
    if s < 120:
        return f"{s}s"
    if s < 3 * 3600:
        return f"{s // 60}m"
    if s < 48 * 3600:
        return f"{s // 3600}h{(s % 3600) // 60}m" if s < 8 * 3600 else f"{s // 3600}h"
    return f"{s // 86400}d"


def get_events(ns: str, rows: list[tuple]) -> list[str]:
    """rows: (last_seen_age, type, reason, object, message), already sorted by time."""
    out = [f"$ kubectl -n {ns} get events --sort-by=.lastTimestamp",
           "LAST SEEN   TYPE      REASON                 OBJECT                      MESSAGE"]
    out += [f"{a:<11} {typ:<9} {reason:<22} {obj:<27} {msg}" for a, typ, reason, obj, msg in rows]
    return out


def get_pods(ns: str, rows: list[tuple]) -> list[str]:
    """rows: (name, ready, status, restarts, age, ip, node)."""
    out = [f"$ kubectl -n {ns} get pods -o wide",
           "NAME                    READY   STATUS    RESTARTS      AGE     IP           NODE"]
    out += [f"{n:<23} {r:<7} {s:<9} {rs:<13} {a:<7} {ip:<12} {node}" for n, r, s, rs, a, ip, node in rows]
    return out
