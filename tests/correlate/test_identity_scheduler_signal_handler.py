"""Two emitters that name whom a failure is about, each read from its own source:

- kube-scheduler's klog line when no node fits a pod (pkg/scheduler/schedule_one.go: logger.V(2).Info("Unable to
  schedule pod; no fit; waiting", "pod", klog.KObj(pod), "err", errMsg)): the FailedScheduling decision, about the pod
  its pod="<ns>/<name>" names (parsers/formats/kubelet_klog.toml's rule);
- the failure signal handlers of Google's C++ libraries (absl's '*** SIGSEGV (@...) received by PID P (TID T) on cpu N;
  stack trace: ***', glog's '*** SIGSEGV (@0x0) received by PID P (TID 0x..) from PID S; stack trace: ***'): the
  process that received the signal, a crash unless another process sent a SIGTERM (parsers/formats/cpp_stack.toml).
(XLA's coordination service naming a task that came back as a new process is an identity token of
parsers/identity.toml: its samples are its tests, tests/formats/test_identity_tokens.py.)"""

from __future__ import annotations

from .fixtures import diagnose_files


def test_the_scheduler_names_the_pod_it_could_not_place(tmp_path, monkeypatch, catalog):
    text = "\n".join([
        'I0214 22:40:03.118201       1 schedule_one.go:98] "Attempting to schedule pod" pod="vision/detr-train-worker-2"',
        'I0214 22:40:03.120447       1 schedule_one.go:1046] "Unable to schedule pod; no fit; waiting" '
        'pod="vision/detr-train-worker-2" err="0/6 nodes are available: 2 node(s) had untolerated taint '
        '{node-role.kubernetes.io/control-plane: }, 4 Insufficient nvidia.com/gpu. preemption: 0/6 nodes are available: '
        '2 Preemption is not helpful for scheduling, 4 No preemption victims found for incoming pod."',
        'I0214 22:40:03.120530       1 schedule_one.go:1119] "Updating pod condition" pod="vision/detr-train-worker-2" '
        'conditionType="PodScheduled" conditionStatus="False" conditionReason="Unschedulable"']) + "\n"
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"kube-scheduler.log": text})["verdict"]
    assert v["kind"] == "scheduling", v
    assert v["pod"] == "detr-train-worker-2", v


def test_the_process_a_failure_signal_handler_reports_is_named(tmp_path, monkeypatch, catalog):
    text = "\n".join([
        "I0603 11:02:44.515201 140233 train.py:212] step 4100 loss 2.318",
        "*** SIGSEGV (@0x0) received by PID 140233 (TID 0x7f8c2effd700) from PID 0; stack trace: ***",
        "PC: @     0x7f8d5a1c2e40 (unknown)",
        "    @     0x7f8d5a17b420 (unknown)"]) + "\n"
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"worker.log": text})["verdict"]
    assert v["kind"] == "crash", v
    assert v["pid"] == 140233, v


def test_a_sigterm_from_another_process_is_no_crash(tmp_path, monkeypatch, catalog):
    text = "\n".join([
        "2023-08-29 16:57:40.120301: I step 900",
        "*** SIGTERM received by PID 7636 (TID 7636) on cpu 6 from PID 7408; stack trace: ***",
        "PC: @     0x7fb77c0d246e  (unknown)  epoll_wait"]) + "\n"
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"worker.log": text})["verdict"]
    assert v["kind"] != "crash", v
