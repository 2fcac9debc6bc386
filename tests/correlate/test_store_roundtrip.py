"""What goes in through store.insert_events comes out of `events` unchanged."""

from .fixtures import ev, store


def test_events_view_returns_what_was_inserted():
    events = [
        ev(1.0, "NCCL WARN x", raw="h1:1:2 [0] NCCL WARN x", host="h1"),             # message ends raw
        ev(2.0, "μsg → ünïcode", raw="[2026-03-02T03:00:02] ééé: μsg → ünïcode"),    # non-ASCII before it
        ev(3.0, "joined\nblock", raw="Traceback:\n  joined\nblock"),                   # a block
        ev(4.0, "", raw="empty message at the end: "),
        ev(5.0, "not in raw", raw="something else entirely", kind="gpu_oom"),
        ev(None, None, raw="no message at all"),
        ev(6.0, "same", raw="same", host="h2", rank=3),
    ]
    con = store(events)
    cols = ["event_id", "message", "raw", "host", "rank", "kind", "role", "severity", "ts_kind", "file"]
    got = {r[0]: r for r in con.execute(f"SELECT {', '.join(cols)} FROM events").fetchall()}
    assert len(got) == len(events)
    for e in events:
        assert got[e["event_id"]] == tuple(e[c] for c in cols), e["raw"]
