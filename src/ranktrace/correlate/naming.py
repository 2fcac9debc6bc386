"""Whom the verdict names, and how sure it may be for that (issue 28, deliverable 3).

The engineer needs the rank, host, pod, pid or GPU: a verdict that names nobody says what
happened but not to whom, and is not above the cap of queries/data/verdict_naming.toml. A name
the text cut off ('ON ...', 'gpu-node-0...') is not a name. A scheduler's act (a time limit,
scancel, a requeue) names the job and node the scheduler's line gives. The summary says whom the
text shows and what it lacks ("rank 3 (no host in the text)").
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache

from ..resources import data_dir

LABEL = {"rank": "rank", "pid": "pid", "pod": "pod", "host": "host", "gpu": "GPU", "job": "job id"}


@dataclass(frozen=True)
class Rules:
    exempt: frozenset[str]
    wants: dict[str, list[tuple[str, ...]]]
    nobody_cap: float
    nobody_cols: tuple[str, ...]
    cut_cap: float
    cut: re.Pattern
    cut_cols: tuple[str, ...]
    scheduler_kinds: frozenset[str]
    requeue_cap: float
    requeue: re.Pattern
    words_cap: float
    words_reject: re.Pattern
    words_kinds: dict[str, tuple[str, ...]]
    words: tuple[tuple[str, re.Pattern, re.Pattern | None], ...]
    text_prefilter: str
    text_lines: int
    text_columns: tuple[str, ...]
    text_not_kinds: frozenset[str]


@lru_cache(maxsize=1)
def rules() -> Rules:
    d = tomllib.loads((data_dir("queries") / "data" / "verdict_naming.toml").read_text())
    return Rules(exempt=frozenset(d["exempt"]),
                 wants={k: [tuple(g.split("|")) for g in v] for k, v in d["wants"].items()},
                 nobody_cap=d["nobody"]["cap"], nobody_cols=tuple(d["nobody"]["columns"]),
                 cut_cap=d["cut"]["cap"], cut=re.compile(d["cut"]["regex"]), cut_cols=tuple(d["cut"]["columns"]),
                 scheduler_kinds=frozenset(d["scheduler"]["kinds"]),
                 requeue_cap=d["requeue"]["cap"], requeue=re.compile(d["requeue"]["regex"]),
                 words_cap=d["words"]["cap"], words_reject=re.compile(d["words"]["reject"]),
                 words_kinds={k: tuple(v) for k, v in d["words"]["kinds"].items()},
                 words=tuple((w["column"], re.compile(w["regex"]), re.compile(w["unless"]) if w.get("unless") else None)
                             for w in d["words"]["name"]),
                 text_prefilter=d["text_names"]["prefilter"], text_lines=d["text_names"]["lines"],
                 text_columns=tuple(d["text_names"]["columns"]),
                 text_not_kinds=frozenset(d["text_names"]["not_kinds"]))


def who(v: dict) -> str:
    """The culprit in words: 'rank 3 (local rank 1) on n2', 'local rank 4', 'pod x', 'pid 7 on n2',
    'GPU 0000:3b:00 on n2', 'node n2', else 'the job'."""
    parts = []
    if v.get("rank") is not None:
        parts.append(f"rank {v['rank']}" + (f" (local rank {v['local_rank']})" if v.get("local_rank") is not None else ""))
    elif v.get("local_rank") is not None:
        parts.append(f"local rank {v['local_rank']}")
    if v.get("pod"):
        parts.append(f"pod {v['pod']}")
    if not parts and v.get("pid") is not None:
        parts.append(f"pid {v['pid']}")
    if not parts and v.get("gpu") is not None:
        parts.append(f"GPU {v['gpu']}")
    if v.get("host"):
        parts.append(f"on {v['host']}" if parts else f"node {v['host']}")
    return " ".join(parts) or "the job"


def _job(con, event_ids: list[int]) -> tuple[str | None, list[str]]:
    """The job (or step) the cause lines name, and their texts."""
    if not event_ids:
        return None, []
    rs = con.execute("SELECT job_id, step_id, coalesce(message, raw) FROM events WHERE event_id IN (SELECT unnest(?)) "
                     "ORDER BY event_id", [list(event_ids)]).fetchall()
    job = next((f"step {s}" if s else f"job {j}" for j, s, _ in rs if j or s), None)
    return job, [t or "" for *_, t in rs]


def words_named(texts: list[str], columns: tuple[str, ...]) -> dict[str, str]:
    """What the words of `texts` (the verdict's cause lines) name in each of `columns`, by the generic
    forms of verdict_naming.toml [words]: a column named with two different values names none."""
    return {c: next(iter(vals)) for c, vals in words_seen(texts, columns).items() if len(vals) == 1}


def words_seen(texts: list[str], columns: tuple[str, ...]) -> dict[str, set[str]]:
    """Every value the words of `texts` name in each of `columns` (verdict_naming.toml [words])."""
    r = rules()
    seen: dict[str, set[str]] = {}
    for col, rx, unless in r.words:
        if col not in columns:
            continue
        for t in texts:
            if unless is not None and unless.search(t):
                continue
            for m in rx.finditer(t):
                val = m.group(col)
                if val and not r.words_reject.match(val):
                    seen.setdefault(col, set()).add(val.lower() if col == "gpu" else val)
    return seen


def one_identity(rows: list[dict], columns: tuple[str, ...]) -> dict:
    """The identity `rows` (lines of one story: a verdict's unread failure lines) agree on: when one
    row's values in `columns` cover every other row's (the others name a part of it or nobody), that
    row's; else each column all rows name with one value. A line that names nobody does not contradict
    one that names its process: a framework's closing line ('Exception: WorkerProc initialization
    failed', 'Killed') is written by the parent, the failed worker's own lines carry its prefix."""
    named = [{c: r[c] for c in columns if r.get(c) not in (None, "")} for r in rows]
    some = [n for n in named if n]
    if some:
        top = max(some, key=len)
        if all(top.get(c) == val for n in some for c, val in n.items()):
            return dict(top)
    out = {}
    for c in columns:
        vals = {n.get(c) for n in named}
        if len(vals) == 1 and None not in vals:
            out[c] = vals.pop()
    return out


def put_words(v: dict, texts: list[str], columns: tuple[str, ...]) -> dict[str, str]:
    """Fill `columns` of `v` from what the words of `texts` name (words_named; rank and pid as numbers).
    Returns what it filled (said_words puts it in words)."""
    got = words_named(texts, columns)
    for c, val in got.items():
        v[c] = int(val) if c in ("rank", "pid") else val
    return got


def said_words(got: dict[str, str]) -> str:
    """'rank 3, pid 1877': what put_words read, for a verdict's `missing`."""
    return ", ".join(f"{LABEL[c]} {val}" for c, val in got.items())


def linked_host(con, v: dict, cause_ids: list[int]) -> dict[str, str]:
    """The node the identity layer read on the verdict's own cause lines (fact table identity_found), when they
    name one: a token of parsers/identity.toml whose host is a link (another machine than the one that wrote the
    line: srun's 'srun: error: NODE: task N: ...', Flux's '... on broker NODE (rank N)', Open MPI's '... on node
    NODE exited on signal') names the node of the process the line says failed. Fills v's host; returns it."""
    from .util import table_exists
    if not table_exists(con, "identity_found"):
        return {}
    hosts = {h for (h,) in con.execute("SELECT DISTINCT host FROM identity_found WHERE event_id IN (SELECT unnest(?)) "
                                       "AND host IS NOT NULL", [list(cause_ids)]).fetchall()}
    hosts = {h for h in hosts if not rules().words_reject.match(h)}
    if len(hosts) != 1:
        return {}
    v["host"] = hosts.pop()
    return {"host": v["host"]}


def from_words(con, v: dict, cause_ids: list[int], missing: list[str]) -> dict[str, str]:
    """Fill the columns `v` left empty from the words of its own cause lines (words_named), for the
    kinds verdict_naming.toml [words] lists; a pid or rank read so is joined to the rest of its
    identity as a finding's is (identity.lookup). Caps `v`'s confidence and says what it read.
    Returns what it filled."""
    r = rules()
    allowed = r.words_kinds.get(v.get("kind"), ())
    cols = tuple(c for c in allowed if v.get(c) in (None, ""))
    if not cols or not cause_ids:
        return {}
    texts = [t for (t,) in con.execute("SELECT raw FROM events WHERE event_id IN (SELECT unnest(?)) ORDER BY event_id",
                                        [list(cause_ids)]).fetchall() if t]
    got = linked_host(con, v, cause_ids) if "host" in cols else {}
    got.update(put_words(v, texts, tuple(c for c in cols if c not in got)))
    if not got:
        return {}
    from . import identity as ident
    more = ident.lookup(con, host=v.get("host"), pid=v.get("pid"), rank=v.get("rank"),
                        local_rank=v.get("local_rank"), pod=v.get("pod"))
    for c in ("host", "rank", "local_rank", "pid", "pod", "gpu"):
        if v.get(c) in (None, "") and more.get(c) not in (None, "") and c in allowed:
            v[c] = more[c]
    if v.get("confidence") is not None and v["confidence"] > r.words_cap:
        v["confidence"] = r.words_cap
    missing.append(f"the culprit's own line in a format ranktrace knows: {said_words(got)} read from the words of "
                   "the cause line")
    return got


def text_names(con, v: dict, missing: list[str]) -> dict[str, str]:
    """What the whole text names only once, for a column the verdict left empty: a paste from one machine
    or one process names it where the shell or a tool put it (its prompt 'user@gpu7:~$', 'hostname=gpu7',
    one line's identity) and not on the failure lines. A column of [text_names] columns is filled only
    when every line's identity and every word of the text for it (verdict_naming.toml [words], read on the
    lines of [text_names] prefilter) name one value, and only for the kinds whose words may name it and
    whose culprit writes (not a node failure's: the text is a survivor's), a host not when the verdict
    names a pod. Caps v's confidence as words do and says so in `missing`; returns what it filled."""
    r = rules()
    allowed = () if v.get("kind") in r.text_not_kinds else r.words_kinds.get(v.get("kind"), ())
    cols = tuple(c for c in r.text_columns if c in allowed and v.get(c) in (None, "")
                 and not (c == "host" and v.get("pod")))
    if not cols:
        return {}
    ident = con.execute(f"SELECT {', '.join(f'list(DISTINCT {c}::VARCHAR)' for c in cols)} FROM aligned_groups").fetchone()
    seen = {c: {str(x).lower(): str(x) for x in vals if x is not None} for c, vals in zip(cols, ident)}
    cols = tuple(c for c in cols if len(seen[c]) <= 1)
    if not cols:
        return {}
    texts = [t for (t,) in con.execute("SELECT raw FROM aligned_events WHERE regexp_matches(raw, ?) LIMIT ?",
                                       [r.text_prefilter, r.text_lines]).fetchall()]
    for c, vals in words_seen(texts, cols).items():
        for x in vals:
            seen[c].setdefault(x.lower(), x)
    got = {c: next(iter(seen[c].values())) for c in cols if len(seen[c]) == 1}
    if not got:
        return {}
    for c, val in got.items():
        v[c] = int(val) if c in ("rank", "pid") else val
    if v.get("confidence") is not None and v["confidence"] > r.words_cap:
        v["confidence"] = r.words_cap
    missing.append(f"the failed process's own lines naming it: {said_words(got)} the only one the text names")
    return got


def _either(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def review(con, v: dict, cause_ids: list[int], missing: list[str]) -> str:
    """Check whom `v` names; drop names that are only a cut mark, cap v's confidence by the rules,
    add what is missing to `missing`. Returns the summary's words for the culprit: whom the text
    shows and, in brackets, what it lacks."""
    r = rules()
    kind = v.get("kind")
    if kind in r.exempt:
        return who(v)
    caps: list[tuple[float, str]] = []
    cut = []
    for c in r.cut_cols:
        val = v.get(c)
        if val and r.cut.search(str(val)):
            cut.append(c)
            if not re.search(r"\w", r.cut.sub("", str(val))):
                v[c] = None   # only the mark: it names nobody
            caps.append((r.cut_cap, f"the {LABEL[c]}'s name: the text is cut where it names it ({val!r})"))
    job, texts = (None, [])
    if kind in r.scheduler_kinds:
        job, texts = _job(con, cause_ids)
        if any(r.requeue.search(t) for t in texts):
            caps.append((r.requeue_cap, "why the job was requeued (a node failure, a preemption, scontrol requeue): "
                                        "slurmctld's log / sacct -D of the job"))
        elif any(r.cut.search(t) for t in texts) and not cut:
            caps.append((r.cut_cap, "the scheduler's whole line: it is cut"))
    have = {c for c in LABEL if c != "job" and v.get(c) not in (None, "")}
    if job:
        have.add("job")
    named = bool(have & set(r.nobody_cols)) or (kind in r.scheduler_kinds and "job" in have)
    if not named:
        caps.append((r.nobody_cap, "who: no line names the rank, host, pod, pid or GPU that failed"))
    for cap, what in caps:
        if v.get("confidence") is not None and v["confidence"] > cap:
            v["confidence"] = cap
        if what not in missing:
            missing.append(what)
    lacks = [_either([LABEL[c] for c in g]) for g in r.wants.get(kind, r.wants["default"]) if not set(g) & have]
    words = who(v) if named or v.get("local_rank") is not None else "nobody named"
    if job:
        words = f"{job} {words.replace('node ', 'on node ', 1)}" if words != "the job" else job
    if cut:
        words += " (" + ", ".join(f"{LABEL[c]} cut off" for c in cut) + " in the text)"
    elif lacks:
        words += f" (no {' and no '.join(lacks)} in the text)"
    return words
