"""Secret redaction for support bundles: tokens, passwords, API keys, credentials in URLs, private keys.

Bundles leave the machine (attached to tickets), so everything that goes into one passes through
`Redactor.text` (free text: logs, raw evidence, problem messages), `Redactor.json` (foreign structured
documents: Kubernetes objects, the exporter's history, which also masks values whose *key* names a
secret: `HF_TOKEN`, `"password": ...`, env entries `{"name": "API_KEY", "value": ...}`, the value after a
`--password` flag in a command list, the data of a Kubernetes Secret) or `Redactor.strings` (our own
documents, manifest and evidence: every string through the text rules, keys left alone). The mask keeps
what kind of secret was there so a reader can still follow the log: `Bearer [REDACTED]`,
`password=[REDACTED]`, `redis://:[REDACTED]@cache:6379`.

The rules cover the kinds of gitleaks' rule set (vendor token formats, private key blocks, credentials
in URLs and curl commands, generic `name = value` assignments) and run in linear time: every rule
starts at a literal or at a token boundary and every repetition is bounded, so no line makes a rule
rescan what it has already read; lines longer than `MAX_LINE_CHARS` are cut. Credentials known in
advance (the password of a `--prometheus` URL) are masked wherever they appear, whatever the text
around them (`Redactor.add_url_credentials`). The rules themselves are `rca.redact_rules`; this module
is the engine that runs them.
"""

from __future__ import annotations

import re
import string
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from gpuobs.rca.redact_rules import NOT_SECRET_NAME, RULES, SECRET_NAME, Rule, accept_flag

__all__ = ["MASK", "MAX_LINE_CHARS", "Redactor", "is_secret_name", "redact_env", "redact_json", "redact_text"]

MASK = "[REDACTED]"
MAX_LINE_CHARS = 32 * 1024
"""Longer lines are cut at the last delimiter before this many characters (no secret is split)."""

_MIN_LITERAL_CHARS = 4  # known secrets shorter than this are masked by the rules only, not everywhere


def _trie_pattern(words: list[str]) -> str:
    """One regex for a set of literals, factored by common prefix (a flat alternation is three times
    slower: at each position it tries every word)."""
    trie: dict[str, Any] = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def build(node: dict[str, Any]) -> str:
        alts = [re.escape(char) + build(child) for char, child in sorted(node.items()) if char]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{body})?" if "" in node else body

    return build(trie)


class _KeywordIndex:
    """Which keywords occur in a text, in one scan. The scan does not report a keyword that starts inside
    another one it reported, so each reported keyword stands for every keyword that could overlap it."""

    def __init__(self, words: set[str]) -> None:
        self.regex = re.compile(_trie_pattern(sorted(words)))
        self.implied = {
            y: frozenset(x for x in words if x in y or any(y.endswith(x[:k]) for k in range(1, len(x))))
            for y in words
        }

    def present(self, haystack: str) -> set[str]:
        found: set[str] = set()
        for word in set(self.regex.findall(haystack)):
            found |= self.implied[word]
        return found


_KEYWORDS = _KeywordIndex({k for rule in RULES if not rule.fold for k in rule.keywords})
_KEYWORDS_FOLDED = _KeywordIndex({k for rule in RULES if rule.fold for k in rule.keywords})

_NAME_CHARS = frozenset(string.ascii_letters + string.digits + "_.-")


def _name_start(text: str, at: int) -> int:
    """Where the name holding the secret word at `at` starts; -1 when it is longer than a name can be."""
    i, lowest = at, max(0, at - 42)
    while i > lowest and (text[i - 1] in _NAME_CHARS or text[i - 1].isalnum()):
        i -= 1
    if i == lowest and i > 0 and (text[i - 1] in _NAME_CHARS or text[i - 1].isalnum()):
        return -1
    if i > 0 and text[i - 1] == "\\" and text[i : i + 1] in ("n", "r", "t"):  # `\npassword=` in JSON
        i += 1
    return i


_KEY_BLOCK = re.compile(r"-{4,5} ?BEGIN ((?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?) ?-{4,5}")
# Lines of key material after a BEGIN line whose END is missing (a truncated log): base64 and headers.
_KEY_MATERIAL_LINE = re.compile(
    r"[ \t]{0,8}(?:[A-Za-z0-9+/=]{16,200}|[A-Za-z-]{1,40}: [^\r\n]{0,200})[ \t]{0,8}\r?\n"
)
_FLAG_ITEM = re.compile(r"^--?(?P<name>[\w.-]{1,82})$")


