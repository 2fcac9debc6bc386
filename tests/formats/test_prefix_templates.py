"""torchrun's custom line prefixes ('[3]:', '[node1]:[3]:') are peeled, and the failure summary's bare '[1]:'
entry headers are not (their block must stay whole: real_log_shapes 040/041)."""

from ranktrace.formats import load_catalog
from ranktrace.samples import run_text

CAT = load_catalog(check_samples=False)


def _ev(text):
    return run_text(CAT, text).events.to_dicts()


def test_rank_and_host_prefixes():
    e = _ev("[node1]:[3]:2025-10-06 23:05:10,139 - INFO - __main__ - step 100 | loss 2.3451")[0]
    assert (e["host"], e["rank"], e["kind"]) == ("node1", 3, "progress")
    assert e.get("local_rank") is None          # '[node1]:' is not role 'node' + local rank 1
    e = _ev("[12]:2025-10-06 23:05:10,139 - INFO - __main__ - step 100 | loss 2.3451")[0]
    assert (e["rank"], e["kind"]) == (12, "progress")


def test_failure_summary_entry_headers_are_not_prefixes():
    text = """============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2024-05-01_10:00:01
  host      : gpu177.cluster.local
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 15755)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
------------------------------------------------------------"""
    res = run_text(CAT, text)
    assert not any(e["rank"] == 1 and (e["envelopes"] or "").endswith("elastic_prefix_template")
                   for e in res.events.to_dicts())
    entries = res.facts["torch_failure_entry"].to_dicts()
    assert [(e["idx"], e["rank"], e["pid"]) for e in entries] == [(1, 1, 15755)]
