"""GPU faults with the Xid table (queries/data/xid_catalog.csv: xid,name,meaning,action, when
present). The first Xid of a cascade (31 before 62/45) is the cause; the GPU is mapped to a
rank through NCCL's bus id when the store knows it."""

from __future__ import annotations

import csv
from functools import lru_cache

from ...resources import data_dir
from ..identity import world_comms
from ..util import has_columns, rows
from .base import Finding, query

# Xids that are consequences or application-level, not a hardware fault on their own.
APP_XIDS = {13, 31, 43, 45, 68}


@lru_cache(maxsize=1)
def xid_catalog() -> dict[int, dict]:
    try:
        p = data_dir("queries") / "data" / "xid_catalog.csv"
    except FileNotFoundError:
        return {}
    if not p.exists():
        return {}
    out = {}
    with p.open(newline="") as fh:
        for r in csv.DictReader(fh):
            try:
                out[int(r["xid"])] = r
            except (KeyError, ValueError):
                continue
    return out


def bus_key(pci: str | None) -> str | None:
    """A PCI address as NCCL prints it in 'busId %lx' (the address's hex digits, function included,
    leading zeros dropped): Xid's 'PCI:0000:48:00' and NVML's '0000:48:00.0' -> '48000'."""
    if not pci:
        return None
    p = pci.lower().removeprefix("pci:")
    if p.count(":") >= 2 and "." not in p:
        p += ".0"   # Xid lines omit the function
    return "".join(ch for ch in p if ch in "0123456789abcdef").lstrip("0") or "0"


def _bus_ranks(con) -> dict[str, set[tuple]]:
    """bus_key -> the (rank, host) pairs whose NCCL communicator ran on that PCI device."""
    if not has_columns(con, "nccl_comm", "bus_id", "rank") or not world_comms(con):
        return {}
    out: dict[str, set[tuple]] = {}
    # (a communicator's line says `nranks N`: the engine's column nranks, which the scan of the lines
    # filters on, so that the join reads those lines, not every line: tests/correlate/test_scan_summaries.py)
    for r in rows(con, "SELECT DISTINCT ltrim(lower(f.bus_id), '0') AS k, f.rank, e.host "
                       "FROM nccl_world f JOIN aligned_events e USING (event_id) WHERE e.nranks IS NOT NULL"):
        out.setdefault(r["k"], set()).add((r["rank"], r["host"]))
    return out


def _bus_rank(ranks: dict[str, set[tuple]], pci: str, host: str | None):
    """The one rank whose NCCL communicator ran on that PCI device (of that host)."""
    key = bus_key(pci)
    got = [rh for rh in ranks.get(key, ()) if host is None or rh[1] == host] if key else []
    return got[0][0] if len(got) == 1 else None


# xid.sql's reports (one per line) as one row per GPU (host, pci), in the order of its first report:
# that report's event_id, ats, xid and pid; first_n, its place among all reports (1: the bundle's
# first Xid); xids, every code the GPU reported. A store with millions of Xid lines gives the
# detector a few hundred rows.
PER_GPU = """
    SELECT host, pci, arg_min(event_id, n) AS event_id, arg_min(ats, n) AS ats, arg_min(xid, n) AS xid,
           arg_min(pid, n) AS pid, min(n) AS first_n, list(DISTINCT xid ORDER BY xid) AS xids
    FROM (SELECT *, row_number() OVER (ORDER BY ats NULLS LAST, file, line) AS n FROM {} r WHERE xid IS NOT NULL)
    GROUP BY host, pci
    ORDER BY first_n"""


def xid(con) -> list[Finding]:
    rs = query(con, "xid", around=PER_GPU)
    if not rs:
        return []
    cat = xid_catalog()
    ranks = _bus_ranks(con)
    out = []
    for r in rs:
        info = cat.get(r["xid"], {})
        name = info.get("name") or f"Xid {r['xid']}"
        later = [x for x in r["xids"] if x != r["xid"]]
        score = 0.85 if r["xid"] not in APP_XIDS else 0.6
        why = (f"NVIDIA Xid {r['xid']} ({name}) on GPU {r['pci']}" + (f" of {r['host']}" if r["host"] else "")
               + (f", followed by Xid {', '.join(map(str, later))}" if later else "")
               + (f"; {info['meaning']}" if info.get("meaning") else ""))
        out.append(Finding(detector="xid", kind="gpu_fault", score=score if r["first_n"] == 1 else score * 0.7,
                           why=why, host=r["host"], pid=r["pid"], gpu=r["pci"], rank=_bus_rank(ranks, r["pci"], r["host"]),
                           time=r["ats"], evidence=[r["event_id"]], direct=True,
                           extra={"xid": r["xid"], "xid_name": name, "action": info.get("action"),
                                  "meaning": info.get("meaning")}))
    return out
