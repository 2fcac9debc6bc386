"""identity.lookup reads the link maps once into Python (LinkMaps; the small queries per process it
replaced are gone, shown equal on all 28 sample stores first): on real bundles, every process the links
know, asked by any subset of its ids (and ids no link holds, ids as text, GPU ids as the kernel writes
them), gets from LinkMaps what the maps' own SQL says (the oracle below, kept here as the maps' meaning)."""

from __future__ import annotations

import itertools

import pytest

from ranktrace.correlate import identity
from ranktrace.correlate.identity import LinkMaps, _lookup, _maps, lookup, pci

from rt_testlib import REPO, aligned

BUNDLES = ["demo_sigkill_4node", "k8s_gang_partial_restart", "slurm_torchrun_sigkill_skew", "slurm_oom_cgroup",
           "k8s_volcano_stranded_gpus"]
KEYS = ("host", "pid", "rank", "local_rank", "pod")


class QueryOracle:
    """What each map means, as SQL over the temp tables build_maps makes: one query per question."""

    def __init__(self, con):
        self.con = con

    def _one(self, sql, args):
        return self.con.execute(sql, args).fetchone()

    def hostpid(self, host, pid):
        return self._one("SELECT rank, local_rank, gpu FROM id_hostpid WHERE host = ? AND pid = ?", [host, pid])

    def pid(self, pid):
        return self._one("SELECT host, rank, local_rank FROM id_pid WHERE pid = ?", [pid])

    def hostgpu(self, host, gpu):
        return self._one(f"SELECT rank FROM id_hostgpu WHERE host = ? AND gpu = {pci('?')}", [host, str(gpu)])

    def hostlocal(self, host, local_rank):
        return self._one("SELECT rank FROM id_hostlocal WHERE host = ? AND local_rank = ?", [host, local_rank])

    def rank(self, rank):
        return self._one("SELECT host, local_rank FROM id_rank WHERE rank = ?", [rank])

    def only_pid(self, host, rank, local_rank):
        return self._one("SELECT CASE WHEN count(DISTINCT pid) = 1 THEN any_value(pid) END FROM identity "
                         "WHERE host = ? AND (rank = ? OR (rank IS NULL AND local_rank = ?)) AND pid IS NOT NULL",
                         [host, rank, local_rank])[0]

    def pod_host(self, pod):
        return self._one("SELECT host FROM pod_host WHERE pod = ?", [pod])

    def rank_pod(self, rank):
        return self._one("SELECT CASE WHEN count(DISTINCT pod) = 1 THEN any_value(pod) END FROM identity "
                         "WHERE rank = ? AND pod IS NOT NULL", [rank])[0]

    def only(self, col, host, rank):
        return self._one(f"SELECT CASE WHEN count(DISTINCT {col}) = 1 THEN any_value({col}) END FROM identity "
                         f"WHERE host = ? AND rank IS NOT DISTINCT FROM ? AND {col} IS NOT NULL", [host, rank])[0]


@pytest.fixture(scope="module", params=BUNDLES)
def con(request, sample_diagnosis):
    c = aligned(sample_diagnosis(REPO / "sample_logs" / request.param)[0])
    yield c
    c.close()


def asked(con) -> list[dict]:
    """Every subset of the ids of every link (host, pid, rank, local_rank, pod), and ids no link has."""
    links = con.execute("SELECT DISTINCT host, pid, rank, local_rank, pod FROM identity").fetchall()
    links += [("no-such-host", 999999, 9999, 77, "no-such-pod"), (None, None, None, None, None)]
    out = set()
    for link in links:
        for n in range(1, len(KEYS) + 1):
            for keep in itertools.combinations(range(len(KEYS)), n):
                out.add(tuple(v if i in keep else None for i, v in enumerate(link)))
    return [dict(zip(KEYS, k)) for k in sorted(out, key=repr)]


def _gpus_asked(con) -> list[dict]:
    """Every host with every GPU id the maps hold, as written, with its function and upper-cased."""
    gpus = [g for (g,) in con.execute("SELECT DISTINCT gpu FROM id_hostgpu UNION "
                                      "SELECT DISTINCT gpu FROM identity WHERE gpu IS NOT NULL").fetchall()]
    hosts = [h for (h,) in con.execute("SELECT DISTINCT host FROM identity WHERE host IS NOT NULL").fetchall()]
    return [{"host": h, "gpu": v} for h in hosts + ["no-such-host"] for g in gpus for v in {g, g + ".0", g.upper()}]


