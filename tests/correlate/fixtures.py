"""Tiny event tables for correlator tests: an in-memory store with the real schema."""

from __future__ import annotations

import atexit
import datetime as dt
import itertools
import shutil
import tempfile

import duckdb

from ranktrace.correlate.util import ensure_kind_catalog
from ranktrace.store import fill_line_facts, init_schema, insert_events
from ranktrace.store import connect as store_connect

T0 = dt.datetime(2026, 3, 2, 3, 0, 0)
ROLE = {"progress": "info", "python_exception": "cause", "host_oom": "cause", "gpu_oom": "cause",
        "gpu_xid": "cause", "cuda_error": "cause", "crash_signal": "cause", "killed_signal": "cause",
        "collective_timeout": "symptom", "peer_closed": "symptom", "store_error": "symptom",
        "worker_failed": "symptom", "failure_summary": "symptom", "sigterm_sent": "symptom",
        "rdzv_timeout": "cause", "rdzv_complete": "lifecycle", "node_failure": "cause", "time_limit": "cause",
        "cancelled": "cause", "task_exit": "lifecycle", "network_error": "cause", "desync": "cause",
        "hang_report": "cause", "watchdog_abort": "symptom", None: "info"}
_ids = itertools.count(1)
_file_ids: dict[str, int] = {}   # one id per file name, as a store numbers its files


def ev(t: float | None, message: str, *, kind=None, host=None, rank=None, local_rank=None, pid=None,
       file=None, line=None, role=None, severity=None, ts_kind=None, raw=None, **kw) -> dict:
    """One event; t = seconds after T0 (None: no time)."""
    n = next(_ids)
    file = file or f"{host or 'job'}.log"
    return dict(event_id=n, file_id=_file_ids.setdefault(file, len(_file_ids) + 1), file=file, line=line or n,
                end_line=line or n,
                ts=None if t is None else T0 + dt.timedelta(seconds=t),
                ts_kind=ts_kind or ("none" if t is None else "exact"), format="test",
                host=host, rank=rank, local_rank=local_rank, pid=pid,
                severity=severity or ("error" if ROLE.get(kind) in ("cause", "symptom") else "info"),
                kind=kind, role=role or ROLE.get(kind, "info"), message=message, raw=raw or message, **kw)


def store(events: list[dict], facts: dict[str, list[dict]] | None = None,
          path: str | None = None) -> duckdb.DuckDBPyConnection:
    """A store of `events` at `path` (a store's directory; None: a temporary one)."""
    if path is None:
        path = tempfile.mkdtemp(prefix="rt-fixture-")
        atexit.register(shutil.rmtree, path, True)
    con = store_connect(path, read_only=False)
    con.execute("SET TimeZone = 'UTC'")
    init_schema(con, None)
    cols = [r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                      "WHERE table_name = 'events' ORDER BY ordinal_position").fetchall()]
    con.execute("CREATE TEMP TABLE given_events AS SELECT * FROM events LIMIT 0")
    if events:
        con.executemany(f"INSERT INTO given_events VALUES ({', '.join('?' * len(cols))})",
                        [[e.get(c) for c in cols] for e in events])
    insert_events(con, "given_events")
    con.execute("DROP TABLE given_events")
    for table, rs in (facts or {}).items():
        keys = list(rs[0])
        con.execute(f'CREATE TABLE "{table}" ({", ".join(f"{k} {_t(rs[0][k])}" for k in keys)})')
        for r in rs:
            con.execute(f'INSERT INTO "{table}" VALUES ({", ".join("?" * len(keys))})', [r[k] for k in keys])
    fill_line_facts(con)   # (the line's columns the engine writes beside such facts)
    ensure_kind_catalog(con)
    return con


def _t(v) -> str:
    return "BIGINT" if isinstance(v, int) else "DOUBLE" if isinstance(v, float) else "VARCHAR"


