"""Ray's C++ components abort on a FATAL record, and vLLM's engine core relays Ray's lines behind its own prefix:

- src/ray/util/logging.h: a failed RAY_CHECK logs at FATAL ('[time C pid tid] (raylet) file.cc:N: ... Check failed:
  <condition> ') and the process aborts: the raylet (or GCS, or core worker) crashed, and the header's pid is the one
  that died (parsers/identity.toml ray_fatal_header, parsers/formats/ray.toml's rule);
- vllm/v1/engine/core.py decorate_logs: '(EngineCore_DP0 pid=P) ' before every line of the engine core process, which
  hosts the Ray driver, so Ray's worker and raylet lines arrive behind it with their own prefix inside: the inner
  prefix names the writer (parsers/envelopes/vllm_engine_prefix.toml, pid weak)."""

from __future__ import annotations

from .fixtures import diagnose_files

_CHECK = ("experimental_mutable_object_provider.cc:153:  An unexpected system state has occurred. You have likely "
          "discovered a bug in Ray. Please report this issue at https://github.com/ray-project/ray/issues and we'll work "
          "with you to fix it. Check failed: object_manager_->WriteAcquire(info.local_object_id, total_data_size) "
          "Status not OK: ChannelError: Channel closed. ")


def test_a_remote_raylets_failed_check_names_its_node_and_pid(tmp_path, monkeypatch, catalog):
    text = "\n".join([
        "(EngineCore_DP0 pid=7001) (RayWorkerWrapper pid=7302, ip=10.20.0.8) INFO 03-02 10:00:01 [gpu_model_runner.py:3480] "
        "Graph capturing finished in 20 secs",
        "(EngineCore_DP0 pid=7001) INFO 03-02 10:00:04 [core.py:210] init engine took 90.1 seconds",
        f"(EngineCore_DP0 pid=7001) (raylet, ip=10.20.0.8) [2026-03-02 10:05:00,100 C 6120 6120] (raylet) {_CHECK}",
        "(EngineCore_DP0 pid=7001) (raylet, ip=10.20.0.8) *** StackTrace Information ***",
        "(EngineCore_DP0 pid=7001) ERROR 03-02 10:05:01 [core.py:844] EngineCore encountered a fatal error.",
        "(APIServer pid=6990) ERROR 03-02 10:05:01 [async_llm.py:480] AsyncLLM output_handler failed."]) + "\n"
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"serve.log": text})["verdict"]
    assert v["kind"] == "crash", v
    assert v["host"] == "10.20.0.8", v
    assert v["pid"] == 6120, v


def test_the_driver_nodes_raylet_is_named_by_its_pid_not_the_engines(tmp_path, monkeypatch, catalog):
    text = "\n".join([
        "(EngineCore_DP0 pid=8100) INFO 03-02 11:00:00 [core.py:210] init engine took 70.0 seconds",
        f"(EngineCore_DP0 pid=8100) (raylet) [2026-03-02 11:04:00,500 C 7755 7755] (raylet) {_CHECK}",
        "(EngineCore_DP0 pid=8100) (raylet) *** StackTrace Information ***",
        "(APIServer pid=8042) INFO:     Shutting down"]) + "\n"
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"serve.log": text})["verdict"]
    assert v["kind"] == "crash", v
    assert v["pid"] == 7755, v


def test_a_ray_workers_own_prefix_names_it_behind_the_engine_core(tmp_path, monkeypatch, catalog):
    text = "\n".join([
        "(EngineCore_DP0 pid=9100) (RayWorkerWrapper pid=9411, ip=10.30.1.4) ERROR 03-02 12:00:00 [worker_base.py:620] "
        "Error executing method 'execute_model'. This might cause deadlock in distributed execution.",
        "(EngineCore_DP0 pid=9100) (RayWorkerWrapper pid=9411, ip=10.30.1.4) Traceback (most recent call last):",
        '(EngineCore_DP0 pid=9100) (RayWorkerWrapper pid=9411, ip=10.30.1.4)   File "/opt/vllm/worker/worker_base.py", '
        "line 612, in execute_method",
        "(EngineCore_DP0 pid=9100) (RayWorkerWrapper pid=9411, ip=10.30.1.4)     return run_method(self, method, args, kwargs)",
        "(EngineCore_DP0 pid=9100) (RayWorkerWrapper pid=9411, ip=10.30.1.4) torch.OutOfMemoryError: CUDA out of memory. "
        "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.02 GiB is free."]) + "\n"
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"serve.log": text})["verdict"]
    assert v["kind"] == "gpu_oom", v
    assert v["host"] == "10.30.1.4", v
    assert v["pid"] == 9411, v
