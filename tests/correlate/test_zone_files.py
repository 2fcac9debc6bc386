"""A file written in another time zone than the lines around it (ranktrace.correlate.zones): a Kubernetes
node's journal in the node's local time, with no zone written, beside its pods' CRI logs in UTC."""

from __future__ import annotations

from ranktrace.correlate import diagnose
from ranktrace.correlate.zones import note, zone_shift

from .fixtures import generated_run

H = 3600.0
LO, HI = 1_000_000.0, 1_000_000.0 + 1800   # the lines that name their zone: half an hour


def minutes(start: float, n: int) -> list[tuple[float, float, int]]:
    """A file with a few lines in each of n minutes from `start`."""
    return [(start + 60 * i, start + 60 * i + 30, 3) for i in range(n)]


def test_a_file_hours_off_is_shifted_by_whole_hours():
    assert zone_shift(minutes(LO - 5 * H, 30), LO, HI) == 5 * H          # written 5 h behind (UTC-5)
    assert zone_shift(minutes(LO + 9 * H, 30), LO, HI) == -9 * H         # written 9 h ahead (UTC+9)
    assert zone_shift(minutes(LO + 5.5 * H, 30), LO, HI) == -5.5 * H     # a half-hour zone (UTC+5:30)


def test_no_shift_for_a_file_inside_or_only_minutes_off():
    assert zone_shift(minutes(LO, 30), LO, HI) is None                   # the same zone
    assert zone_shift(minutes(LO + 240, 30), LO, HI) is None             # a clock minutes off: the clock's job
    assert zone_shift([], LO, HI) is None


def test_no_shift_when_more_than_one_fits():
    # two lines, 7 h off, beside a day of lines: 7 h, 8 h, ... all put them inside; no guess
    assert zone_shift([(LO - 7 * H, LO - 7 * H + 1, 2)], LO, LO + 24 * H - 7 * H + 60) is None


def test_the_note_names_the_zone_and_the_flag_that_reads_it():
    assert note("j.log", 5 * 3600) == ("j.log: written with no zone, 5 h behind the lines that name theirs: "
                                       "read as UTC-05:00 (`ingest --tz Etc/GMT+5` reads it so)")
    assert "9 h ahead of" in note("j.log", -9 * 3600) and "UTC+09:00" in note("j.log", -9 * 3600)
    assert "Etc/GMT-9" in note("j.log", -9 * 3600)
    assert "5 h 30 min ahead of" in note("j.log", -19800) and "UTC+05:30" in note("j.log", -19800)


def attempts_of(truth: dict, doc: dict) -> list[tuple]:
    got = {a["id"]: a.get("verdict") or {} for a in doc["attempts"]}
    return [((a["verdict"]["kind"], a["verdict"]["host"]), (got.get(a["id"], {}).get("kind"), got.get(a["id"], {}).get("host")))
            for a in truth["attempts"] if a["outcome"] == "failed"]


def test_a_node_journal_in_local_time_is_read_in_its_zone(tmp_path, catalog):
    # the node's kernel kills the rank for memory; its journal says so 5 h "before" the pod's UTC logs:
    # read as UTC, the kill sits in no attempt and the verdict blames the death (`killed`), not the OOM
    truth, con = generated_run(tmp_path, "host_oom", 39, "k8s_cri", catalog, node_tz=-5)
    try:
        doc = diagnose(con)
    finally:
        con.close()
    pairs = attempts_of(truth, doc)
    assert ("oom", "gke-a3-pool-6df2-1") in [want for want, _ in pairs]
    assert all(want == got for want, got in pairs), pairs
    zones = [z for c in doc["clock"] for z in c.get("zones", [])]
    assert zones and all(z["shift_s"] == 5 * 3600 for z in zones)
    assert all(z["file"].endswith(".log") and "/journal/" in z["file"] for z in zones)
    assert any("5 h behind" in c["basis"] and "UTC-05:00" in c["basis"] and "--tz Etc/GMT+5" in c["basis"]
               for c in doc["clock"])


def test_the_same_run_in_utc_is_not_shifted(tmp_path, catalog):
    truth, con = generated_run(tmp_path, "host_oom", 39, "k8s_cri", catalog)
    try:
        doc = diagnose(con)
    finally:
        con.close()
    assert not [z for c in doc["clock"] for z in c.get("zones", [])]
    assert all(want == got for want, got in attempts_of(truth, doc))
