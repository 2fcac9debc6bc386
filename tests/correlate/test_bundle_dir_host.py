"""A bundle kept in a directory named like a host (gpu43/, a ticket's node name) is read as the same bundle in
any other directory: the directory's name is a path hint for the files that name no host, and it must not
outvote the node a pod's own lines name (kubectl describe's `Node:`), or the pod's log lines lose their node."""

from __future__ import annotations

from .fixtures import generated_diagnosis, generated_run


def _attempts(doc: dict) -> list[tuple]:
    return [(a["start"], a["end"]) + tuple((a.get("verdict") or {}).get(f) for f in
                                           ("kind", "rank", "local_rank", "host", "pod", "time"))
            for a in doc["attempts"]]


def test_pod_bundle_in_host_named_directory(tmp_path, catalog):
    _, plain = generated_diagnosis(tmp_path / "a", "hang", 42, "k8s_cri", catalog)
    _, hosty = generated_diagnosis(tmp_path / "b", "hang", 42, "k8s_cri", catalog, dirname="gpu43")
    assert _attempts(hosty) == _attempts(plain)
    assert hosty["verdict"]["host"] == plain["verdict"]["host"] != "gpu43"


def test_describe_node_outvotes_directory_name(tmp_path, catalog):
    """Every line of a `kubectl describe pod` dump after its `Node:` line is on that node, not on the directory."""
    truth, con = generated_run(tmp_path, "hang", 42, "k8s_cri", catalog, dirname="gpu43")
    try:
        rows = con.execute("""
            SELECT f.path, e.host, count(*) FROM events e JOIN files f USING (file_id)
            WHERE f.path LIKE '%kubectl_describe_pod_%'
              AND e.line > (SELECT min(n.line) FROM events n WHERE n.file_id = e.file_id AND n.message LIKE 'Node:%')
            GROUP BY ALL ORDER BY ALL""").fetchall()
    finally:
        con.close()
    assert len(rows) == 2   # the run's two pods, each on one host
    node_of = {pod: node for node, pod in truth["pods"].items()}
    for path, host, _ in rows:
        pod = path.rsplit("kubectl_describe_pod_", 1)[1].removesuffix(".txt")
        assert host == node_of[pod]
