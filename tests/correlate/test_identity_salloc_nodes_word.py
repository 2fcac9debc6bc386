"""(issue 28, session 31) Salloc's 'Nodes X are ready for job' is a host word. (Naming the one host or pod the whole text names when no
line reads like a failure, clean_end.no_failure_verdict, was tried and backed out: on the HELD OUT excerpts it
named one wrong host and no right one; benchmarks/README.md, session 31.)"""

from __future__ import annotations

import pytest

from ranktrace.correlate.naming import words_named


@pytest.mark.parametrize("text,want", [
    ("salloc: Nodes gpu-a07 are ready for job", {"host": "gpu-a07"}),
    ("srun: Nodes dgx-b12.cluster are ready for job", {"host": "dgx-b12.cluster"}),
    ("salloc: Nodes gpu[1-2] are ready for job", {}),     # a hostlist: two nodes, none named
    ("salloc: Nodes gpu1,gpu2 are ready for job", {}),
])
def test_salloc_names_the_node_of_a_one_node_allocation(text, want):
    assert words_named([text], ("host",)) == want
