"""Kubernetes and kernel/GPU formats on real log shapes and on the small samples
under tests/formats/data/{k8s,kernel}: lines claimed, kinds of the lines that
matter (OOMKilled, Xid, ImagePullBackOff ...), facts, timestamps.

Files are copied under neutral names into a temporary directory so that path
hints (host from a directory name) do not interfere."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from ranktrace.formats import load_catalog
from ranktrace.ingest.pipeline import ingest
from ranktrace.samples import check_sample
from ranktrace.store import connect as store_connect

HERE = Path(__file__).parent
DATA = HERE / "data"
SHAPES = Path("/work/shared/real_log_shapes")
SHAPE_SHARE = {"080": 1.0, "081": 1.0, "087": 1.0, "091": 1.0, "095": 1.0,
               # 101 starts with the container name pasted alone ('vj71j'): not a kubectl line shape.
               "101": 11 / 12, "102": 1.0, "103": 1.0}
MINE = ("kubelet_klog", "kubectl_describe", "kubectl_get", "containerd", "nvidia_device_plugin", "kernel_dmesg")


@pytest.fixture(scope="module")
def cat():
    # Other families' samples are checked by their own tests / `formats check`; load without them so a
    # work-in-progress elsewhere does not hide what this file tests.
    return load_catalog(check_samples=False)


@pytest.fixture(scope="module")
def shapes_con(cat, tmp_path_factory):
    paths = [p for p in (_find(x) for x in SHAPE_SHARE) if p is not None]
    if not paths:
        pytest.skip("real log shapes not available")
    return _ingest(cat, tmp_path_factory.mktemp("shapes"), *paths)


@pytest.fixture(scope="module")
def samples_con(cat, tmp_path_factory):
    files = sorted((DATA / "k8s").iterdir()) + sorted((DATA / "kernel").iterdir())
    return _ingest(cat, tmp_path_factory.mktemp("samples"), *files)


def _find(prefix: str) -> Path | None:
    found = sorted(SHAPES.glob(f"{prefix}_*.log"))
    return found[0] if found else None


def _shape(prefix: str) -> Path:
    found = sorted(SHAPES.glob(f"{prefix}_*.log"))
    if not found:
        pytest.skip(f"real log shape {prefix} not available")
    return found[0]


def _ingest(cat, tmp_path: Path, *files: Path):
    src = tmp_path / "in"
    src.mkdir(exist_ok=True)
    for f in files:
        shutil.copy(f, src / f.name)
    db = str(tmp_path / "s.duckdb")
    ingest([str(src)], db, cat)
    return store_connect(db)


def _events(con, name: str) -> list[dict]:
    cur = con.execute("SELECT * FROM events WHERE file LIKE ? ORDER BY line", [f"%/{name}"])
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def _claimed_share(con, path: Path) -> float:
    nonblank = sum(1 for ln in path.read_text(errors="replace").splitlines() if ln.strip())
    claimed = con.execute("SELECT coalesce(sum(end_line - line + 1), 0) FROM events "
                          "WHERE file LIKE ? AND format <> 'raw'", [f"%/{path.name}"]).fetchone()[0]
    return claimed / nonblank


def _facts(con, table: str, name: str) -> list[dict]:
    """Fact rows of `table` that come from the file called `name`."""
    cur = con.execute(f'SELECT f.* FROM "{table}" f JOIN files USING (file_id) WHERE files.path LIKE ?',
                      [f"%/{name}"])
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def _line(evs, n):
    return next(e for e in evs if e["line"] <= n <= e["end_line"])


# ---------------------------------------------------------------- samples of these formats

def test_samples_of_these_formats_pass(cat):
    problems = []
    for f in cat.formats:
        if f.name in MINE:
            for s in f.samples:
                problems += check_sample(cat, s)
    assert problems == []


# ---------------------------------------------------------------- claimed share

@pytest.mark.parametrize("prefix,want", sorted(SHAPE_SHARE.items()))
def test_real_shapes_claimed(shapes_con, prefix, want):
    path = _shape(prefix)
    con = shapes_con
    assert _claimed_share(con, path) >= min(want, 0.95) - 1e-9


def test_real_shapes_claimed_overall(shapes_con):
    paths = [_shape(p) for p in SHAPE_SHARE]
    con = shapes_con
    nonblank = sum(sum(1 for ln in p.read_text().splitlines() if ln.strip()) for p in paths)
    claimed = con.execute("SELECT sum(end_line - line + 1) FROM events WHERE format <> 'raw'").fetchone()[0]
    assert claimed / nonblank >= 0.95


@pytest.mark.parametrize("path", sorted((DATA / "k8s").iterdir()) + sorted((DATA / "kernel").iterdir()),
                         ids=lambda p: p.name)
def test_samples_claimed(samples_con, path):
    con = samples_con
    assert _claimed_share(con, path) >= 0.95


# ---------------------------------------------------------------- real shapes: kinds, facts, times

def test_081_unexpected_admission(shapes_con):
    con = shapes_con
    evs = _events(con, _shape("081").name)
    adm = _line(evs, 1)
    assert adm["format"] == "kubelet_klog" and adm["kind"] == "scheduling_error"
    assert adm["pod"] == "<podname>" and adm["namespace"] == "<namespace>" and adm["pid"] == 1511951
    assert adm["ts_text"] == "0822 22:21:03.060605"
    assert _line(evs, 3)["kind"] == "pod_event"
    ev = _facts(con, "kube_event", _shape("081").name)
    assert any(r["reason"] == "UnexpectedAdmissionError" and r["type"] == "Warning" for r in ev)


def test_080_eviction_noise_is_not_oom(shapes_con):
    con = shapes_con
    evs = [e for e in _events(con, _shape("080").name) if e["format"] == "kubelet_klog"]
    assert len(evs) == 7
    assert all(e["kind"] is None and e["severity"] == "warning" for e in evs)
    assert all(e["host"] == "node-5" and e["program"] == "kubelet" and e["pid"] == 38510 for e in evs)
    assert all(e["ts"] is not None for e in evs)


def test_087_imagepullbackoff(shapes_con):
    con = shapes_con
    evs = _events(con, _shape("087").name)
    assert _line(evs, 2)["pod"] == "grpc-ps-b3abcf5f-2a11-4605-a191-911a4f100703-98ee9d8eee-g1ax6"
    assert _line(evs, 4)["host"] == "minikube"
    start = _line(evs, 5)
    assert start["ts_kind"] == "exact" and str(start["ts"]) == "2018-07-16 17:35:26"
    pull = [e for e in evs if e["kind"] == "scheduling_error"]
    assert len(pull) == 1 and "ImagePullBackOff" in pull[0]["raw"]
    # identity carried from 'Name:' / 'Node:' / the container line to the state block
    assert pull[0]["pod"] == "grpc-ps-b3abcf5f-2a11-4605-a191-911a4f100703-98ee9d8eee-g1ax6"
    assert pull[0]["namespace"] == "default" and pull[0]["host"] == "minikube"
    assert pull[0]["container"] == "grpc-ps-b3abcf5f-2a11-4605-a191-911a4f100703"
    st = _facts(con, "kube_container_state", _shape("087").name)
    assert any(r["state"] == "Waiting" and r["reason"] == "ImagePullBackOff" for r in st)


def test_101_exit_137_error_is_killed_not_oom(shapes_con):
    path = _shape("101")
    con = shapes_con
    evs = _events(con, path.name)
    kinds = {e["kind"] for e in evs}
    assert "host_oom" not in kinds and "killed_signal" in kinds
    # The Last State block runs through its Finished: line and takes that time.
    state = next(e for e in evs if e["pattern"] == "kubectl_describe.state" and e["kind"] == "killed_signal")
    assert state["end_line"] >= 8 and str(state["ts"]) == "2022-12-13 17:33:43"
    st = _facts(con, "kube_container_state", _shape("101").name)
    assert any(r["which"] == "Last State" and r["reason"] == "Error" and r["exit_code"] == 137 for r in st)
    ctd = next(e for e in evs if e["format"] == "containerd")
    assert ctd["host"] == "worker-pool9-q4s7kqis-sopo-703-8" and ctd["program"] == "containerd"
    assert ctd["level"] == "error" and ctd["ts_kind"] == "exact"
    assert str(ctd["ts"]) == "2022-12-13 17:33:43.198678"
    kl = next(e for e in evs if e["format"] == "kubelet_klog")
    assert kl["program"] == "kubelet" and kl["pid"] == 69781 and kl["severity"] == "error"


def test_102_init_container_oomkilled_exit_0(shapes_con):
    path = _shape("102")
    con = shapes_con
    evs = _events(con, path.name)
    oom = [e for e in evs if e["kind"] == "host_oom"]
    assert len(oom) == 1 and "OOMKilled" in oom[0]["raw"]
    assert "killed_signal" not in {e["kind"] for e in evs}
    assert _line(evs, 2)["pod"] == "gpu-pod" and _line(evs, 2)["namespace"] == "default"
    st = _facts(con, "kube_container_state", _shape("102").name)
    assert any(r["reason"] == "OOMKilled" and r["exit_code"] == 0 for r in st)
    assert any(r["reason"] == "Completed" for r in st)


def test_103_event_row_container_init_oom(shapes_con):
    path = _shape("103")
    con = shapes_con
    evs = _events(con, path.name)
    assert _line(evs, 3)["pod"] == "training-operator-2ef3efbfd5-bijid"
    assert _line(evs, 3)["kind"] == "container_state"   # a status summary, not the cause
    row = _line(evs, 5)
    assert row["kind"] == "host_oom" and row["role"] == "cause"
    ev = _facts(con, "kube_event", _shape("103").name)
    assert any(r["reason"] == "Failed" and r["age"] == "113s" and r["source"] == "kubelet" for r in ev)


def test_091_fallen_off_the_bus_block(shapes_con):
    path = _shape("091")
    con = shapes_con
    evs = _events(con, path.name)
    blk = evs[0]
    assert (blk["line"], blk["end_line"]) == (1, 3)
    assert blk["kind"] == "gpu_xid" and blk["role"] == "cause" and blk["severity"] == "critical"
    x = _facts(con, "gpu_xid", _shape("091").name)
    assert any(r["pci_bus_id"] == "0000:7c:00.0" and r["uptime_s"] == pytest.approx(2302.308145) for r in x)
    assert _facts(con, "nvidia_driver", _shape("091").name)[0]["version"] == "570.158.01"


def test_095_xid_cascade(shapes_con):
    path = _shape("095")
    con = shapes_con
    evs = _events(con, path.name)
    x31 = _line(evs, 2)
    assert x31["kind"] == "gpu_xid_app" and x31["pid"] == 32755 and x31["role"] == "cause"
    assert _line(evs, 3)["kind"] == "gpu_xid"
    assert {e["kind"] for e in evs if e["line"] >= 4 and "Xid" in e["raw"]} == {"gpu_xid_cascade"}
    assert _line(evs, 6)["kind"] is None   # sched: RT throttling
    x = _facts(con, "gpu_xid", _shape("095").name)
    assert len(x) == 11
    assert {r["xid"] for r in x} == {31, 62, 45}
    assert next(r for r in x if r["xid"] == 31)["process"] == "cuda_plot_k32_v"
    up = _facts(con, "dmesg_uptime", _shape("095").name)
    assert len(up) == 13 and min(r["uptime_s"] for r in up) == pytest.approx(17692.198496)
    u = _facts(con, "gpu_pci_uuid", _shape("095").name)
    assert u[0]["pci_bus_id"] == "0000:0a:00" and u[0]["gpu_uuid"].startswith("GPU-680c9403")


# ---------------------------------------------------------------- samples: kinds, facts, times

def test_kernel_samples(samples_con):
    con = samples_con
    up = _events(con, "dmesg_uptime.txt")
    assert all(e["ts"] is None for e in up)   # uptime only: no absolute time
    assert _line(up, 4)["kind"] == "gpu_xid_app" and _line(up, 8)["kind"] == "gpu_xid"
    assert _line(up, 9)["kind"] == "hw_health_warning"
    assert _line(up, 17)["kind"] == "host_oom" and _line(up, 17)["pid"] == 48230
    assert _line(up, 19)["kind"] == "kernel_hung_task" and _line(up, 22)["kind"] == "crash_signal"
    assert _line(up, 13)["kind"] == "stack_frame"
    t = _events(con, "dmesg_T.txt")
    assert str(t[1]["ts"]) == "2026-03-02 03:12:09" and t[1]["ts_kind"] == "local"
    assert t[3]["kind"] == "gpu_xid" and "NVLink" in t[3]["message"]
    j = _events(con, "journal_k.log")
    blk = _line(j, 3)
    assert (blk["line"], blk["end_line"]) == (3, 5) and blk["kind"] == "gpu_xid" and blk["host"] == "gpu-node-7"
    assert _line(j, 6)["kind"] == "gpu_xid" and _line(j, 6)["pid"] == 1101234
    assert _line(j, 16)["kind"] == "host_oom" and _line(j, 16)["pid"] == 461754
    assert all(e["ts_kind"] == "year_inferred" for e in j if e["line"] > 1)
    oom = _facts(con, "kernel_oom", "journal_k.log")
    assert any(r["constraint"] == "CONSTRAINT_MEMCG" and r["pid"] == 461754 for r in oom)
    seg = _facts(con, "kernel_segfault", "dmesg_uptime.txt")
    assert seg[0]["object"] == "libnccl.so.2" and seg[0]["pid"] == 48250


def test_k8s_samples(samples_con):
    con = samples_con
    d = _events(con, "describe_trainer_oomkilled.txt")
    oom = [e for e in d if e["kind"] == "host_oom"]
    assert len(oom) == 1 and "OOMKilled" in oom[0]["raw"]
    assert _line(d, 48)["ts_kind"] == "exact" and str(_line(d, 48)["ts"]) == "2026-03-02 03:17:41"
    assert _line(d, 2)["pod"] == "trainer-worker-3" and _line(d, 6)["host"] == "gpu-node-7"
    assert oom[0]["pod"] == "trainer-worker-3" and oom[0]["container"] == "pytorch" and oom[0]["host"] == "gpu-node-7"
    g = _events(con, "get_pods_events.txt")
    assert _line(g, 3)["kind"] == "scheduling_error" and _line(g, 3)["host"] == "gpu-node-2"
    assert _line(g, 5)["kind"] == "host_oom" and _line(g, 5)["pod"] == "trainer-worker-3"
    assert _line(g, 9)["kind"] == "scheduling_error" and _line(g, 9)["pod"] == "trainer-worker-4"
    assert _line(g, 16)["kind"] == "node_failure" and _line(g, 16)["host"] == "gpu-node-9"
    kl = _events(con, "kubelet_journal.log")
    assert _line(kl, 4)["kind"] == "scheduling_error" and _line(kl, 4)["pod"] == "trainer-worker-5"
    assert _line(kl, 7)["container"] == "pytorch" and _line(kl, 7)["kind"] == "pod_event"
    assert _line(kl, 8)["kind"] is None
    assert all(e["ts"] is not None for e in kl)
    sl = _events(con, "node_syslog.log")
    assert _line(sl, 1)["kind"] == "host_oom" and _line(sl, 1)["program"] == "containerd"
    assert _line(sl, 5)["kind"] == "host_oom" and _line(sl, 5)["pid"] == 48213
    assert all(e["host"] == "gpu-node-7" and e["ts"] is not None for e in sl)
    dp = _events(con, "device_plugin.log")
    assert _line(dp, 5)["kind"] == "gpu_unhealthy"
    un = _facts(con, "gpu_unhealthy", "device_plugin.log")
    assert any(r["xid"] == 79 and r["gpu_uuid"].startswith("GPU-680c9403") for r in un)


def test_k8s_events_json(samples_con):
    con = samples_con
    js = _events(con, "events.json")
    foreign = {e["pattern"] for e in js if e["format"] not in MINE}
    if foreign:
        # A multi-line block of another format that starts at any lone '{' (sacct.json, for 'sacct --json')
        # takes the whole document before line patterns run; block starts are single-line regexes, so neither
        # format can tell a kubectl document from a sacct one by its first line.
        pytest.xfail(f"kubectl -o json document taken by {sorted(foreign)}")
    reason = next(e for e in js if e["pattern"] == "kubectl_get.json_reason")
    assert reason["kind"] == "host_oom" and str(reason["ts"]) == "2026-03-02 03:17:41"
    f = _facts(con, "kube_json_field", "events.json")
    assert {"reason", "message", "name", "lastTimestamp"} <= {r["key"] for r in f}
