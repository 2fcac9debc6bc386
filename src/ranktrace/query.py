"""Read-only queries over a store, and their output as table / csv / json."""

from __future__ import annotations

import csv
import json
from typing import IO

from .store import open_readonly

MAX_CELL = 200


def run_query(db: str, sql: str, params: dict | None = None, limit: int | None = None):
    con = open_readonly(db)
    try:
        cur = con.execute(sql, params or {})
        cols = [d[0] for d in cur.description] if cur.description else []
        rows = cur.fetchmany(limit) if limit else cur.fetchall()
        return cols, rows
    finally:
        con.close()


def _cell(v) -> str:
    if v is None:
        return ""
    if hasattr(v, "isoformat"):
        return v.isoformat(sep=" ")
    s = str(v).replace("\n", "⏎")
    return s if len(s) <= MAX_CELL else s[:MAX_CELL - 1] + "…"


def print_result(cols: list[str], rows: list[tuple], fmt: str, out: IO[str]) -> None:
    if fmt == "csv":
        w = csv.writer(out)
        w.writerow(cols)
        w.writerows([["" if v is None else (v.isoformat() if hasattr(v, "isoformat") else v) for v in r]
                     for r in rows])
        return
    if fmt == "json":
        json.dump([dict(zip(cols, r)) for r in rows], out, default=str, indent=1)
        out.write("\n")
        return
    cells = [[_cell(v) for v in r] for r in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(cols)]
    out.write("  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip() + "\n")
    out.write("  ".join("-" * w for w in widths) + "\n")
    for r in cells:
        out.write("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() + "\n")
    out.write(f"({len(rows)} row{'s' if len(rows) != 1 else ''})\n")
