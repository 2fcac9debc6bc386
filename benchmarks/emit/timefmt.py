"""Time layouts as the emitters print them. Every function takes a naive datetime meaning the host's own
clock (UTC, skew already added) and returns the text of the time, nothing else.

Sources: CPython Lib/logging/__init__.py (asctime '%Y-%m-%d %H:%M:%S,mmm'); torch's glog-style Python
header (torch/distributed/elastic/utils/logging.py, 'I1129 17:31:17.660000', zero-padded month, as in
sample_logs/*/ agent logs); c10's C++ glog header (c10/util/Logging.cpp, '[E724 15:57:08.906457629',
month NOT padded, nanoseconds: shared/real_log_shapes 020, 108); util-linux dmesg -T ('[Sun Nov 29
17:31:17 2026]'); journald short ('Nov 29 17:31:17'); Slurm log_fmt ISO8601_MS ('[2026-11-29T16:42:26.906]');
klog ('I1129 17:30:49.102000    2211 kubelet.go:2461]'); the CRI log format (RFC 3339 nano, 'Z');
kubectl describe (RFC 1123Z, 'Sun, 29 Nov 2026 17:30:59 +0000').
"""

from __future__ import annotations

import datetime as dt


_SECOND: list = [None, ""]       # the last second formatted (large runs format millions of times per second)


def _second(t: dt.datetime) -> str:
    key = t.replace(microsecond=0)
    if _SECOND[0] != key:
        _SECOND[0], _SECOND[1] = key, t.strftime("%Y-%m-%d %H:%M:%S")
    return _SECOND[1]


def py(t: dt.datetime) -> str:
    """Python logging %(asctime)s."""
    return f"{_second(t)},{t.microsecond // 1000:03d}"


def py_mdy(t: dt.datetime) -> str:
    """datefmt '%m/%d/%Y %H:%M:%S' (HF transformers example scripts)."""
    return t.strftime("%m/%d/%Y %H:%M:%S")


def torch_py_glog(level: str, t: dt.datetime) -> str:
    """The level+time of torch's Python glog-style header: 'I1129 17:31:17.660000' (zero-padded month;
    milliseconds written as microseconds, as logging's msecs are)."""
    return f"{level}{t.strftime('%m%d %H:%M:%S')}.{t.microsecond // 1000:03d}000"


def c10(level: str, t: dt.datetime) -> str:
    """The level+time of c10's C++ glog header, without the brackets: 'E724 15:57:08.906457629' (month not
    padded; the last three digits of the nanoseconds drawn from the microseconds)."""
    return f"{level}{t.month}{t.strftime('%d %H:%M:%S')}.{t.microsecond:06d}{(t.microsecond * 7) % 1000:03d}"


def c10_padded_zero_ns(level: str, t: dt.datetime) -> str:
    """gen_noisy.py's c10 header: zero-padded month, nanoseconds ending in 000 (kept so that its output does
    not change; its runs are in March)."""
    return f"{level}{t.strftime('%m%d %H:%M:%S')}.{t.microsecond:06d}000"


def ctime(t: dt.datetime) -> str:
    """dmesg -T / ctime(3): 'Sun Nov 29 17:31:17 2026' (day padded with a space)."""
    return t.strftime("%a %b ") + f"{t.day:2d}" + t.strftime(" %H:%M:%S %Y")


def syslog(t: dt.datetime) -> str:
    """journalctl -o short / syslog: 'Nov 29 17:31:17' (day padded with a space)."""
    return t.strftime("%b ") + f"{t.day:2d}" + t.strftime(" %H:%M:%S")


def slurm(t: dt.datetime) -> str:
    """Slurm daemon logs (log_fmt=iso8601_ms): '2026-11-29T16:42:26.906'."""
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}"


def slurm_s(t: dt.datetime) -> str:
    """Slurm's seconds resolution inside messages: '2026-11-29T16:42:26'."""
    return t.strftime("%Y-%m-%dT%H:%M:%S")


def klog(level: str, t: dt.datetime) -> str:
    """klog header level+time: 'I1129 17:30:49.102000'."""
    return f"{level}{t.strftime('%m%d %H:%M:%S')}.{t.microsecond:06d}"


def rfc3339_nano(t: dt.datetime) -> str:
    """The CRI log file time (containerd writes RFC 3339 with nanoseconds, UTC 'Z')."""
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond:06d}{(t.microsecond * 3) % 1000:03d}Z"


def rfc1123z(t: dt.datetime) -> str:
    """kubectl describe's absolute times: 'Sun, 29 Nov 2026 17:30:59 +0000'."""
    return t.strftime("%a, %d %b %Y %H:%M:%S +0000")


def bracket_ms(t: dt.datetime) -> str:
    """DeepSpeed's logger: '2026-11-29 17:31:17,123' (put in brackets by the caller)."""
    return py(t)


def iso_us(t: dt.datetime) -> str:
    """datetime.now().strftime('%Y-%m-%d %H:%M:%S.%f') (Megatron-LM's iteration and checkpoint lines)."""
    return t.strftime("%Y-%m-%d %H:%M:%S.%f")


def torchrun_failure_time(t: dt.datetime) -> str:
    """The 'time' field of torchrun's failure summary: '2026-11-29_17:32:10'."""
    return t.strftime("%Y-%m-%d_%H:%M:%S")


def z(t: dt.datetime) -> str:
    """ISO 8601 UTC with milliseconds, for truth.json."""
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"
