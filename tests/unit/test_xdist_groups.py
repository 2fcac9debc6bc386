"""The suite's worker groups (tests/conftest.py) really reach pytest-xdist.

CI once ran two e2e tests on two workers at once, each starting the host's
one Slurm cluster, because the group marks were added after xdist read them.
"""

import pytest


def test_loadgroup_sees_this_modules_group(request):
    if not request.config.getvalue("loadgroup"):
        pytest.skip("not run with --dist loadgroup (scripts/test.sh does)")
    # xdist suffixes a grouped test's id with its group; an ungrouped one has none.
    assert request.node.nodeid.endswith("@tests/unit/test_xdist_groups.py")
