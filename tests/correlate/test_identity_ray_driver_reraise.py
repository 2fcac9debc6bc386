"""A Ray driver's re-raise names the actor whose worker died: Ray Tune reports a trial's failure as TuneError
'Failure # {n} (occurred at {date})' followed by the trial's own error (ray/tune/experiment/trial.py handle_error, the
trial's error.txt), a report about another process like torchrun's ChildFailedError; the ActorDiedError / RayActorError
in it names the actor ('\\tpid: P', '\\tip: A', python/ray/exceptions.py) and the raylet's exit type, which Ray 1.x
wrote SYSTEM_ERROR_EXIT (2.x: SYSTEM_ERROR)."""

from __future__ import annotations

import pytest

from .fixtures import diagnose_files


def _driver(exit_type: str, tune: bool) -> str:
    head = "ray.tune.error.TuneError: Failure # 1 (occurred at 2022-06-01_23-01-46)\n" if tune else ""
    return head + (
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.8/site-packages/ray/tune/ray_trial_executor.py", line 934, in get_next_executor_event\n'
        "    future_result = ray.get(ready_future)\n"
        '  File "/opt/conda/lib/python3.8/site-packages/ray/worker.py", line 1845, in get\n'
        "    raise value\n"
        "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.\n"
        "\tclass_name: Trainer.as_trainable.<locals>.TrainTrainable\n"
        "\tactor_id: 9cf25e383ee3a96e65e6b6bf0c000000\n"
        "\tpid: 16544\n"
        "\tnamespace: 84ae81a0-cfab-4657-a648-f9d0cd76cd35\n"
        "\tip: 10.0.2.157\n"
        f"The actor is dead because its worker process has died. Worker exit type: {exit_type}\n")


@pytest.mark.parametrize("exit_type", ["SYSTEM_ERROR_EXIT", "SYSTEM_ERROR"])
@pytest.mark.parametrize("tune", [True, False])
def test_the_dead_actor_is_named_through_the_driver_s_reraise(tmp_path, monkeypatch, catalog, exit_type, tune):
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"driver.log": _driver(exit_type, tune)})["verdict"]
    assert (v["pid"], v["host"]) == (16544, "10.0.2.157"), v
    assert v["confidence"] < 0.8, v   # the raylet's death certificate gives no cause
