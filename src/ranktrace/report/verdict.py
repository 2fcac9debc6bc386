"""Where the report gets its verdict: `ranktrace.correlate.diagnose`.

The report never decides who failed; it presents what diagnose decided
(design.md section 4, verdict JSON). This module is the one place that
imports the correlate package, so the report and the exports can be built
and tested against the contract with a verdict dict made by hand.
"""

from __future__ import annotations

import importlib


class VerdictUnavailable(RuntimeError):
    """The correlate package (diagnose) is not installed or not importable."""


def _diagnose_fn():
    try:
        mod = importlib.import_module("ranktrace.correlate")
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("ranktrace.correlate"):
            raise VerdictUnavailable(
                "ranktrace.correlate is not available in this installation; the report needs "
                "diagnose() for its verdict") from exc
        raise
    fn = getattr(mod, "diagnose", None)
    if fn is None:
        raise VerdictUnavailable("ranktrace.correlate has no diagnose() yet")
    return fn


def have_diagnose() -> bool:
    try:
        _diagnose_fn()
        return True
    except VerdictUnavailable:
        return False


def get_verdict(con, offsets: dict[str, float] | None = None) -> dict:
    """The verdict document for the store behind `con` (read-only is fine)."""
    fn = _diagnose_fn()
    v = fn(con, offsets=offsets or None)
    if not isinstance(v, dict) or "verdict" not in v:
        raise RuntimeError("diagnose() returned something that is not a verdict document")
    return fold_echoes(con, v)


def fold_echoes(con, doc: dict) -> dict:
    """The verdict with evidence and cascade entries that cite an echo (a
    --tee copy of a line, table `echoes`) moved to the copy kept, from the most
    specific file, and entries then citing the same line listed once. A new
    document; the detection is unchanged. Stores without `echoes`: as it is."""
    try:
        has = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'echoes'").fetchone()[0]
    except Exception:
        return doc
    if not has:
        return doc
    cited = [(str(x["file"]), int(x["line"])) for sec in ("evidence", "cascade") for x in doc.get(sec) or []
             if isinstance(x, dict) and x.get("file") and isinstance(x.get("line"), int)]
    if not cited:
        return doc
    moved = {}
    for f, ln, kf, kl in con.execute("""
            SELECT e.file, e.line, k.file, k.line
            FROM echoes x JOIN events e ON e.event_id = x.event_id JOIN events k ON k.event_id = x.of_event_id
            WHERE (e.file, e.line) IN (SELECT * FROM (VALUES """ + ",".join("(?, ?)" for _ in cited) + """))
            """, [v for c in cited for v in c]).fetchall():
        moved[(f, int(ln))] = (kf, int(kl))
    if not moved:
        return doc
    out = dict(doc)
    for sec in ("evidence", "cascade"):
        seen, items = set(), []
        for x in doc.get(sec) or []:
            if isinstance(x, dict) and x.get("file") and isinstance(x.get("line"), int):
                key = moved.get((str(x["file"]), int(x["line"])))
                if key:
                    x = {**x, "file": key[0], "line": key[1]}
                ident = (x["file"], x["line"], x.get("role"), x.get("kind"))
                if ident in seen:
                    continue
                seen.add(ident)
            items.append(x)
        out[sec] = items
    return out


def parse_offsets(items: list[str] | None) -> dict[str, float]:
    """`--offset HOST=SECONDS` (repeatable) -> {host: seconds}."""
    out: dict[str, float] = {}
    for it in items or []:
        host, sep, val = it.partition("=")
        if not sep or not host:
            raise ValueError(f"--offset {it!r}: expected HOST=SECONDS (e.g. node2=+37.5)")
        try:
            out[host] = float(val)
        except ValueError:
            raise ValueError(f"--offset {it!r}: {val!r} is not a number of seconds") from None
    return out
