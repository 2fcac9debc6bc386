"""loguru's Logger.catch writes one record: its header line names the process that caught the exception ("An error
has been caught in function 'f', process 'MainProcess' (P), thread ..."), and the traceback it caught follows as the
record's continuation. The verdict takes the traceback (its exception line says what broke): the header's pid names the
writer of the whole record, so it is carried over the stream (parsers/identity.toml loguru_catch_process, stream)."""

from __future__ import annotations

from .fixtures import diagnose_files


def test_the_catching_process_is_named_on_the_traceback_it_caught(tmp_path, monkeypatch, catalog):
    text = "\n".join([
        "2024-03-02 11:20:05.100 | INFO     | __main__:train:70 - epoch 3 step 1200 loss 1.92",
        "2024-03-02 11:20:07.512 | ERROR    | __main__:main:88 - An error has been caught in function 'main', "
        "process 'MainProcess' (48213), thread 'MainThread' (140122917365568):",
        "Traceback (most recent call last):",
        "",
        '  File "/srv/job/train.py", line 92, in <module>',
        "    main()",
        "    └ <function main at 0x7f3e2c1d9a60>",
        "",
        '> File "/srv/job/train.py", line 85, in main',
        "    loss.backward()",
        "    │    └ <method 'backward' of 'torch._C.TensorBase' objects>",
        "    └ tensor(1.9201, device='cuda:0', grad_fn=<NllLossBackward0>)",
        "",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacity of "
        "39.39 GiB of which 1.10 GiB is free."]) + "\n"
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"train.log": text})["verdict"]
    assert v["kind"] == "gpu_oom", v
    assert v["pid"] == 48213, v
