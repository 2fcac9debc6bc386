"""What the engine is told about each regex of the catalog: cheap tests that
decide which lines a pattern must really be tried on (ingest/core.py puts
them in the engine's spec).

first_chars: the characters a regex can start a match with.
required_literal: a string every match must contain (memmem is far cheaper
than a regex, and a pattern whose literal is absent from a batch is never
compiled at all).

A line is only tried against the patterns that can start with its first
character. For anchored patterns that cuts the regex work by the number of
distinct first characters. Non-ASCII first characters share one
bucket, NON_ASCII; a pattern that can start with anything (or with nothing)
returns None: every bucket."""

from __future__ import annotations

import re
import string
from functools import lru_cache

try:  # Python 3.11+
    from re import _constants as C, _parser as P
except ImportError:  # pragma: no cover
    import sre_constants as C
    import sre_parse as P

NON_ASCII = "\x80"
_WORD = frozenset(string.ascii_letters + string.digits + "_" + NON_ASCII)
_DIGIT = frozenset(string.digits + NON_ASCII)
_SPACE = frozenset(" \t\n\r\f\v" + NON_ASCII)
_CATEGORY = {C.CATEGORY_WORD: _WORD, C.CATEGORY_DIGIT: _DIGIT, C.CATEGORY_SPACE: _SPACE}


class _Any(Exception):
    pass


def _char(code: int) -> str:
    return chr(code) if code < 128 else NON_ASCII


def _in_set(items) -> set[str]:
    out: set[str] = set()
    for op, av in items:
        if op is C.NEGATE:
            raise _Any
        if op is C.LITERAL:
            out.add(_char(av))
        elif op is C.RANGE:
            lo, hi = av
            if hi - lo > 200:
                raise _Any
            out.update(_char(c) for c in range(lo, hi + 1))
        elif op is C.CATEGORY and av in _CATEGORY:
            out |= _CATEGORY[av]
        else:
            raise _Any
    return out


def _first(seq) -> tuple[set[str], bool]:
    """(possible first chars, whether seq can match the empty string)."""
    out: set[str] = set()
    for op, av in seq:
        if op is C.AT:
            continue  # ^, $, \b: zero-width
        if op is C.LITERAL:
            out.add(_char(av))
            return out, False
        if op is C.IN:
            out |= _in_set(av)
            return out, False
        if op is C.SUBPATTERN:
            f, nullable = _first(av[-1])
        elif op is C.BRANCH:
            f, nullable = set(), False
            for alt in av[1]:
                fa, na = _first(alt)
                f |= fa
                nullable = nullable or na
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
            lo, _hi, sub = av
            f, n = _first(sub)
            nullable = lo == 0 or n
        else:
            raise _Any  # ANY, NOT_LITERAL, groupref, asserts: anything goes
        out |= f
        if not nullable:
            return out, False
    return out, True


@lru_cache(maxsize=None)
def first_chars(regex: str) -> frozenset[str] | None:
    try:
        parsed = P.parse(regex)
        if parsed.state.flags & re.IGNORECASE:
            return None
        chars, nullable = _first(parsed)
    except (_Any, re.error):
        return None
    if nullable:
        return None
    return frozenset(chars)


def _candidates(seq) -> list[frozenset[str]]:
    """Sets of literals such that every match of seq contains one of the set
    (a literal run gives a set of one; a required alternation gives the
    union of one literal per branch)."""
    out, cur = [], []
    for op, av in seq:
        if op is C.LITERAL and av < 128:
            cur.append(chr(av))
            continue
        if cur:
            out.append(frozenset(["".join(cur)]))
            cur = []
        if op is C.SUBPATTERN:
            out += _candidates(av[-1])
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT) and av[0] >= 1:
            out += _candidates(av[2])
        elif op is C.BRANCH:
            per_branch = [_best(_candidates(alt)) for alt in av[1]]
            if per_branch and all(per_branch):
                out.append(frozenset().union(*per_branch))
    if cur:
        out.append(frozenset(["".join(cur)]))
    return out


def _best(cands: list[frozenset[str]], min_len: int = 3) -> frozenset[str] | None:
    good = [c for c in cands if c and min(len(x.strip()) for x in c) >= min_len]
    if not good:
        return None
    return max(good, key=lambda c: (min(len(x) for x in c), -len(c)))


@lru_cache(maxsize=None)
def required_literals(regex: str) -> tuple[str, ...] | None:
    """Literals one of which every match contains (sorted), or None."""
    try:
        parsed = P.parse(regex)
    except re.error:
        return None
    if parsed.state.flags & re.IGNORECASE:
        return None
    best = _best(_candidates(parsed))
    return tuple(sorted(best)) if best else None


def required_literal(regex: str) -> str | None:
    """The single literal every match contains, if there is one."""
    lits = required_literals(regex)
    return lits[0] if lits and len(lits) == 1 else None


PRE = "__pre"
_TAILS = {".*": "", r"\S.*": r"\S"}
_FLAGS = re.compile(r"^\(\?[aiLmsux]+\)")


@lru_cache(maxsize=None)
def split_tail(regex: str) -> tuple[str, str | None] | None:
    """For a regex anchored at ^ that ends in a rest-of-line group,
    `^P(?P<message>.*)$`, return (`^(?P<__pre>P)`, "message"): the line minus
    the captured prefix is the group. Regex engines pay for captures per
    character spanned, and a message spans most of the line: capturing only
    the prefix halves the cost of extraction. A regex ending in a bare `.*$`
    gives (`^(?P<__pre>P)`, None): the prefix decides the match. None when
    the regex has no such shape (or the group is not at its top level)."""
    flags = _FLAGS.match(regex)
    head = flags.group(0) if flags else ""
    body = regex[len(head):]
    if not body.startswith("^"):
        return None
    if body.endswith(".*$") and not body.endswith("\\.*$"):
        prefix = body[:-3]
        try:
            whole, pre = P.parse(body), P.parse(prefix)
        except re.error:
            return None
        # `.*$` must be the regex's own last items, not the end of a group or branch.
        items = list(whole)
        if (len(items) == len(list(pre)) + 2 and items[-1][0] is C.AT
                and items[-2][0] in (C.MAX_REPEAT, C.MIN_REPEAT) and items[-2][1][:2] == (0, C.MAXREPEAT)
                and list(items[-2][1][2]) == [(C.ANY, None)]):
            return f"{head}(?P<{PRE}>{prefix})", None
        return None
    for tail, guard in _TAILS.items():
        m = re.search(r"\(\?P<(\w+)>" + re.escape(tail) + r"\)\$$", body)
        if not m:
            continue
        prefix = body[:m.start()]
        try:
            whole = P.parse(body)
            P.parse(prefix)
        except re.error:
            return None
        # The group must be the last top-level item but for `$`.
        items = list(whole)
        if len(items) < 2 or items[-2][0] is not C.SUBPATTERN or items[-1][0] is not C.AT:
            return None
        if whole.state.groupdict.get(m.group(1)) != items[-2][1][0]:
            return None
        return f"{head}(?P<{PRE}>{prefix}){guard}", m.group(1)
    return None


def literal_set(regex: str, prefilter: str | None = None) -> tuple[str, ...] | None:
    """The literals one of which every line `regex` matches contains."""
    return (prefilter,) if prefilter else required_literals(regex)
