"""report: the postmortem for the ticket (Markdown, self-contained HTML, JSON).

    doc = build_report(con, verdict_doc)        # store + verdict -> document
    doc = redact(con, doc)                      # optional: stable placeholders
    text = render(doc, "md" | "html" | "json")

Pure functions over a DuckDB connection and the verdict document of
design.md section 4; no textual import, no clock, no environment.
"""

from __future__ import annotations

import json
import re

from .build import build_report, known_hosts, known_pods, verdict_hosts
from .html import render_html
from .markdown import render_markdown
from .redact import Redactor, redact_document

FORMATS = ("md", "html", "json")


# JSON escapes C0 controls itself; C1 controls and bidi overrides become \\uXXXX too
# (the same string once decoded, inert on a terminal).
_JSON_INERT = {c: f"\\u{c:04x}" for c in (0x7F, *range(0x80, 0xA0), 0x061C, 0x200E, 0x200F,
                                           *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028, 0x2029)}
# A regexp finds the few such characters: str.translate looks up every
# character (a 66 MB Perfetto trace: 6.3 s, the regexp 0.5 s).
_INERT_RE = re.compile("[" + "".join(re.escape(chr(c)) for c in _JSON_INERT) + "]")


def json_inert(text: str) -> str:
    """JSON text with C1 controls and bidi overrides as \\uXXXX escapes."""
    return _INERT_RE.sub(lambda m: _JSON_INERT[ord(m.group())], text)


def render_json(doc: dict) -> str:
    return json_inert(json.dumps(doc, indent=2, ensure_ascii=False, default=str, sort_keys=False)) + "\n"


def render(doc: dict, fmt: str) -> str:
    """The report as text. Control characters from the logs never reach the
    output raw (safe_text): a report printed on a terminal cannot drive it."""
    from ..safe_text import safe
    if fmt == "md":
        return safe(render_markdown(doc), keep_newlines=True)
    if fmt == "html":
        return safe(render_html(doc), keep_newlines=True)
    if fmt == "json":
        return render_json(doc)
    raise ValueError(f"unknown report format {fmt!r} (one of {', '.join(FORMATS)})")


def redact(con, doc: dict) -> dict:
    """A copy of the document with hosts, IPs, users, home paths and secrets
    replaced by stable placeholders; the map itself is not kept anywhere."""
    out, r = redact_document(doc, hosts=known_hosts(con) + verdict_hosts(doc), pods=known_pods(con))
    out.setdefault("report", {})["redacted"] = r.summary()
    return out


def report(con, verdict_doc: dict, fmt: str = "md", *, redacted: bool = False) -> str:
    doc = build_report(con, verdict_doc)
    if redacted:
        doc = redact(con, doc)
    return render(doc, fmt)


__all__ = ["FORMATS", "Redactor", "build_report", "redact", "redact_document", "render", "render_html",
           "render_json", "render_markdown", "report"]
