"""A progress bar's elapsed counter is its clock (queries/align/bar_clock.sql).

tqdm's bars (Lightning's, HF's) carry no time of their own, only `[elapsed<remaining]`, so each took the time
of the timed line before it: a console that trains for minutes after its last timed line read as if training
stopped there. A node that froze while rank 0's bars went on then looked like a rank that hung (fresh runs
rdzv_missing/torchrun_node/34 attempt 1, node_freeze/torchrun_node/28 attempt 4: 'hang' for a node failure)."""

from __future__ import annotations

import datetime as dt

from ranktrace.correlate import diagnose

from .fixtures import bundle_store, generated_run

T0 = dt.datetime(2026, 3, 2, 1, 0, 0)
AGENT = "I0302 {} 100 torch/distributed/elastic/agent/server/api.py:715] [default] {}"


def _bar(step: int, total: int, elapsed: int, desc: str = "Epoch 0") -> str:
    return (f"[default0]:{desc}: {100 * step // total:3d}%|#         | {step}/{total} "
            f"[{elapsed // 60:02d}:{elapsed % 60:02d}<01:00, 0.50it/s, v_num=0]")


def _aligned(tmp_path, monkeypatch, catalog, lines: list[str]) -> list[tuple]:
    con = bundle_store(tmp_path, monkeypatch, catalog, {"node1.log": "\n".join(lines) + "\n"})
    try:
        diagnose(con)
        return con.execute("SELECT line, ats FROM events_aligned ORDER BY line").fetchall()
    finally:
        con.close()


def test_bar_lines_are_placed_by_their_elapsed_time(tmp_path, monkeypatch, catalog):
    # a bar that starts with the worker group at 01:00:00, a step every 2 s, then a timed line at 01:03:00
    lines = [AGENT.format("01:00:00.000000", "Starting worker group")]
    lines += [_bar(k, 50, 2 * k) for k in range(1, 51)]
    lines.append(AGENT.format("01:03:00.000000", "Stopping worker group"))
    got = dict(_aligned(tmp_path, monkeypatch, catalog, lines))
    for k in range(1, 51):
        true = T0 + dt.timedelta(seconds=2 * k)
        # never later than the truth; off by at most the first line's elapsed and tqdm's truncated second
        assert true - dt.timedelta(seconds=3) <= got[k + 1] <= true, (k, got[k + 1])
    assert got[51] >= T0 + dt.timedelta(seconds=97)   # before: 01:00:00, the worker group's start


def test_bars_restart_with_each_epoch(tmp_path, monkeypatch, catalog):
    # epoch 1's bar restarts its elapsed count at 01:01:00 (a timed line before it says so)
    lines = [AGENT.format("01:00:00.000000", "Starting worker group")]
    lines += [_bar(k, 20, 2 * k) for k in range(1, 21)]
    lines.append(AGENT.format("01:01:00.000000", "epoch end"))
    lines += [_bar(k, 20, 3 * k, desc="Epoch 1") for k in range(1, 21)]
    got = dict(_aligned(tmp_path, monkeypatch, catalog, lines))
    assert T0 + dt.timedelta(seconds=37) <= got[21] <= T0 + dt.timedelta(seconds=40)
    epoch1 = T0 + dt.timedelta(seconds=60)
    assert epoch1 + dt.timedelta(seconds=56) <= got[42] <= epoch1 + dt.timedelta(seconds=60)


def test_a_bar_whose_bounds_cross_keeps_its_inherited_time(tmp_path, monkeypatch, catalog):
    # elapsed runs 100-110 s between timed lines 5 s apart: these lines were not written in between (output
    # held back, or two bars read as one): they tell nothing and keep the time they inherited
    lines = [AGENT.format("01:00:00.000000", "Starting worker group")]
    lines += [_bar(k, 20, 100 + k) for k in range(1, 11)]
    lines.append(AGENT.format("01:00:05.000000", "later"))
    got = dict(_aligned(tmp_path, monkeypatch, catalog, lines))
    assert {got[k] for k in range(2, 12)} == {T0}


def test_a_node_that_froze_under_lightning_bars_is_a_node_failure(tmp_path, catalog):
    truth, con = generated_run(tmp_path, "rdzv_missing", 34, "torchrun_node", catalog)
    try:
        found = diagnose(con)["attempts"]
    finally:
        con.close()
    want = truth["attempts"][0]["verdict"]
    assert (truth["telling"]["progress"], want["kind"], want["host"]) == ("lightning", "node_failure", "cn0017")
    got = found[0]["verdict"]
    assert (got["kind"], got["host"]) == ("node_failure", "cn0017"), got


def test_the_bar_mark_takes_the_bar_lines_only_and_loses_none(tmp_path, monkeypatch, catalog):
    """bar_clock.sql asks mark `bar` (parsers/marks.toml) before decoding a line's text: the bar lines carry it,
    the untimed step lines of no bar (the 1 GB corpus' 1.1 M) do not, and the bars placed are those of the
    same query with every line admitted."""
    from ranktrace import marks
    from ranktrace.correlate.util import sql_file
    lines = [AGENT.format("01:00:00.000000", "Starting worker group")]
    lines += [f"[default0]:step {k} loss 2.{k}" for k in range(1, 6)]        # untimed progress, no bar
    lines += [_bar(k, 20, 2 * k) for k in range(1, 21)]
    lines.append(AGENT.format("01:01:00.000000", "Stopping worker group"))
    con = bundle_store(tmp_path, monkeypatch, catalog, {"node1.log": "\n".join(lines) + "\n"})
    try:
        bit = 1 << next(m.bit for m in marks.load() if m.name == "bar")
        got = con.execute(f"SELECT line, marks & {bit} <> 0 FROM event_lines ORDER BY line").fetchall()
        assert got == [(n, "|" in text) for n, text in enumerate(lines, 1)]
        diagnose(con)   # (has_mark; and interpolated_times, emptied: each bar line at the time it inherited)
        con.execute("CREATE OR REPLACE TEMP TABLE interpolated_times (event_id BIGINT, ts TIMESTAMP)")
        sql = sql_file("align/bar_clock.sql")
        guarded = con.execute(sql + " ORDER BY ALL", {"files": []}).fetchall()
        assert "has_mark(marks, 'bar') AND (" in sql
        everything = con.execute(sql.replace("has_mark(marks, 'bar') AND (", "true AND (") + " ORDER BY ALL",
                                 {"files": []}).fetchall()
        assert guarded == everything and len(guarded) >= 19
    finally:
        con.close()
