"""Small readers for the native log layouts the e2e tests check truth against.
Deliberately independent of ranktrace's own parsers: these tests check the
HARNESS (that truth.json says what really happened), not the product."""
import re
from pathlib import Path

SRUN_LABEL = re.compile(r"^\s*(\d+): ")
TEE_PREFIX = re.compile(r"^\[[A-Za-z_][A-Za-z_]*\d+\]:")  # torchrun --tee: "[default3]:"
STEP = re.compile(r"\[rank(\d+)\] step (\d+) loss ")
LOGTIME = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) \w+ \[rank(\d+)\] step (\d+) loss ")


def strip_label(line):
    """'  2: [default1]:text' -> (2, 'text'); labels that are absent -> None."""
    task = None
    m = SRUN_LABEL.match(line)
    if m:
        task, line = int(m.group(1)), line[m.end():]
    return task, TEE_PREFIX.sub("", line, count=1)


def error_summaries(text):
    """torchrun's ChildFailedError summary entries: dicts with section
    ('failure'|'root'), host, rank, local_rank, exitcode, pid, task (srun label)."""
    out, section, cur = [], None, None
    for raw in text.splitlines():
        task, line = strip_label(raw)
        s = line.strip()
        if s.startswith("Root Cause"):
            section = "root"
        elif s.startswith("Failures:"):
            section = "failure"
        elif section and re.match(r"\[\d+\]:$", s):
            cur = {"section": section, "task": task}
            out.append(cur)
        elif cur is not None and ":" in s:
            key, _, val = s.partition(":")
            key, val = key.strip(), val.strip()
            if key == "host":
                cur["host"] = val
            elif key == "rank":
                m = re.match(r"(\d+) \(local_rank: (\d+)\)", val)
                if m:
                    cur["rank"], cur["local_rank"] = int(m.group(1)), int(m.group(2))
            elif key == "exitcode":
                m = re.match(r"(-?\d+) \(pid: (\d+)\)", val)
                if m:
                    cur["exitcode"], cur["pid"] = int(m.group(1)), int(m.group(2))
        if s.startswith("====="):
            section, cur = (None, None) if cur is not None else (section, cur)
    return out


def last_steps(text):
    """{rank: last step number logged}."""
    last = {}
    for m in STEP.finditer(text):
        last[int(m.group(1))] = max(last.get(int(m.group(1)), 0), int(m.group(2)))
    return last


def step_times(text):
    """{(rank, step): 'YYYY-mm-dd HH:MM:SS.mmm' as logged (the node's own clock)}."""
    return {(int(m.group(3)), int(m.group(4))): f"{m.group(1)}.{m.group(2)}" for m in LOGTIME.finditer(text)}


def read_all(bundle, pattern="**/*"):
    return "\n".join(p.read_text(errors="replace") for p in sorted(Path(bundle).glob(pattern))
                     if p.is_file() and p.name not in ("truth.json", "expected_verdict.json", "README.md"))
