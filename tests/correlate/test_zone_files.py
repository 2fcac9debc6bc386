"""A file written in another time zone than the lines around it (ranktrace.correlate.zones): a Kubernetes
node's journal in the node's local time, with no zone written, beside its pods' CRI logs in UTC."""

from __future__ import annotations

from ranktrace.correlate.zones import decide, note, pair_gap, zone_fits

from .fixtures import generated_diagnosis

H = 3600.0
LO, HI = 1_000_000.0, 1_000_000.0 + 1800   # the lines that name their zone: half an hour


def minutes(start: float, n: int) -> list[tuple[float, float, int]]:
    """A file with a few lines in each of n minutes from `start`."""
    return [(start + 60 * i, start + 60 * i + 30, 3) for i in range(n)]


def zone_shift(groups, lo, hi):
    return decide({"f": zone_fits(groups, lo, hi)}).get("f")


def test_a_file_hours_off_is_shifted_by_whole_hours():
    assert zone_shift(minutes(LO - 5 * H, 30), LO, HI) == 5 * H          # written 5 h behind (UTC-5)
    assert zone_shift(minutes(LO + 9 * H, 30), LO, HI) == -9 * H         # written 9 h ahead (UTC+9)
    assert zone_shift(minutes(LO + 5.5 * H, 30), LO, HI) == -5.5 * H     # a half-hour zone (UTC+5:30)


def test_no_shift_for_a_file_inside_or_only_minutes_off():
    assert zone_shift(minutes(LO, 30), LO, HI) is None                   # the same zone
    assert zone_shift(minutes(LO + 240, 30), LO, HI) is None             # a clock minutes off: the clock's job
    assert zone_shift([], LO, HI) is None


def test_no_shift_when_more_than_one_whole_hour_fits():
    # two lines, 7 h off, beside a day of lines: 7 h, 8 h, ... all put them inside; no guess
    assert zone_shift([(LO - 7 * H, LO - 7 * H + 1, 2)], LO, LO + 24 * H - 7 * H + 60) is None


def test_a_file_cut_short_takes_the_zone_of_the_cluster():
    # a frozen node's journal ends early: 5:30 and 5 h (and 6 h) all put it inside; the nodes whose
    # journals run to the end fit 5:30 only (UTC+5:30), and so does it
    short = minutes(LO + 5.5 * H, 8)
    fits = {"n1": zone_fits(minutes(LO + 5.5 * H, 30), LO, HI), "n2": zone_fits(minutes(LO + 5.5 * H, 29), LO, HI),
            "frozen": zone_fits(short, LO, HI)}
    assert len(fits["frozen"]) > 1 and -5 * H in fits["frozen"]
    assert decide(fits) == {"n1": -5.5 * H, "n2": -5.5 * H, "frozen": -5.5 * H}
    assert decide({"frozen": fits["frozen"]}) == {"frozen": -5 * H}    # alone: the one whole hour that fits


def test_a_half_hour_before_a_quarter_hour():
    # a 12-minute journal (4 lines) 5:30 ahead of 20 minutes of pod logs: 5:30 and 5:15 both fit, no hour does
    fits = zone_fits([(LO + 5.5 * H + 40, LO + 5.5 * H + 760, 4)], LO, LO + 1210)
    assert sorted(fits) == [-5.5 * H, -5.25 * H]
    assert decide({"a": fits, "b": fits}) == {"a": -5.5 * H, "b": -5.5 * H}


def test_the_note_names_the_zone_and_the_flag_that_reads_it():
    assert note("j.log", 5 * 3600) == ("j.log: written with no zone, 5 h behind the lines that name theirs: "
                                       "read as UTC-05:00 (`ingest --tz Etc/GMT+5` reads it so)")
    assert "9 h ahead of" in note("j.log", -9 * 3600) and "UTC+09:00" in note("j.log", -9 * 3600)
    assert "Etc/GMT-9" in note("j.log", -9 * 3600)
    assert "5 h 30 min ahead of" in note("j.log", -19800) and "UTC+05:30" in note("j.log", -19800)


def test_a_quarter_hour_zone_is_told_by_the_lines_of_its_pods():
    # a journal 5:45 ahead (Nepal) of pod logs longer than it: 5:30 and 5:45 both put it inside, and the
    # coarsest step alone would take 5:30; its kubelet lines (a container started, died) sit 0.3 s before
    # that container's first and after its last line once shifted 5:45, tens of seconds off at 5:30
    start = LO + 5.75 * H
    groups = minutes(start, 10)
    fits = zone_fits(groups, LO, LO + 40 * 60)
    assert -5.75 * H in fits and -5.5 * H in fits
    edges = [(LO + 100, LO + 400), (LO + 460, LO + 700), (LO + 1500, LO + 2000)]   # a pod's groups
    pairs = [(start + 99.7, a, b) for a, b in edges] + [(start + 700.3, a, b) for a, b in edges]
    assert pair_gap(pairs, -5.75 * H) < 1 and pair_gap(pairs, -5.5 * H) > 60
    assert decide({"j": fits}, {"j": pairs}) == {"j": -5.75 * H}
    assert decide({"j": fits}) == {"j": -5.5 * H}      # without its pods' lines: the coarsest step


def attempts_of(truth: dict, doc: dict) -> list[tuple]:
    got = {a["id"]: a.get("verdict") or {} for a in doc["attempts"]}
    return [((a["verdict"]["kind"], a["verdict"]["host"]), (got.get(a["id"], {}).get("kind"), got.get(a["id"], {}).get("host")))
            for a in truth["attempts"] if a["outcome"] == "failed"]


def test_a_node_journal_in_local_time_is_read_in_its_zone(tmp_path, catalog):
    # the node's kernel kills the rank for memory; its journal says so 5 h "before" the pod's UTC logs:
    # read as UTC, the kill sits in no attempt and the verdict blames the death (`killed`), not the OOM
    truth, doc = generated_diagnosis(tmp_path, "host_oom", 39, "k8s_cri", catalog, node_tz=-5)
    pairs = attempts_of(truth, doc)
    assert ("oom", "gke-a3-pool-6df2-1") in [want for want, _ in pairs]
    assert all(want == got for want, got in pairs), pairs
    zones = [z for c in doc["clock"] for z in c.get("zones", [])]
    assert zones and all(z["shift_s"] == 5 * 3600 for z in zones)
    assert all(z["file"].endswith(".log") and "/journal/" in z["file"] for z in zones)
    assert any("5 h behind" in c["basis"] and "UTC-05:00" in c["basis"] and "--tz Etc/GMT+5" in c["basis"]
               for c in doc["clock"])


def test_the_same_run_in_utc_is_not_shifted(tmp_path, catalog):
    truth, doc = generated_diagnosis(tmp_path, "host_oom", 39, "k8s_cri", catalog)
    assert not [z for c in doc["clock"] for z in c.get("zones", [])]
    assert all(want == got for want, got in attempts_of(truth, doc))
