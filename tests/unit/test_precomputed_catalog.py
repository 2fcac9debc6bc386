"""The bundled catalog precomputed at build time (formats.precomputed) is
used only when it is the catalog the files give, and never stands in for a
check: an edited file makes it stale, and a stale one is ignored."""

import json
import shutil

import pytest

from ranktrace import formats
from ranktrace.formats import FormatError, load_catalog
from ranktrace.ingest import core

from rt_testlib import REPO


@pytest.fixture
def parsers(tmp_path, monkeypatch):
    """A copy of parsers/ as the bundled directory, and where its precomputed catalog goes."""
    d = tmp_path / "parsers"
    shutil.copytree(REPO / "parsers", d)
    artifact = tmp_path / "catalog.pickle"
    monkeypatch.setattr(formats, "data_dir", lambda name: d)
    monkeypatch.setattr(formats, "PRECOMPUTED", artifact)
    monkeypatch.delenv(formats.FORMATS_ENV, raising=False)
    return d, artifact


def _fresh(d):
    return formats._load_dirs([d])[3]


def test_precomputed_is_the_catalog_the_files_give(parsers):
    d, artifact = parsers
    formats.write_precomputed(artifact, d)
    got = formats.precomputed(d, artifact)
    assert got is not None
    cat, fresh = got["catalog"], _fresh(d)
    assert cat == fresh   # every format, envelope, kind, pattern (in precedence order), rule, fact, warning
    assert [f.path for f in cat.formats] == [f.path for f in fresh.formats]
    assert [e.path for e in cat.envelopes] == [e.path for e in fresh.envelopes]
    assert str(cat.formats[0].path).startswith(str(d))
    assert cat.fact_tables == fresh.fact_tables
    assert core.spec_json(cat) == json.dumps(core.spec(fresh)) == json.dumps(core.spec(cat))
    assert load_catalog() == fresh
    # fresh objects every time: a caller changing its catalog changes no other's
    assert load_catalog() is not load_catalog()


def test_a_stale_precomputed_catalog_is_ignored(parsers):
    d, artifact = parsers
    formats.write_precomputed(artifact, d)
    path = d / "formats" / "nccl.toml"
    text = path.read_text()
    old = formats.load_format(path).description
    path.write_text(text.replace(f'description = "{old}"', 'description = "edited after the build"', 1))
    assert formats.precomputed(d, artifact) is None
    cat = load_catalog()
    assert cat.format("nccl").description == "edited after the build"
    assert cat == _fresh(d)


def test_a_new_file_makes_it_stale(parsers):
    d, artifact = parsers
    formats.write_precomputed(artifact, d)
    shutil.copy(d / "formats" / "nccl.toml", d / "formats" / "nccl_copy.toml")
    assert formats.precomputed(d, artifact) is None
    with pytest.raises(FormatError, match="duplicate format names"):
        load_catalog()


def test_an_edited_sample_that_no_longer_matches_is_still_rejected(parsers):
    d, artifact = parsers
    formats.write_precomputed(artifact, d)
    path = d / "envelopes" / "srun_label.toml"
    env = formats.load_envelope(path)
    sample = env.samples[0][0]
    path.write_text(path.read_text().replace(sample, "@@ no envelope here @@", 1))
    with pytest.raises(FormatError, match=r"srun_label.*sample does not match: '@@ no envelope here @@'"):
        load_catalog()


def test_a_format_without_samples_is_still_rejected(parsers):
    d, artifact = parsers
    formats.write_precomputed(artifact, d)
    path = d / "formats" / "ucx.toml"
    path.write_text(path.read_text().split("[[sample]]")[0])
    with pytest.raises(FormatError, match=r"ucx.toml.*must have samples"):
        load_catalog()


def test_a_catalog_that_does_not_load_is_not_precomputed(parsers):
    d, artifact = parsers
    path = d / "formats" / "ucx.toml"
    path.write_text(path.read_text().split("[[sample]]")[0])
    with pytest.raises(FormatError, match="must have samples"):
        formats.write_precomputed(artifact, d)
    assert not artifact.exists()


def test_the_loader_code_is_part_of_the_fingerprint(parsers, tmp_path, monkeypatch):
    d, artifact = parsers
    formats.write_precomputed(artifact, d)
    pkg = tmp_path / "pkg"
    for rel in formats._CODE:
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / "src" / "ranktrace" / rel, pkg / rel)
    monkeypatch.setattr(formats, "__file__", str(pkg / "formats.py"))
    assert formats.precomputed(d, artifact) is not None
    (pkg / "ingest" / "dispatch.py").write_text((pkg / "ingest" / "dispatch.py").read_text() + "\n# edited\n")
    assert formats.precomputed(d, artifact) is None


def test_garbage_or_another_version_is_ignored(parsers):
    d, artifact = parsers
    artifact.write_bytes(b"not a catalog")
    assert formats.precomputed(d, artifact) is None
    formats.write_precomputed(artifact, d)
    data = artifact.read_bytes()
    artifact.write_bytes(data.replace(b"catalog 1\n", b"catalog 0\n", 1))
    assert formats.precomputed(d, artifact) is None
    artifact.write_bytes(data[:len(data) // 2])   # the fingerprint matches, the rest is cut
    assert formats.precomputed(d, artifact) is None
    assert load_catalog() == _fresh(d)


def test_user_formats_are_checked_and_ordered_as_without_it(parsers, tmp_path, monkeypatch):
    d, artifact = parsers
    user = tmp_path / "user"
    user.mkdir()
    (user / "generic.toml").write_text('name = "generic"\n[[pattern]]\nid = "any"\n'
                                       "regex = '''^(?P<word>\\w+) (?P<message>.*)$'''\n"
                                       '[[sample]]\ntext = "hello world"\n')
    monkeypatch.setattr(formats, "PRECOMPUTED", tmp_path / "none.pickle")
    without = load_catalog([user], check_samples=False)
    formats.write_precomputed(artifact, d)
    monkeypatch.setattr(formats, "PRECOMPUTED", artifact)
    assert formats.precomputed(d, artifact) is not None
    with_it = load_catalog([user], check_samples=False)
    assert with_it == without
    assert [p.key for p in with_it.patterns].index("generic.any") > 0
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "mytool.toml").write_text('name = "mytool"\n[[pattern]]\nid = "line"\nregex = "^MYTOOL (?P<message>.*)$"\n'
                                     '[[sample]]\ntext = "OTHER it exploded"\n')
    with pytest.raises(FormatError, match="claimed by nothing"):
        load_catalog([bad])


def test_a_kept_spec_is_not_used_for_a_changed_catalog(parsers):
    d, artifact = parsers
    formats.write_precomputed(artifact, d)
    cat = load_catalog()
    kept = core.spec_json(cat)
    cat.patterns = cat.patterns[:-1]
    assert core.spec_json(cat) == json.dumps(core.spec(cat)) != kept


def test_the_engine_is_compiled_once_when_threads_ask_at_once(monkeypatch):
    import threading
    import time

    import ranktrace._core as native
    cat = load_catalog(check_samples=False)
    made, real = [], native.Engine

    def slow_engine(spec):
        made.append(spec)
        time.sleep(0.05)    # the others ask while this one compiles
        return real(spec)
    monkeypatch.setattr(native, "Engine", slow_engine)
    got = []
    threads = [threading.Thread(target=lambda: got.append(core.engine(cat))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and len(got) == 4 and all(e is got[0] for e in got)
    assert made[0] == json.dumps(core.spec(cat))
