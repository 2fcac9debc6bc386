import pytest

from ranktrace.correlate.hostlist import compress_ranges, expand_hostlist, expand_ranges


@pytest.mark.parametrize("spec,want", [
    ("n[1-4]", ["n1", "n2", "n3", "n4"]),
    ("gpu-[01-03,12]", ["gpu-01", "gpu-02", "gpu-03", "gpu-12"]),
    ("a,b[1-2]", ["a", "b1", "b2"]),
    ("node7", ["node7"]),
    ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
    ("gpu-[08-10]", ["gpu-08", "gpu-09", "gpu-10"]),
    ("c1-n[074,100]", ["c1-n074", "c1-n100"]),
])
def test_expand_hostlist(spec, want):
    assert expand_hostlist(spec) == want


def test_expand_hostlist_rejects_garbage():
    with pytest.raises(ValueError):
        expand_hostlist("n[4-1]")
    with pytest.raises(ValueError):
        expand_hostlist("n[a-b]")


def test_ranges_and_gap():
    got = expand_ranges("0-57,59-63")
    assert len(got) == 63 and 58 not in got and got[0] == 0 and got[-1] == 63
    assert expand_ranges("3") == [3]
    assert compress_ranges([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    with pytest.raises(ValueError):
        expand_ranges("5-2")
