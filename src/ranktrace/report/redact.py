"""--redact: hosts, IPs, user names, home paths and secrets -> stable placeholders.

A `Redactor` maps each distinct value to one placeholder (host-1, ip-1,
user-1, secret-1, ...) and uses it everywhere, so a redacted report still
reads ("rank 5 on host-2 ... host-2 lost its peer"). It works on the report
document (nested dicts/lists/strings) before any rendering, so md, html and
json carry exactly the same placeholders.

Two passes: `learn()` walks every string to find names that are only
recognisable in context (the NAME of /home/NAME or USER=NAME, the host of
user@host, fully qualified host names), then `apply()` rewrites every
string, including bare mentions of the learnt names elsewhere. Hosts known
from the store (events.host, files.host) are passed in up front.

Numbers are assigned in a deterministic order (known hosts in natural sort
order, then first appearance in the document), so the same input gives the
same output.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

# ---- secrets
_SECRET_KEY = (r"(?:[\w.-]*?(?:token|secret|passw(?:or)?d|pass_?phrase|api[_-]?key|apikey|access[_-]?key(?:[_-]?id)?"
               r"|private[_-]?key|credentials?|auth[_-]?key|session[_-]?key|client[_-]?secret)(?![a-z])[\w.-]*)")
_SECRET_RULES: list[tuple[re.Pattern, int]] = [
    # -----BEGIN ... PRIVATE KEY----- blocks (whole block)
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S), 0),
    # Authorization: Bearer xxx / Basic xxx / token xxx
    (re.compile(r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token|digest)?\s*([^\s\"',;]+)"), 1),
    (re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/=-]{8,})"), 1),
    # KEY=value, KEY: value, "key": "value" (env dumps, configs, JSON)
    (re.compile(r"(?i)\b" + _SECRET_KEY + r"[\"']?\s*[:=]\s*[\"']?([^\s\"',;&)\]}]+)"), 1),
    # --password xxx, --api-key xxx
    (re.compile(r"(?i)(?<![\w-])--?[\w-]*(?:token|password|passwd|secret|api[_-]?key)(?![a-z])[\w-]*\s+([^\s-][^\s]*)"), 1),
    # scheme://user:password@host
    (re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s:/@]+:([^\s@/]+)@"), 1),
    # well-known token shapes
    (re.compile(r"\b((?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16})\b"), 1),
    (re.compile(r"\b(hf_[A-Za-z0-9]{20,})\b"), 1),
    (re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})\b"), 1),
    (re.compile(r"\b(sk-[A-Za-z0-9_-]{20,})"), 1),
    (re.compile(r"\b(xox[abprs]-[A-Za-z0-9-]{10,})"), 1),
    (re.compile(r"\b(glpat-[A-Za-z0-9_-]{20,})"), 1),
    (re.compile(r"\b(AIza[0-9A-Za-z_-]{35})"), 1),
    (re.compile(r"\b(eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"), 1),
]
_NOT_SECRET = {"none", "null", "nil", "true", "false", "", "***", "****", "<redacted>", "redacted", "xxx",
               "$", "''", '""', "{}", "[]"}

# ---- users
_USER_RULES = [
    re.compile(r"(?<![\w.-])/(?:home|Users|homes|export/home|nfs/home|usr/home)/([A-Za-z0-9_][A-Za-z0-9._-]*)"),
    re.compile(r"(?i)\b[A-Z]:\\Users\\([A-Za-z0-9_][A-Za-z0-9._-]*)"),
    re.compile(r"\b(?:USER|LOGNAME|USERNAME|SUDO_USER|SLURM_JOB_USER|PBS_O_LOGNAME|LSB_JOB_USER|HF_USERNAME"
               r"|WANDB_USERNAME|WANDB_ENTITY)=[\"']?([A-Za-z0-9_][A-Za-z0-9._-]*)"),
    re.compile(r"\bUserId=([A-Za-z0-9_][A-Za-z0-9._-]*)\("),
    re.compile(r"\buid=\d+\(([A-Za-z0-9_][A-Za-z0-9._-]*)\)"),
    re.compile(r"(?i)\buser(?:name)?[\"']?\s*[=:]\s*[\"']?([A-Za-z_][A-Za-z0-9._-]*)"),
    re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://([^\s:/@]+)(?::[^\s@/]*)?@"),
]
# user@host / e-mail: the user part, and the host part (below)
_AT = re.compile(r"(?<![\w.%+-])([A-Za-z0-9_][A-Za-z0-9._%+-]*)@([A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
                 r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*)")
_KEEP_USERS = {"root", "nobody", "user", "users", "none", "null", "unknown", "n/a"}

# ---- hosts named in context: hostname=X, NodeName=X, MASTER_ADDR=X, --rdzv-endpoint X:port
_HOST_RULES = [
    re.compile(r"(?i)\b(?:host(?:name)?|node(?:_?name)?|master_addr|rdzv_endpoint|rdzv-endpoint|batchhost"
               r"|alloc_?node|nodelist)[\"']?\s*[=:]\s*[\"']?([A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*)"),
    re.compile(r"(?i)--(?:master[_-]addr|rdzv[_-]endpoint)[= ]([A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*)"),
    # the Kubernetes scheduler: "Successfully assigned NS/POD to NODE"
    re.compile(r"\bassigned\s+[\w.-]+/[\w.-]+\s+to\s+([A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*)"),
]
_NOT_HOSTS = {"none", "null", "localhost", "unknown", "true", "false", "n/a", "auto", "static", "c10d", "etcd",
              "default", "node", "host"}

# ---- hosts: fully qualified names with a known top-level domain
_TLDS = ("com|net|org|io|ai|dev|cloud|local|localdomain|internal|intra|intranet|lan|corp|cluster|svc|edu|gov"
         "|mil|int|us|uk|de|fr|nl|ch|se|no|fi|cn|jp|kr|in|au|ca|eu|info|biz|co|tech|site|xyz|app|example|test")
_FQDN = re.compile(r"(?i)(?<![\w.-])((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:" + _TLDS + r"))(?![\w-]|\.[a-z0-9])")

# ---- IPs
_IPV4 = re.compile(r"(?<![\d.])((?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))"
                   r"(?!\d|\.\d)")
_IPV6 = re.compile(r"(?i)(?<![\w.])((?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}"
                   r"|(?:[0-9a-f]{1,4}:){1,6}:(?:[0-9a-f]{1,4}:){0,5}[0-9a-f]{1,4})(?:%\w+)?(?![\w:])")
_KEEP_IPS = {"127.0.0.1", "0.0.0.0", "::1", "255.255.255.255"}
# public sites that tools print in their messages (docs links): not the user's
_PUBLIC_DOMAINS = ("pytorch.org", "github.com", "githubusercontent.com", "github.io", "nvidia.com", "python.org",
                   "pypi.org", "kubernetes.io", "k8s.io", "huggingface.co", "schedmd.com", "docker.io", "docker.com",
                   "readthedocs.io", "microsoft.com", "google.com", "anaconda.org", "conda.io", "nccl.ai",
                   "deepspeed.ai", "ray.io", "wandb.ai", "apache.org")

_PLACEHOLDER = re.compile(r"^(?:host|ip|user|secret|email|hostlist|pod)-\d+$")


def _hostlike(label: str) -> bool:
    """A first DNS label that names a machine (node07, dgx-a17), not a word (www, api)."""
    return (len(label) >= 3 and any(c.isdigit() for c in label) and not label.isdigit()
            and label.lower() not in _NOT_HOSTS)


def _natural(s: str):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


class Redactor:
    def __init__(self, hosts: Iterable[str] = (), users: Iterable[str] = (), pods: Iterable[str] = ()):
        self.maps: dict[str, dict[str, str]] = {"host": {}, "ip": {}, "user": {}, "secret": {}, "hostlist": {},
                                                "pod": {}}
        # Kubernetes pod names (events.pod, files.pod): a pod is where a rank ran, as telling as a
        # host; first, so that a pod also seen as a host name (torchrun inside a pod) stays pod-N.
        for pn in sorted({str(x).strip() for x in pods if x and str(x).strip()}, key=_natural):
            if len(pn) >= 3 and not _PLACEHOLDER.match(pn):
                self._aliases().setdefault(pn, self._get("pod", pn))
        for h in sorted({str(h) for h in hosts if h and str(h).strip()}, key=_natural):
            self.add_host(h)
        for u in users:
            self.add_user(u)
        self._literal: re.Pattern | None = None

    # ------------------------------------------------------------ registry
    def _get(self, cat: str, key: str) -> str:
        m = self.maps[cat]
        if key not in m:
            m[key] = f"{cat}-{len(m) + 1}"
            self._literal = None
        return m[key]

    def add_host(self, host: str, known: bool = True) -> str | None:
        """Register a host. `known` (from the store, or named as a host in
        context): its first label is an alias too (node7 = node7.corp.example.com).
        A dotted name only seen in text keeps its own placeholder, unless its
        first label is a known host; well-known public domains are left alone."""
        h = host.strip().strip(".")
        if not h or _PLACEHOLDER.match(h) or h in _KEEP_IPS or h.lower() == "localhost":
            return None
        if _IPV4.fullmatch(h) or _IPV6.fullmatch(h):
            return self._get("ip", h)
        low = h.lower()
        if "." in h and any(low == d or low.endswith("." + d) for d in _PUBLIC_DOMAINS):
            return None
        first = h.split(".")[0] if not h[0].isdigit() else h
        aliases = self._aliases()
        if h in aliases:
            return aliases[h]
        if known or first in aliases or _hostlike(first):
            # A redacted FQDN takes its short name with it (dgx-a17.corp.example.com -> dgx-a17):
            # a first label with a digit is a machine's name, not a word.
            ph = aliases.get(first) or self._get("host", first)
            aliases[first] = ph
        else:
            ph = self._get("host", h)
        aliases[h] = ph
        self._literal = None
        return ph

    def _aliases(self) -> dict[str, str]:
        if not hasattr(self, "_host_alias"):
            self._host_alias: dict[str, str] = {}
        return self._host_alias

    def add_user(self, user: str) -> str | None:
        u = user.strip()
        if len(u) < 2 or u.lower() in _KEEP_USERS or _PLACEHOLDER.match(u) or u.isdigit():
            return None
        return self._get("user", u)

    # ------------------------------------------------------------ pass 1
    def learn(self, obj: Any) -> None:
        for s in _strings(obj):
            for rx in _USER_RULES:
                for m in rx.finditer(s):
                    self.add_user(m.group(1))
            for m in _AT.finditer(s):
                u, dom = m.group(1), m.group(2)
                if "." in dom or dom in self._aliases():
                    self.add_user(u)
                    if not _IPV4.fullmatch(dom):
                        self.add_host(dom, known=False)
            for m in _FQDN.finditer(s):
                self.add_host(m.group(1), known=False)
            for rx in _HOST_RULES:
                for m in rx.finditer(s):
                    h = m.group(1)
                    # a name with a digit or a dot: bare words ("master") are too risky to replace everywhere
                    if h.lower() not in _NOT_HOSTS and len(h) >= 3 and (any(ch.isdigit() for ch in h) or "." in h):
                        self.add_host(h)

    # ------------------------------------------------------------ pass 2
    def _literal_rx(self) -> re.Pattern | None:
        if self._literal is None:
            names = set(self._aliases()) | set(self.maps["user"])
            names = {n for n in names if n}
            if not names:
                self._literal = re.compile(r"(?!x)x")
            else:
                alts = "|".join(re.escape(n) for n in sorted(names, key=lambda n: (-len(n), n)))
                self._literal = re.compile(r"(?<![A-Za-z0-9])(" + alts + r")(?![A-Za-z0-9])")
            # host lists of a known prefix: n[1-4], gpu-[01-08,12]
            prefixes = sorted({re.sub(r"\d+$", "", h) for h in self._aliases() if re.search(r"\d$", h)} - {""},
                              key=lambda p: (-len(p), p))
            self._hostlist = (re.compile(r"(?<![A-Za-z0-9])(?:" + "|".join(re.escape(p) for p in prefixes)
                                         + r")\[[0-9,\-\s]+\]") if prefixes else None)
        return self._literal

    def text(self, s: str) -> str:
        if not s:
            return s
        # secrets first: a token may contain anything
        for rx, g in _SECRET_RULES:
            s = rx.sub(lambda m, g=g: self._secret(m, g), s)
        s = _IPV6.sub(lambda m: m.group(0) if m.group(1) in _KEEP_IPS else self._get("ip", m.group(1)), s)
        s = _IPV4.sub(lambda m: m.group(0) if m.group(1) in _KEEP_IPS else self._get("ip", m.group(1)), s)
        s = _FQDN.sub(lambda m: self.add_host(m.group(1), known=False) or m.group(0), s)
        rx = self._literal_rx()
        if self._hostlist is not None:
            s = self._hostlist.sub(lambda m: self._get("hostlist", m.group(0)), s)
        s = rx.sub(self._lit, s)
        return s

    def _lit(self, m: re.Match) -> str:
        name = m.group(1)
        return self._aliases().get(name) or self.maps["user"].get(name) or name

    def _secret(self, m: re.Match, g: int) -> str:
        val = m.group(g)
        if val is None or val.lower() in _NOT_SECRET or _PLACEHOLDER.match(val) or val.startswith("$"):
            return m.group(0)
        ph = self._get("secret", val)
        a, b = m.span(g)
        a -= m.start()
        b -= m.start()
        whole = m.group(0)
        return whole[:a] + ph + whole[b:]

    def apply(self, obj: Any) -> Any:
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {k: self.apply(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self.apply(v) for v in obj]
        return obj

    def summary(self) -> dict[str, int]:
        return {k: len(v) for k, v in self.maps.items() if v}


def _strings(obj: Any):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _strings(v)


def redact_document(doc: dict, hosts: Iterable[str] = (), pods: Iterable[str] = ()) -> tuple[dict, Redactor]:
    """A redacted copy of `doc` (and the redactor, for its counts)."""
    r = Redactor(hosts=hosts, pods=pods)
    r.learn(doc)
    return r.apply(doc), r
