"""Small helpers shared by the correlator: SQL files, defensive fact access, times."""

from __future__ import annotations

import datetime as dt
import re
from functools import lru_cache
from pathlib import Path

import duckdb

from ..resources import data_dir
from ..store import table_exists  # noqa: F401  (correlate's modules import it from here)


@lru_cache(maxsize=None)
def _sql_text(path: str) -> str:
    return Path(path).read_text()


def sql_file(rel: str) -> str:
    """The text of queries/<rel> (e.g. 'detect/first_cause.sql')."""
    return _sql_text(str(data_dir("queries") / rel))


def sql_header(text: str) -> dict[str, str]:
    """The `-- key: value` comment header of a SQL file."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = re.match(r"^--\s*(\w+)\s*:\s*(.*)$", line)
        if m:
            out.setdefault(m.group(1), m.group(2).strip())
        elif line.strip() and not line.startswith("--"):
            break
    return out


def has_rows(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """A table of that name in sight (table_exists) with a row."""
    return table_exists(con, name) and con.execute(f"SELECT EXISTS (SELECT 1 FROM {name})").fetchone()[0]


def columns(con: duckdb.DuckDBPyConnection, name: str) -> set[str]:
    """The columns of table or view `name` (duckdb_columns(): information_schema.columns over it costs twice)."""
    return {r[0] for r in con.execute(
        "SELECT column_name FROM duckdb_columns() WHERE table_name = ?", [name]).fetchall()}


def has_columns(con, name: str, *cols: str) -> bool:
    return table_exists(con, name) and set(cols) <= columns(con, name)


def rows(con: duckdb.DuckDBPyConnection, sql: str, params=None) -> list[dict]:
    cur = con.execute(sql, params or {})
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def iso(t) -> str | None:
    """UTC ISO 8601 with milliseconds and Z (the verdict contract)."""
    if t is None:
        return None
    if isinstance(t, (int, float)):
        t = dt.datetime.fromtimestamp(t, dt.timezone.utc).replace(tzinfo=None)
    if t.tzinfo is not None:
        t = t.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def short(text: str | None, n: int = 200) -> str:
    s = (text or "").replace("\r", "").strip()
    s = s.splitlines()[-1] if "\n" in s and len(s) > n else s
    s = " ⏎ ".join(p.strip() for p in s.splitlines()) if "\n" in s else s
    return s if len(s) <= n else s[: n - 1] + "…"


def ensure_kind_catalog(con: duckdb.DuckDBPyConnection) -> None:
    """Temp table `kind_catalog` (kind, role, failure): the store's `kinds` table when it is
    filled, else parsers/kinds*.toml (an older or partial store still gets failure kinds)."""
    n = 0
    if table_exists(con, "kinds"):
        n = con.execute("SELECT count(*) FROM kinds").fetchone()[0]
    if n:
        con.execute("CREATE OR REPLACE TEMP TABLE kind_catalog AS SELECT kind, role, failure FROM kinds")
        return
    from ..formats import load_kinds
    kinds = {}
    for p in sorted(data_dir("parsers").glob("kinds*.toml")):
        kinds.update(load_kinds(p))
    con.execute("CREATE OR REPLACE TEMP TABLE kind_catalog (kind VARCHAR, role VARCHAR, failure VARCHAR)")
    if kinds:
        con.executemany("INSERT INTO kind_catalog VALUES (?, ?, ?)",
                        [[k.name, k.role, k.failure] for k in kinds.values()])


def on(host: str | None) -> str:
    """' on HOST' for a sentence about a rank or a launcher; '' when the host is unknown."""
    return f" on {host}" if host else ""


def platforms(con) -> set[str]:
    """Which schedulers the store shows: slurm (job ids, Slurm formats), k8s (pods, kubelet...)."""
    # Every column read is a class's (event_classes): the classes that have lines answer it
    # without a pass over the lines' text (one over their class ids).
    # (the classes with lines: as identity.build_base found them for this diagnosis, else read now)
    have = "temp.line_classes" if table_exists(con, "line_classes") else "(SELECT DISTINCT class_id FROM event_rows)"
    r = con.execute(f"""
        SELECT count(*) FILTER (WHERE job_id IS NOT NULL OR format IN ('sacct', 'scontrol', 'slurm_daemon',
                                'slurm_jobcomp', 'slurm_srun', 'slurm_stepd')) AS slurm,
               count(*) FILTER (WHERE pod IS NOT NULL OR format IN ('kubelet_klog', 'kubectl_describe',
                                'containerd', 'nvidia_device_plugin')
                                -- a lone '{{' of any JSON dump is no sign of Kubernetes
                                OR (format = 'kubectl_get' AND pattern <> 'kubectl_get.json_punct')) AS k8s
        FROM event_classes JOIN {have} USING (class_id)""").fetchone()
    return {p for p, n in zip(("slurm", "k8s"), r) if n}


def top_score(doc: dict, own: float) -> float:
    """The score of an explanation that takes over the verdict and contains the candidates it displaces
    (controlplane.py, stranded.py): its own, or the highest of theirs, so the verdict never ranks below
    a hypothesis listed under it."""
    return max([own] + [h.get("score") or 0.0 for h in doc.get("hypotheses") or []])


# What a stored set (clock.line_set, kept_rows, the anchors) is made of, said in its stamp: the SQL texts
# and the Python that writes its SQL or the tables it reads. A reader takes the store's rows only while
# these are as they were. The code is compared as its syntax tree, comments and docstrings left out, and
# only the functions named (with the constants they read): the whole text of clock.py, identity.py and
# attempts.py, stamped before, made any edit of those modules (a comment, an unrelated function) send
# every reader after an upgrade back to every line (+2.5 CPU-s of 6 on the 1 GB corpus' store).
def _tree(source: str) -> str:
    """The syntax tree of `source` (dedented) with its docstrings dropped: what the code does, not how
    it is laid out or commented."""
    import ast
    import textwrap
    tree = ast.parse(textwrap.dedent(source))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, include_attributes=False)


def _named_values(fn, tree_src: str) -> list[str]:
    """The values of the plain constants (str, numbers, tuples of them, ...) `fn` reads by name: module
    globals and names it imports in its body (`from .clock import TIMED`); functions and modules it
    names are not followed (name them to made_of when their code matters)."""
    import ast
    import textwrap
    plain = (str, int, float, bool, bytes, tuple, frozenset)
    out = []
    tree = ast.parse(textwrap.dedent(tree_src))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            v = fn.__globals__.get(node.id)
            if node.id in fn.__globals__ and isinstance(v, plain):
                out.append(f"{node.id}={v!r}")
        elif isinstance(node, ast.ImportFrom) and node.level:
            mod = _imported_from(fn.__module__, node)
            for a in node.names:
                v = getattr(mod, a.name, None)
                if isinstance(v, plain):
                    out.append(f"{node.module}.{a.name}={v!r}")
    return sorted(set(out))


def _imported_from(module_name: str, node):
    """The module a relative `from . import ...` (an ast.ImportFrom) in module `module_name` imports from."""
    import importlib
    pkg = module_name.rsplit(".", node.level)[0]
    return importlib.import_module(f"{pkg}.{node.module}" if node.module else pkg)


@lru_cache(maxsize=None)
def _code_text(p) -> str:
    """What made_of hashes of a function or module (kept: diagnose stamps three sets with the same code)."""
    import inspect
    import marshal
    import types
    fn = p if isinstance(p, types.ModuleType) else inspect.unwrap(p)
    try:
        src = inspect.getsource(fn)
    except (OSError, TypeError):   # no source shipped (bytecode only): its compiled form, line numbers and all
        code = fn.__spec__.loader.get_code(fn.__name__) if isinstance(fn, types.ModuleType) else fn.__code__
        return marshal.dumps(code).hex()
    if isinstance(fn, types.ModuleType):
        return _tree(src)
    return f"{fn.__module__}.{fn.__qualname__}\0{_tree(src)}\0" + "\0".join(_named_values(fn, src))


def made_of(*parts) -> str:
    """A digest of what a stored set is made of: each part a text (its SQL, as it runs), a function (its
    syntax tree and the constants it reads by name; a wrapper of functools.wraps counts as what it
    wraps) or a module (its syntax tree)."""
    import hashlib
    import types
    h = hashlib.sha256()
    for p in parts:
        if isinstance(p, str):
            text = p
        elif isinstance(p, types.ModuleType) or callable(p):
            text = _code_text(p)
        else:
            raise TypeError(f"made_of: {p!r} is no SQL text, function or module")
        h.update(hashlib.sha256(text.encode()).digest())
    return h.hexdigest()


@lru_cache(maxsize=None)
def with_imports(module) -> tuple:
    """`module` and what it imports from its own package (the functions, modules and constants named in
    its `from . import ...` statements, in functions too), one level deep: the parts of made_of that say
    what code a module's work is made of (identity's maps and views: its own code, and what it calls of
    attempts, store, hostlist, marks). Kept per module: a module's imports do not change while it runs,
    and parsing identity.py took ~60 ms each of the ~6 times an ingest and a diagnosis ask."""
    import ast
    import importlib
    import inspect
    out: list = [module]
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):   # no source shipped: the module's compiled form alone (made_of)
        return tuple(out)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level:
            mod = _imported_from(module.__name__, node)
            for a in node.names:
                v = getattr(mod, a.name, None)
                if v is None:   # `from .. import marks`: a module of the package
                    v = importlib.import_module(f"{mod.__name__}.{a.name}")
                out.append(v if callable(v) or inspect.ismodule(v) else f"{mod.__name__}.{a.name}={v!r}")
    return tuple(out)