def test_the_maps_read_once_answer_as_the_queries_do(con):
    queries, once = QueryOracle(con), LinkMaps(con)
    ks = asked(con)
    assert len(ks) > 20
    as_text = [{c: (str(v) if c in ("pid", "rank", "local_rank") and v is not None else v) for c, v in k.items()}
               for k in ks]
    named = 0
    for k in ks + as_text + _gpus_asked(con):
        want = _lookup(queries, **k)
        assert _lookup(once, **k) == want, k
        named += sum(want[c] is not None and k.get(c) is None for c in KEYS)
    assert named   # the links filled something in: the comparison is not of empty answers


def test_lookup_reads_the_maps_once_until_they_change(con):
    identity._LOOKUPS.clear()
    m = _maps(con, "h", 1, None, None, None, None)
    assert isinstance(m, LinkMaps) and _maps(con, None, None, 3, None, None, None) is m
    # one engine: an id as text and a GPU are answered from the same maps
    assert _maps(con, "h", "1", None, None, None, None) is m
    assert _maps(con, "h", None, None, None, None, "0000:3b:00") is m
    identity.build_maps(con)   # new links: the maps are read again
    assert _maps(con, "h", 1, None, None, None, None) is not m
    row = con.execute("SELECT host, pid FROM identity WHERE host IS NOT NULL AND pid IS NOT NULL LIMIT 1").fetchone()
    if row:
        as_int, as_text = lookup(con, host=row[0], pid=row[1]), lookup(con, host=row[0], pid=str(row[1]))
        assert as_text.pop("pid") == str(row[1]) and as_int.pop("pid") == row[1]
        assert as_int == as_text


def test_ambiguous_links_are_answered_as_the_queries_do():
    """Links made by hand where one id names two processes (a host with two ranks of different pods and
    GPUs, a pid on two hosts, a rank on two hosts, a local rank without a rank): nothing unambiguous is
    invented, and what is unambiguous is filled, as the queries do."""
    import duckdb
    con = duckdb.connect()
    con.execute("CREATE TEMP TABLE identity (host VARCHAR, rank INTEGER, local_rank INTEGER, pid BIGINT, pod VARCHAR, "
                "container VARCHAR, gpu VARCHAR, job_id VARCHAR, step_id VARCHAR, source VARCHAR)")
    links = [("a", 0, 0, 10, "p0", "0000:3b:00"), ("a", 1, 1, 11, "p1", "0000:5e:00"), ("a", None, 2, 12, None, None),
             ("a", None, 2, 13, None, None), ("b", 2, 0, 10, "p2", None), ("b", 3, 1, 20, "p2", None),
             ("c", 3, 1, 30, None, None), (None, 4, None, 40, None, None), ("d", 5, 0, 50, None, "0000:3b:00"),
             ("d", 5, 0, 51, None, None), ("d", None, None, 52, "p5", None), ("e", 6, None, None, "p6", None)]
    con.executemany("INSERT INTO identity (host, rank, local_rank, pid, pod, gpu, source) VALUES (?, ?, ?, ?, ?, ?, 'hand')",
                    links)
    con.execute("CREATE TEMP TABLE pod_host AS SELECT 'p6' AS pod, 'e' AS host")
    identity.build_maps(con)
    queries, once = QueryOracle(con), LinkMaps(con)
    for k in asked(con) + [{"host": "a", "gpu": "0000:3B:00.0"}, {"host": "d", "gpu": "0000:3b:00"}]:
        assert _lookup(once, **k) == _lookup(queries, **k), k
    # what the links make of it: pid 10 is on two hosts (no host), rank 3 on two (no host), a's local rank 2
    # has two pids (none), d's rank 5 two pids (none) and one GPU
    assert _lookup(once, pid=10)["host"] is None and _lookup(once, rank=3)["host"] is None
    assert _lookup(once, host="a", local_rank=2)["pid"] is None
    assert _lookup(once, host="a", rank=1) == {"host": "a", "pid": 11, "rank": 1, "local_rank": 1, "gpu": "0000:5e:00",
                                               "pod": "p1"}
    assert _lookup(once, host="d", rank=5)["pid"] is None and _lookup(once, host="d", rank=5)["gpu"] == "0000:3b:00"
    assert _lookup(once, pod="p6")["host"] == "e" and _lookup(once, pod="p6")["rank"] is None