@dataclass
class Redactor:
    """Applies the rules and counts what it masked, by rule, so the bundle manifest can say how much."""

    counts: dict[str, int] = field(default_factory=dict)
    lines_cut: int = 0
    _literals: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def _count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    # -- known secrets ---------------------------------------------------------------------------------

    def add_secret(self, secret: str) -> None:
        """Mask `secret` (and its URL-encoded forms) wherever it appears, from now on."""
        if len(secret) < _MIN_LITERAL_CHARS:
            return
        for form in {secret, urllib.parse.quote(secret, safe=""), urllib.parse.unquote(secret)}:
            if len(form) >= _MIN_LITERAL_CHARS and form not in self._literals:
                self._literals.append(form)
        self._literals.sort(key=len, reverse=True)

    def add_url_credentials(self, url: str | None) -> None:
        """Treat the password (or a lone token user) of `url` as a known secret."""
        if not url or "@" not in url:
            return
        netloc = urllib.parse.urlsplit(url).netloc if "://" in url else url.split("/", 1)[0]
        userinfo = netloc.rpartition("@")[0]
        if not userinfo:
            return
        user, sep, password = userinfo.partition(":")
        self.add_secret(password if sep else user)

    # -- text --------------------------------------------------------------------------------------------

    def text(self, text: str) -> str:
        """`text` with every recognised secret replaced by MASK."""
        if not text:
            return text
        text = self._cut_long_lines(text)
        for literal in self._literals:
            if literal in text:
                self._count("known_secret", text.count(literal))
                text = text.replace(literal, MASK)
        if "PRIVATE KEY" in text:
            text = self._private_keys(text)
        folded = text.lower()
        present = _KEYWORDS.present(text) | _KEYWORDS_FOLDED.present(folded)
        lowered: str | None = folded
        for rule in RULES:
            if not present.intersection(rule.keywords):
                continue  # masking only ever removes keywords: what was absent stays absent
            if rule.fold and lowered is None:
                lowered = text.lower()
            new = self._apply(rule, text, lowered)
            if new is not text:
                text, lowered = new, None
        return text

    def _apply(self, rule: Rule, text: str, lowered: str | None) -> str:
        """`text` with the secrets `rule` finds masked (the same object when it found none)."""
        if rule.fold and lowered is not None and len(lowered) == len(text):
            matches = rule.regex.finditer(lowered)
        else:  # lower() changed the length (a few Unicode letters): match case-insensitively instead
            matches = (rule.regex_ignore_case if rule.fold else rule.regex).finditer(text)
        out: list[str] = []
        pos = 0
        for m in matches:
            start, end = m.span("s")
            if start < pos:
                continue
            name = ""
            if rule.named:
                name_at = m.start("name")
                begin = _name_start(text, name_at)
                if begin < 0:
                    continue
                name = text[begin : m.end("name")]
            if rule.accept is not None and not rule.accept(name, text[start:end]):
                continue
            out.append(text[pos:start])
            out.append(MASK)
            pos = end
            self._count(rule.name)
        if not out:
            return text
        out.append(text[pos:])
        return "".join(out)

    def _private_keys(self, text: str) -> str:
        """Mask the body of every PEM/PGP/OpenSSH private key block; linear: each END is searched once."""
        out: list[str] = []
        pos = 0
        no_end: set[str] = set()  # labels with no END after some point: none after any later BEGIN either
        for m in _KEY_BLOCK.finditer(text):
            if m.start() < pos:  # inside a block already masked
                continue
            out.append(text[pos : m.end()])
            label = m.group(1)
            end_marker = -1 if label in no_end else text.find(f"END {label}", m.end())
            if end_marker >= 0:
                body_end = end_marker
                while body_end > m.end() and text[body_end - 1] in "- ":  # keep the END line's dashes
                    body_end -= 1
                out.append(MASK)
                pos = body_end
            else:  # a truncated block: the rest of its line (an escaped one-line key) and key lines
                no_end.add(label)
                nl = text.find("\n", m.end())
                body_end = len(text) if nl < 0 else nl + 1
                while (
                    line := _KEY_MATERIAL_LINE.match(text, body_end)
                ) is not None and line.end() > body_end:
                    body_end = line.end()
                out.append(MASK + ("\n" if text[body_end - 1 : body_end] == "\n" else ""))
                pos = body_end
            self._count("private_key")
        out.append(text[pos:])
        return "".join(out)

    def _cut_long_lines(self, text: str) -> str:
        if len(text) <= MAX_LINE_CHARS:
            return text
        lines = text.split("\n")
        if max(map(len, lines)) <= MAX_LINE_CHARS:
            return text
        for i, line in enumerate(lines):
            if len(line) > MAX_LINE_CHARS:
                head = line[:MAX_LINE_CHARS]
                # cut at the last delimiter: a token cut in two would be too short for its rule
                cut = max(head.rfind(c) for c in (" ", "\t", ",", ";"))
                kept = head[: max(cut, 0)]
                lines[i] = f"{kept} [gpuobs: {len(line) - len(kept)} characters of this line cut]"
                self.lines_cut += 1
        return "\n".join(lines)

    # -- structured documents ----------------------------------------------------------------------------

    def json(self, value: Any, key: str | None = None) -> Any:
        """A copy of a foreign JSON-like document: secret-named fields masked, strings through `text`."""
        if isinstance(value, dict):
            return self._json_object(value)
        if isinstance(value, list):
            return self._json_list(value, key)
        if isinstance(value, str):
            if key is not None and is_secret_name(key) and value and value != MASK:
                self._count("named_value")
                return MASK
            return self.text(value)
        return value

    def _json_object(self, value: dict[Any, Any]) -> dict[Any, Any]:
        name = value.get("name")
        named_secret = isinstance(name, str) and is_secret_name(name)
        is_k8s_secret = value.get("kind") == "Secret"
        out: dict[Any, Any] = {}
        for k, v in value.items():
            if k == "value" and named_secret and isinstance(v, str) and v:
                # Kubernetes env entries and similar {"name": SECRET_NAME, "value": ...}
                out[k] = MASK
                self._count("named_value")
            elif is_k8s_secret and k in ("data", "stringData") and isinstance(v, dict):
                out[k] = dict.fromkeys(v, MASK)
                self._count("kubernetes_secret", len(v))
            else:
                out[k] = self.json(v, k)
        return out

    def _json_list(self, value: list[Any], key: str | None) -> list[Any]:
        out: list[Any] = []
        flag: str | None = None  # a `--password` item: the next item is its value
        for item in value:
            if flag is not None and isinstance(item, str) and item and accept_flag(flag, item):
                out.append(MASK)
                self._count("flag_value")
                flag = None
                continue
            flag = item if isinstance(item, str) and _FLAG_ITEM.match(item) else None
            out.append(self.json(item, key))
        return out

    def strings(self, value: Any) -> Any:
        """A copy of one of our own documents (manifest, evidence) with every string through `text`."""
        if isinstance(value, dict):
            return {k: self.strings(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.strings(v) for v in value]
        if isinstance(value, str):
            return self.text(value)
        return value


def is_secret_name(name: str) -> bool:
    """True for names like HF_TOKEN, password, aws_secret_access_key, X-Api-Key (not max_tokens)."""
    if NOT_SECRET_NAME.match(name.lower()):
        return False
    return bool(SECRET_NAME.search(name))


def redact_text(text: str, redactor: Redactor | None = None) -> str:
    """`text` with every recognised secret replaced by [REDACTED]."""
    return (redactor or Redactor()).text(text)


def redact_json(value: Any, redactor: Redactor | None = None) -> Any:
    """A copy of a JSON-like value with secret-named fields and secret-looking strings masked."""
    return (redactor or Redactor()).json(value)


def redact_env(env: dict[str, str], redactor: Redactor | None = None) -> dict[str, str]:
    """Environment variables with secret-named values masked and the rest scanned as text."""
    r = redactor or Redactor()
    out = {}
    for k, v in env.items():
        if is_secret_name(k) and v:
            r._count("env")
            out[k] = MASK
        else:
            out[k] = r.text(v)
    return out
