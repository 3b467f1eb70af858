"""Secret redaction for support bundles: tokens, passwords, API keys, bearer headers, AWS keys, private keys.

Bundles leave the machine (attached to tickets), so everything that goes into one passes through
`redact_text` (free text: logs, raw evidence) or `redact_json` (structured: Kubernetes objects,
environment), which also masks values whose *key* names a secret (`HF_TOKEN`, `"password": ...`,
Kubernetes env entries `{"name": "API_KEY", "value": ...}`). The mask keeps what kind of secret was
there so a reader can still follow the log: `Bearer [REDACTED]`, `password=[REDACTED]`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MASK", "Redactor", "is_secret_name", "redact_env", "redact_json", "redact_text"]

MASK = "[REDACTED]"

_SECRET_NAME = re.compile(
    r"(?i)(pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|"
    r"client[_-]?secret|credential|auth(?:orization)?|cookie|session[_-]?id|signature|sas|dsn|"
    r"webhook)(?:$|[_\-.]|s\b)|^(?:.*[_\-.])?(?:key|pat)$"
)
# Names that contain a secret word but are not secrets.
_NOT_SECRET_NAME = re.compile(
    r"(?i)^(?:.*_)?(?:token_?(?:s|count|ids?|len(?:gth)?|budget|limit)|max_tokens|"
    r"num_tokens|tokens_per_\w+|tokenizer\w*|\w*_tokens?_total|auth_?(?:type|mode)|"
    r"keyboard|key_?(?:id|name|path|file))$"
)

_RULES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    (
        "private_key",
        re.compile(r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----[\s\S]*?(?:-----END \1PRIVATE KEY-----|$)"),
        r"-----BEGIN \1PRIVATE KEY-----" + MASK + r"-----END \1PRIVATE KEY-----",
    ),
    (
        "auth_header",
        re.compile(
            r"(?i)\b((?:proxy-)?authorization\s*[:=]\s*\"?)(bearer|basic|token|digest|apikey)?"
            r"(\s*)([^\s\"',;]+)"
        ),
        r"\1\2\3" + MASK,
    ),
    ("bearer", re.compile(r"(?i)\b(bearer\s+)(?!\[REDACTED\])[A-Za-z0-9\-._~+/]{8,}=*"), r"\1" + MASK),
    (
        "url_credentials",
        re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s/:@]+:)([^\s/@]+)(@)"),
        r"\1" + MASK + r"\3",
    ),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b"), MASK),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b"), MASK),
    ("huggingface_token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), MASK),
    ("openai_key", re.compile(r"\bsk-(?:proj-|live-|test-)?[A-Za-z0-9_-]{20,}\b"), MASK),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"), MASK),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), MASK),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b"), MASK),
    # "password": "x" / 'token': 'x' (JSON, Python reprs)
    (
        "quoted_pair",
        re.compile(
            r"""(?i)(["'])([\w.-]*(?:pass(?:word|wd)?|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|"""
            r"""credential|auth)[\w.-]*)\1(\s*:\s*)(["'])(?!\[REDACTED\])([^"']+)\4"""
        ),
        r"\1\2\1\3\4" + MASK + r"\4",
    ),
    # password=x, --api-key x, AWS_SECRET_ACCESS_KEY=x, token: x
    (
        "key_value",
        re.compile(
            r"(?i)(?<![\w-])((?:--)?[\w.-]*(?:pass(?:word|wd)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|"
            r"private[_-]?key|client[_-]?secret|credential)[\w.-]*)(\s*[=:]\s*|\s+(?=\S*\d)(?=\S{12,}))"
            r"(\"?)(?!\[REDACTED\])([^\s\"',;&)]+)"
        ),
        r"\1\2\3" + MASK,
    ),
)


@dataclass
class Redactor:
    """Counts what it masked, by rule, so the bundle manifest can say how much was redacted."""

    counts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def text(self, text: str) -> str:
        if not text:
            return text
        for name, regex, repl in _RULES:
            if name == "key_value":
                text, n = regex.subn(self._key_value, text)
            else:
                text, n = regex.subn(repl, text)
            if n:
                self.counts[name] = self.counts.get(name, 0) + n
        return text

    @staticmethod
    def _key_value(m: re.Match[str]) -> str:
        name = m.group(1).lstrip("-")
        if _NOT_SECRET_NAME.match(name) or (m.group(4).isdigit() and len(m.group(4)) < 6):
            return m.group(0)
        return f"{m.group(1)}{m.group(2)}{m.group(3)}{MASK}"

    def json(self, value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            # Kubernetes env entries and similar {"name": SECRET_NAME, "value": ...}.
            name = value.get("name")
            out = {}
            for k, v in value.items():
                if (
                    k == "value"
                    and isinstance(name, str)
                    and is_secret_name(name)
                    and isinstance(v, str)
                    and v
                ):
                    out[k] = MASK
                    self.counts["named_value"] = self.counts.get("named_value", 0) + 1
                else:
                    out[k] = self.json(v, k)
            return out
        if isinstance(value, list):
            return [self.json(v, key) for v in value]
        if isinstance(value, str):
            if key is not None and is_secret_name(key) and value and value != MASK:
                self.counts["named_value"] = self.counts.get("named_value", 0) + 1
                return MASK
            return self.text(value)
        return value


def is_secret_name(name: str) -> bool:
    """True for names like HF_TOKEN, password, aws_secret_access_key, X-Api-Key (not max_tokens)."""
    if _NOT_SECRET_NAME.match(name):
        return False
    return bool(_SECRET_NAME.search(name))


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
            r.counts["env"] = r.counts.get("env", 0) + 1
            out[k] = MASK
        else:
            out[k] = r.text(v)
    return out
