"""Ray's log deduplication (ray/_private/ray_logging LogDeduplicator) prints the first worker's line of a
group of alike lines with ' [repeated Nx across cluster]' after it (and, once a run, a hint in
parentheses). The suffix is peeled like a prefix (parsers/envelopes/ray_dedup.toml): the line under it is
its emitter's, with the rank and time it gives."""

from .fixtures import diagnose_files

WATCHDOG = ("[rank{r}]:[E305 08:14:{s}.120000000 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) Rank {r}] Process "
            "group watchdog thread terminated with exception: [Rank {r}] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for "
            "600021 milliseconds before timing out.")
HINT = (" (Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication, or see "
        "https://docs.ray.io/en/master/ray-observability/user-guides/configure-logging.html#log-deduplication "
        "for more options.)")


def test_a_deduplicated_line_is_read_as_the_line_under_the_suffix(tmp_path, monkeypatch, catalog):
    driver = "\n".join([
        "(TrainWorker pid=4411, ip=10.2.0.7) " + WATCHDOG.format(r=3, s="02") + " [repeated 5x across cluster]" + HINT,
        "(TrainWorker pid=4409, ip=10.2.0.5) " + WATCHDOG.format(r=1, s="09") + " [repeated 2x across cluster]",
        "(TrainWorker pid=4409, ip=10.2.0.5) [rank1]:[E305 08:14:09.300000000 ProcessGroupNCCL.cpp:627] [Rank 1] To "
        "avoid data inconsistency, we are taking the entire process down. [repeated 7x across cluster]",
    ]) + "\n"
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"driver.log": driver})
    assert (v["verdict"]["rank"], v["verdict"]["host"]) == (3, "10.2.0.7"), v["verdict"]
    assert v["verdict"]["time"].startswith("2"), v["verdict"]   # the line's own time, not none
