"""How the benchmarks measure: one child process (or one terminal) at a time.

- `run`: a command in a subprocess, with its wall time, CPU time, peak RSS
  (the kernel's ru_maxrss through GNU time: the largest process of its tree)
  and the peak of the sum of RSS over its whole tree (psutil, every 20 ms).
- `lnav_index`: lnav indexing files headless (`lnav -n`), and how many lines it
  read (its lnav_file table), installed from Debian when missing.
- `first_screen`: a command started in a real terminal (tmux) and the time
  until its screen shows what a predicate asks for.
- `readme_queries`: the SQL the README shows users, taken from the README.

Nothing here reads the machine's time zone; times are perf_counter deltas.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

SAMPLE_S = 0.02


@dataclass
class Run:
    cmd: list[str]
    wall_s: float
    cpu_s: float
    peak_rss_mib: float        # ru_maxrss of the child (its largest process)
    peak_tree_rss_mib: float   # the sampled peak of the sum over the child's tree
    returncode: int
    stdout: str
    stderr: str
    load_1m: float = 0.0       # the machine's load average as it ended: how noisy it was

    def check(self) -> "Run":
        if self.returncode != 0:
            sys.exit(f"benchmark: `{' '.join(self.cmd)}` failed with status {self.returncode}:\n"
                     f"{self.stderr[-3000:]}")
        return self


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    try:
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def run(cmd: list[str], *, cwd: Path | None = None, env: dict | None = None) -> Run:
    """Run cmd to its end; stdout/stderr go through files (no pipe to block on).

    The peak RSS is GNU time's (%M: the child's ru_maxrss). It is not taken
    from this process's own wait4: the kernel keeps the high-water mark of a
    process across exec, so a child forked from this Python (~40 MB with
    DuckDB loaded) would report at least that much, `wc -l` included; GNU
    time forks the command from its own 1 MB."""
    gnu_time = ensure_tool("time", "time", "GNU time: the peak RSS of a command")
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err, \
            tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        t0 = time.perf_counter()
        p = subprocess.Popen([gnu_time, "-o", rss.name, "-f", "%M", *cmd], cwd=cwd, env=env,
                             stdin=subprocess.DEVNULL, stdout=out, stderr=err, text=True)
        proc = psutil.Process(p.pid)
        peak_tree = 0
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            peak_tree = max(peak_tree, _tree_rss(proc))
            time.sleep(SAMPLE_S)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)   # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        # "Command exited with non-zero status N" may come first; %M is the last line.
        last = (rss.read().strip().splitlines() or [""])[-1]
        if not last.isdigit():
            sys.exit(f"benchmark: GNU time gave no peak RSS for `{' '.join(cmd)}` (got {last!r})")
        maxrss_mib = int(last) / 1024                        # KiB
        return Run(cmd, wall, ru.ru_utime + ru.ru_stime, maxrss_mib, max(peak_tree / 2**20, maxrss_mib),
                   p.returncode, out.read(), err.read(), os.getloadavg()[0])


# --------------------------------------------------------------------------- lnav

LNAV_LINES = re.compile(r"lnav-files=(\d+) lnav-lines=(\d+)")


def ensure_tool(exe: str, package: str, why: str) -> str:
    """The path of exe; installed with apt-get (Debian's package) when missing."""
    found = shutil.which(exe)
    if found:
        return found
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        sys.exit(f"benchmark: `{exe}` ({why}) is not installed and cannot be installed here (needs apt-get "
                 f"as root); install Debian's {package} (`sudo apt-get install -y {package}`) and run again")
    print(f"benchmark: `{exe}` missing; installing Debian's {package} (apt-get install -y {package})",
          file=sys.stderr, flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    apt = ["apt-get", "-o", "DPkg::Lock::Timeout=300"]
    errors = ""
    for step in ([], ["update", "-q"]):   # a stale package list: update once, then try again
        if step:
            errors += subprocess.run([*apt, *step], env=env, capture_output=True, text=True).stderr
        p = subprocess.run([*apt, "install", "-y", "-q", package], env=env, capture_output=True, text=True)
        errors += p.stderr
        if p.returncode == 0 and shutil.which(exe):
            return shutil.which(exe)
    sys.exit(f"benchmark: `apt-get install -y {package}` failed (status {p.returncode}); `{exe}` is needed "
             f"({why}); install it by hand and run again:\n{errors[-2000:]}")


def lnav_version(lnav: str) -> str:
    return subprocess.run([lnav, "-V"], capture_output=True, text=True).stdout.strip()


def lnav_index(lnav: str, files: list[Path], home: Path) -> tuple[Run, int, int]:
    """lnav opens the files headless (-n), indexes every line of them (and
    parses those of the formats it knows), answers one query on its lnav_file
    table and exits. Returns the run, the files and the lines lnav counted.
    HOME points at an empty directory: no user config, no saved session."""
    home.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    q = ";SELECT 'lnav-files=' || count(*) || ' lnav-lines=' || sum(lines) AS n FROM lnav_file"
    r = run([lnav, "-n", "-c", q, *map(str, files)], env=env, cwd=home).check()
    m = LNAV_LINES.search(r.stdout)
    if not m:
        sys.exit(f"benchmark: lnav printed no line count (expected 'lnav-lines=N'):\n{r.stdout[-1000:]}"
                 f"\n{r.stderr[-1000:]}")
    return r, int(m.group(1)), int(m.group(2))


# --------------------------------------------------------------------------- a real terminal

def first_screen(cmd: list[str], ready, *, cwd: Path, size: tuple[int, int] = (160, 45),
                 timeout: float = 120.0, poll_s: float = 0.01) -> tuple[float, str]:
    """Seconds from starting cmd in a tmux terminal of `size` until
    ready(screen_text) is true, and that screen. The tmux server and a shell
    waiting to exec cmd are set up first, so only cmd itself is timed; the
    screen is read every poll_s (the result is late by at most that much plus
    one capture, ~3 ms)."""
    tmux = ensure_tool("tmux", "tmux", "the terminal the TUI is timed in")
    sock_dir = tempfile.mkdtemp(prefix="rt-bench-tmux-")   # its own server, removed after
    base = [tmux, "-S", os.path.join(sock_dir, "s"), "-f", "/dev/null"]
    w, h = size
    subprocess.run([*base, "new-session", "-d", "-x", str(w), "-y", str(h), "-s", "b", "-c", str(cwd),
                    "sh", "-c", 'read _ && exec "$@"', "sh", *cmd], check=True)
    try:
        subprocess.run([*base, "set-option", "-t", "b", "remain-on-exit", "on"], check=True,
                       capture_output=True)
        t0 = time.perf_counter()
        subprocess.run([*base, "send-keys", "-t", "b", "Enter"], check=True)
        screen, n = "", 0
        while time.perf_counter() - t0 < timeout:
            cap = subprocess.run([*base, "capture-pane", "-p", "-t", "b"], capture_output=True, text=True)
            screen = cap.stdout
            if ready(screen):
                return time.perf_counter() - t0, screen
            n += 1
            if n % 32 == 0 and subprocess.run([*base, "display-message", "-p", "-t", "b", "#{pane_dead}"],
                                              capture_output=True, text=True).stdout.strip() == "1":
                sys.exit(f"benchmark: `{' '.join(cmd)}` exited before its first screen:\n{screen[-2000:]}")
            time.sleep(poll_s)
        sys.exit(f"benchmark: `{' '.join(cmd)}` showed no first screen in {timeout:.0f} s; last screen:\n"
                 f"{screen[-3000:]}")
    finally:
        subprocess.run([*base, "send-keys", "-t", "b", "q"], capture_output=True)
        time.sleep(0.2)
        subprocess.run([*base, "kill-server"], capture_output=True)
        shutil.rmtree(sock_dir, ignore_errors=True)


# The TUI's first screen: the timeline has drawn a lane (a label, then the
# lane's `│`/`┃` edge) and the event list a row (a time with milliseconds at
# the start of a line). The verdict header may still be loading: the TUI
# draws it later, on purpose (see ranktrace/tui/app.py).
_LANE_ROW = re.compile(r"^[▾▸▶ ] \S[^\n]*?[│┃]", re.M)
_LIST_ROW = re.compile(r"^ \d\d:\d\d:\d\d\.\d{3}  ", re.M)


def tui_ready(screen: str) -> bool:
    return bool(_LANE_ROW.search(screen) and _LIST_ROW.search(screen))


# --------------------------------------------------------------------------- the README's SQL

_FENCED_SQL = re.compile(r"^```sql\n(.*?)^```", re.M | re.S)
_CLI_SQL = re.compile(r"ranktrace sql \"([^\"]+)\"")
_EXPORT = re.compile(r"ranktrace export parquet --db \S+ (\S+)")


def readme_queries(readme: Path) -> tuple[list[tuple[str, str]], str | None]:
    """(name, sql) of every query the README shows users: its ```sql blocks
    and the `ranktrace sql "..."` examples; and the directory the README's
    `ranktrace export parquet` writes (queries read it)."""
    text = readme.read_text()
    found: list[tuple[int, str]] = []
    for m in _CLI_SQL.finditer(text):
        found.append((m.start(), m.group(1).strip()))
    for m in _FENCED_SQL.finditer(text):
        found.append((m.start(1), m.group(1).strip().rstrip(";")))
    out = [(f"README:{text.count(chr(10), 0, pos) + 1} `{_short(sql)}`", sql) for pos, sql in sorted(found)]
    ex = _EXPORT.search(text)
    return out, (ex.group(1) if ex else None)


def _short(sql: str, n: int = 28) -> str:
    one = " ".join(sql.split())
    return one if len(one) <= n else one[:n].rstrip() + "…"


_TIME_QUERIES = r"""
import json, sys, time
import duckdb
db, queries = sys.argv[1], json.loads(sys.argv[2])
res = []
for q in queries:
    t0 = time.perf_counter()
    # no progress bar: a query over 2 s would draw it on stdout, into the JSON
    con = duckdb.connect(db, read_only=True)
    con.execute("SET enable_progress_bar = false")
    rows = con.execute(q).fetchall()
    con.close()
    res.append({"s": time.perf_counter() - t0, "rows": len(rows), "first": [str(v) for v in rows[0]] if rows else []})
print(json.dumps(res))
"""


def time_queries(store: Path, queries: list[str]) -> list[dict]:
    """Each query on a fresh read-only DuckDB connection to the store's
    DuckDB file in the store's directory (as `cd STORE && duckdb
    ranktrace.duckdb` would: nothing else set), in one child process, timed
    from connect to the last row fetched."""
    r = run([sys.executable, "-c", _TIME_QUERIES, "ranktrace.duckdb", json.dumps(queries)], cwd=store).check()
    return json.loads(r.stdout)
