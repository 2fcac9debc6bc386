"""A time a collector wrote is on the collector's clock (issue 27's clocks, found on a new layout at first sight).

`mpirun --tag-output --timestamp-output` puts the time mpirun received a line before every line of every rank
(orte_iof_base_write_output): mpirun's clock, on the first node. Read as each rank's own time, every rank's lines
agreed with rank 0's (the progress anchors said the nodes' clocks were equal), while each node's slurmd log ran
on the node's own clock, minutes off: attempts were cut in the wrong places and verdicts lost (first sight of
gen_longrun's mpirun_slurm layout: 29/35 failed attempts right where stamped, 17/17 where not). Now an envelope
says `clock = "collector"`: a line's own time wins over it, and a line with none keeps it as ts_kind 'collector',
no anchor of its host's, retold from the timed line before it in a console fed from several clocks."""

from __future__ import annotations

from ranktrace.correlate import diagnose

from .fixtures import generated_run


def test_a_console_stamped_by_mpirun_keeps_each_nodes_clock(tmp_path, catalog):
    truth, con = generated_run(tmp_path, "exception", 3, "mpirun_slurm", catalog)
    offsets = truth["clock_offsets_s"]
    assert offsets["dgx-h100-011"] - offsets["dgx-h100-012"] > 300          # the two nodes, 5 minutes apart
    out = sorted((tmp_path / "run").glob("slurm-*.out"))[0].read_text()
    assert out.startswith("2026-") and "Z: [1,0]<stdout>:" in out.splitlines()[0]   # stamped by mpirun
    doc = diagnose(con)
    est = dict(con.execute("SELECT host, offset_s FROM clock_offsets").fetchall())
    con.close()
    assert abs((est["dgx-h100-011"] - est["dgx-h100-012"]) - (offsets["dgx-h100-011"] - offsets["dgx-h100-012"])) < 5, est
    assert len(doc["attempts"]) == len(truth["attempts"]), [(a["start"], a["outcome"]) for a in doc["attempts"]]
    want = truth["attempts"][2]["verdict"]
    got = doc["attempts"][2]["verdict"]
    assert (got["kind"], got["rank"], got["host"]) == (want["kind"], want["rank"], want["host"]), got