def steps(hosts_ranks: dict[str, list[int]], n: int, step_time: float = 0.5, skew: dict | None = None,
          start: float = 0.0, stop_at: dict | None = None) -> list[dict]:
    """Progress lines of a synchronous loop: step k on every rank at start + k*step_time
    (+ the host's clock skew). stop_at: rank -> last step it logs."""
    out = []
    skew = skew or {}
    stop_at = stop_at or {}
    for k in range(1, n + 1):
        for h, ranks in sorted(hosts_ranks.items()):
            for r in ranks:
                if k > stop_at.get(r, n):
                    continue
                t = start + k * step_time + skew.get(h, 0.0) + 0.003 * (r % 3)
                out.append(ev(t, f"[rank{r}] step {k} loss 0.5 step_time {step_time}s", kind="progress",
                              host=h, rank=r, file=f"{h}.log"))
    return out


def bundle_store(tmp_path, monkeypatch, catalog, files: dict[str, str]):
    """A bundle of `files` (relative path -> text) ingested as a user would (from its parent directory) into a
    store under tmp_path: a read-only connection to it (the caller closes it)."""
    from pathlib import Path

    from ranktrace.ingest.pipeline import ingest
    from ranktrace.store import open_readonly
    tmp_path.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(tmp_path)
    for rel, text in files.items():
        p = tmp_path / "bundle" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    ingest([str(Path("bundle"))], str(tmp_path / "s.duckdb"), catalog)
    return open_readonly(str(tmp_path / "s.duckdb"))


def diagnose_files(tmp_path, monkeypatch, catalog, files: dict[str, str]) -> dict:
    """The diagnosis of a bundle of `files` (bundle_store)."""
    from ranktrace.correlate import diagnose
    con = bundle_store(tmp_path, monkeypatch, catalog, files)
    try:
        return diagnose(con)
    finally:
        con.close()



def generated_run(out, story: str, seed: int, layout: str, catalog, *, read_only: bool = True, dirname: str = "run",
                  drop: str | None = None, **kw):
    """A run of benchmarks/gen_longrun.py written under `out` in directory `dirname` (`kw`: its other arguments,
    as `mechanism`) and ingested beside it, without its truth.json (nor the files whose path holds `drop`: a
    node's logs nobody collected): (its truth, a connection to its store; the caller closes it)."""
    import sys
    from pathlib import Path

    from ranktrace.ingest.pipeline import ingest
    bench = Path(__file__).resolve().parents[2] / "benchmarks"
    sys.path.insert(0, str(bench))
    try:
        import gen_longrun
    finally:
        sys.path.remove(str(bench))
    run = Path(out) / dirname
    truth = gen_longrun.generate(run, story, seed, layout=layout, **kw)
    (run / "truth.json").unlink()   # the answer never reaches the store
    for f in sorted(run.rglob("*")) if drop else ():
        if f.is_file() and drop in str(f.relative_to(run)):
            f.unlink()
    ingest([str(run)], str(Path(out) / "db"), catalog)
    return truth, store_connect(str(Path(out) / "db"), read_only=read_only)


def generated_diagnosis(out, story: str, seed: int, layout: str, catalog, **kw) -> tuple[dict, dict]:
    """A generated run diagnosed: (its truth, the diagnosis)."""
    from ranktrace.correlate import diagnose
    truth, con = generated_run(out, story, seed, layout, catalog, **kw)
    try:
        return truth, diagnose(con)
    finally:
        con.close()


def generated_attempts(out, story: str, seed: int, layout: str, catalog, **kw) -> tuple[list[dict], list[dict]]:
    """A generated run diagnosed: (its truth's attempts, the attempts the diagnosis found)."""
    truth, doc = generated_diagnosis(out, story, seed, layout, catalog, **kw)
    return truth["attempts"], doc["attempts"]


def who(verdict: dict, *fields: str) -> tuple:
    """A verdict's (kind, host) or the fields asked for: what a generated-run test compares."""
    return tuple(verdict[f] for f in (fields or ("kind", "host")))
