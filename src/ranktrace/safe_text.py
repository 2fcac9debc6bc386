"""Text a log controls, made safe to show.

A log line, a file name or an archive member name is data: shown on a
terminal it must not move the cursor, clear the screen, set the window title
(OSC), ring, or reorder what follows (bidi overrides). `safe()` replaces every
such character with a visible escape, `\\x1b`, `\\x07`, `\\u202e`, so the
reader sees that it was there. Tab stays (harmless, common in logs); newline
stays only when asked for (multi-line blocks shown as blocks).

HTML and Markdown are escaped where they are written (report/), with
html.escape; this module is only about control characters.
"""

from __future__ import annotations

import re

# C0 controls (but tab), DEL, C1 controls; bidi embeddings/overrides/isolates
# and marks; line/paragraph separators (they break lines in some terminals).
_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028, 0x2029)
_CONTROLS = [c for c in (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)) if c != 0x09]


def _escape(c: int) -> str:
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


_TABLE = {c: _escape(c) for c in (*_CONTROLS, *_BIDI)}
_TABLE_NL = {c: v for c, v in _TABLE.items() if c != 0x0A}


def safe(text: object, keep_newlines: bool = False) -> str:
    """`text` with every terminal control and bidi override shown as an escape."""
    s = text if isinstance(text, str) else ("" if text is None else str(text))
    return s.translate(_TABLE_NL if keep_newlines else _TABLE)


def is_safe(text: str, keep_newlines: bool = False) -> bool:
    """True when safe(text) would change nothing."""
    table = _TABLE_NL if keep_newlines else _TABLE
    return not any(ord(ch) in table for ch in text)


def safe_tree(obj, fn=safe):
    """A copy of a JSON-like document with `fn` applied to every string
    (values and keys): a verdict made safe to render on a terminal."""
    if isinstance(obj, str):
        return fn(obj)
    if isinstance(obj, dict):
        return {(fn(k) if isinstance(k, str) else k): safe_tree(v, fn) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [safe_tree(v, fn) for v in obj]
    return obj


# A node name we are willing to put into a suggested or executed command: text from a log is data,
# never syntax (no spaces, quotes, `;`, `$`, options).
NODE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


def command_safe_node(name: object) -> str | None:
    """`name` when it is a plain node name (NODE_NAME), else None."""
    return name if isinstance(name, str) and NODE_NAME.match(name) else None
