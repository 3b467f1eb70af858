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
around them (`Redactor.add_url_credentials`).
"""

from __future__ import annotations

import re
import string
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MASK", "MAX_LINE_CHARS", "Redactor", "is_secret_name", "redact_env", "redact_json", "redact_text"]

MASK = "[REDACTED]"
MAX_LINE_CHARS = 32 * 1024
"""Longer lines are cut at the last delimiter before this many characters (no secret is split)."""

_MIN_LITERAL_CHARS = 4  # known secrets shorter than this are masked by the rules only, not everywhere

_SECRET_NAME = re.compile(
    r"(?i)(pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|"
    r"client[_-]?secret|credential|auth(?:orization)?|cookie|session[_-]?id|signature|sas|dsn|"
    r"webhook)(?:$|[_\-.]|s\b)|^(?:.*[_\-.])?(?:key|pat|sig)$|accountkey$|sharedaccesskey$"
)
# Names that contain a secret word but are not secrets (matched against the lower-cased name).
_NOT_SECRET_NAME = re.compile(
    r"^(?:.*_)?(?:token_?(?:s|count|ids?|len(?:gth)?|budget|limit)|max_tokens|"
    r"num_tokens|tokens_per_\w+|tokenizer\w*|\w*_tokens?_total|auth_?(?:type|mode)|"
    r"keyboard|key_?(?:id|name|path|file))$"
)
# The same for names found in free text, which are noisier: English words and names of settings
# that hold a reference to a secret (a file, a Kubernetes secretName), never the secret itself.
_NOT_SECRET_TEXT_NAME = re.compile(
    r"tokens(?:$|[_.-])|tokeniz|token_?(?:count|ids?|len|length|budget|limit|usage|type|index|idx)$|"
    r"(?:^|[_.-])(?:by|com|sur|tres|over|under|encom)pass$|^(?:by|com|sur|tres|over|under|encom)pass|"
    r"(?:^|[_.-])auth_?(?:type|mode|method|methods|provider|url|uri|endpoint|enabled|required|status)$|"
    r"(?:file|path|dir|name|names|ref|env|type|mode|count|len|length|limit|size|ttl|timeout|enabled|"
    r"required|policy|expiry|expires|expires_at|expires_in|rotation|provider|header|field|prefix|"
    r"suffix|format|version|algorithm|scheme|endpoint|uri|url|id_?key)$"
)
# fmt: off
_TRIVIAL_VALUES = frozenset({
    "true", "false", "null", "none", "nil", "yes", "no", "on", "off", "undefined", "enabled", "disabled",
    "required", "optional", "set", "unset", "empty", "redacted", "hidden", "masked", "ok", "failed",
    "invalid", "missing", "expired", "-", "*", "...",
})
# fmt: on
_PLACEHOLDER = re.compile(
    r"^(?:\$\{?[A-Z_][A-Z0-9_]{0,64}\}?|\*+|x{3,}|X{3,}|<[^<>]{1,64}>|\{\{.{1,64}\}\})$"
)


@dataclass(frozen=True)
class _Rule:
    """A regex whose group `s` is the secret, with gitleaks' keyword prefilter: it runs only when one of
    `keywords` occurs in the text. A `fold` rule is written in lower case and runs on the lower-cased
    text (a literal scan there is ten times faster than a case-insensitive one). A `named` rule starts at
    a secret word inside a name (`DB_PASSWORD=`): the name's start is found by scanning back from it,
    so the regex never tries a name prefix at every character. `accept(name, value)` can veto a match."""

    name: str
    pattern: str
    keywords: tuple[str, ...]
    fold: bool = False
    named: bool = False
    accept: Callable[[str, str], bool] | None = None
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)
    regex_ignore_case: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", re.compile(self.pattern))
        object.__setattr__(self, "regex_ignore_case", re.compile(self.pattern, re.IGNORECASE))


def _looks_random(value: str) -> bool:
    """A digit, a symbol or a capital after the first letter: `hunter42`, `Xy-7`, not `expired`."""
    return any(c.isdigit() or not c.isalnum() for c in value) or any(c.isupper() for c in value[1:])


def _not_a_value(name: str, value: str) -> bool:
    """Names that only look like secrets (`max_tokens`, `secretName`) and values no one would hide."""
    return bool(
        _NOT_SECRET_TEXT_NAME.search(name) or value.lower() in _TRIVIAL_VALUES or _PLACEHOLDER.match(value)
    )


def _accept_assignment(name: str, value: str) -> bool:
    name = name.lstrip("-").lower()
    if not _SECRET_TEXT_NAME.match(name) or _not_a_value(name, value):
        return False
    if _STRONG_WORD.search(name):
        return not (value.isdigit() and len(value) < 4 and "pass" not in name and "pwd" not in name)
    return len(value) >= 6 and _looks_random(value)


def _accept_flag(name: str, value: str) -> bool:
    bare = name.lstrip("-").lower()
    return name.startswith("-") and bool(_SECRET_TEXT_NAME.match(bare)) and not _not_a_value(bare, value)


def _accept_prose(name: str, value: str) -> bool:
    return any(c.isdigit() for c in value) and _accept_assignment(name, value)


def _accept_bearer(name: str, value: str) -> bool:
    return len(value) >= 16 or _looks_random(value)  # not "bearer authentication", "the bearer of"


def _vendor(name: str, pattern: str, *keywords: str) -> _Rule:
    """A vendor token: it starts at a token boundary, its body is bounded, it is masked whole.

    The boundary is checked after the first character of each alternative when that is a literal,
    so the regex still starts with literals, which the engine skips to (seven times faster than a
    look-behind first, which it must try at every position)."""
    alternatives = "|".join(_bounded_start(alt) for alt in _top_level_alternatives(pattern))
    return _Rule(name, rf"(?P<s>{alternatives})", keywords)


def _top_level_alternatives(pattern: str) -> list[str]:
    parts, depth, start, i, in_class = [], 0, 0, 0, False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char in "()":
            depth += 1 if char == "(" else -1
        elif char == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
        i += 1
    return [*parts, pattern[start:]]


def _bounded_start(alternative: str) -> str:
    first = alternative[0]
    if first.isalnum() or first in "_-":
        return first + _AFTER_TOKEN_START + alternative[1:]
    return _TOKEN_START + alternative


_NOT_MASKED = r"(?!\[REDACTED\])"
_NOT_MASKED_LC = r"(?!\[redacted\])"  # the same in a fold rule, which reads the lower-cased text
# Where a token may start: not inside a word, or right after an escaped line break or tab (`\nghp_...`
# inside a JSON string).
_TOKEN_START = r"(?:(?<![A-Za-z0-9_])|(?<=\\[nrt]))"
_AFTER_TOKEN_START = r"(?:(?<![A-Za-z0-9_].)|(?<=\\[nrt].))"  # the same, one character in
# The secret words a name may contain (lower case): the match of a named rule starts at one of them.
_KEY_WORD = (
    r"(?:pass(?:words?|wd|phrase)?|pwd|secrets?|token|credentials?|cookies?|apikeys?|keys?|auth|"
    r"sig(?:nature)?|session(?:[_-]?(?:id|key|token))?|dsn)"
)
# No plural after "token": `max_tokens=`, `"prompt_tokens":` are no candidates at all.
_NAME_REST = r"(?:[_.-][\w.-]{0,40})?(?![\w])"
# A whole name that holds a secret, checked on the candidates only.
_SECRET_TEXT_NAME = re.compile(
    r"[\w.-]{0,42}?(?:pass(?:word|wd|phrase)?|pwd|secret|token|credentials?|cookie|api[_-]?key|apikey|"
    r"(?:access|account|private|signing|encryption|master|client|app|auth|license|service|storage|"
    r"shared[_-]?access)[_-]?key|auth|sig|signature|session[_-]?(?:id|key|token)|sessionid|dsn)"
    r"s?(?:[_.-][\w.-]{0,40})?$"
)
_STRONG_WORD = re.compile(r"pass|pwd|secret|credential|cookie|api[_-]?key|apikey|[a-z]key$|_key|-key")
# fmt: off
_ASSIGN_KEYWORDS = (
    "pass", "pwd", "secret", "token", "credential", "cookie", "key", "auth", "sig", "session", "dsn",
)
# fmt: on
_VALUE = r"(?:\\?(?P<q>[\"']))?{nm}(?P<s>(?(q)(?:(?!\\?(?P=q))[^\r\n]){{1,1024}}|[^\s\"'&;<>\\]{{1,1024}}))"

_RULES: tuple[_Rule, ...] = (
    # --- headers and URLs ---------------------------------------------------------------------------
    _Rule(
        "auth_header",
        r"(?<![\w-])(?:proxy-)?authorization[ \t]{0,3}\\?[\"']?[ \t]{0,3}[:=][ \t]{0,5}\\?[\"']?[ \t]{0,3}"
        r"(?:(?:bearer|basic|token|digest|negotiate|apikey|api-key|sharedkey|aws4-hmac-sha256)[ \t]{1,3})?+"
        + _NOT_MASKED_LC
        + r"(?P<s>[^\s\"',;\\]{1,4096})",
        ("authorization",),
        fold=True,
    ),
    _Rule(
        "cookie",
        r"(?<![\w-])(?:set-)?cookie[ \t]{0,3}:[ \t]{0,5}"
        + _NOT_MASKED_LC
        + r"(?P<s>[^\s\"'\\][^\r\n\"'\\]{0,4095})",
        ("cookie",),
        fold=True,
    ),
    _Rule(
        "bearer",
        r"(?<![\w-])bearer[ \t]{1,3}" + _NOT_MASKED_LC + r"(?P<s>[a-z0-9\-._~+/]{8,4096}=*)",
        ("bearer",),
        fold=True,
        accept=_accept_bearer,
    ),
    # user:password@host after any "://": the user may be empty, the password may hold '@' (the last
    # '@' before the host ends it).
    _Rule(
        "url_credentials",
        r"://[^\s/?#:\"'<>]{0,128}:" + _NOT_MASKED + r"(?P<s>[^\s/?#\"'<>]{1,256})@(?=[^\s@/?#\"'<>])",
        ("://",),
    ),
    # --- command lines ------------------------------------------------------------------------------
    # curl -u user:pass, --user 'user:pass', --proxy-user; `-u 1000:1000` (uid:gid) is kept
    _Rule(
        "curl_user",
        r"(?<![\w-])(?:-[A-Za-z]{0,5}u|--user|--proxy-user)(?:=|[ \t]{1,5})[\"']?[^\s:\"']{0,256}:"
        + _NOT_MASKED
        + r"(?P<s>[^\s\"']{1,256})",
        ("-u", "--user", "--proxy-user"),
        accept=lambda name, value: not value.isdigit(),
    ),
    _Rule(
        "cli_password",
        r"(?<![\w-])(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlsh|mariadb|mariadb-dump|"
        r"mariadb-admin)\b[^\r\n]{0,512}?\s-p[\"']?" + _NOT_MASKED + r"(?P<s>[^\s\"'-][^\s\"']{0,255})",
        ("mysql", "mariadb"),
    ),
    _Rule(
        "cli_password",
        r"(?<![\w-])(?:sshpass[ \t]{1,5}-p|redis-cli\b[^\r\n]{0,512}?\s-a|docker[ \t]{1,5}login\b"
        r"[^\r\n]{0,512}?\s-p)[ \t]{0,5}[\"']?" + _NOT_MASKED + r"(?P<s>[^\s\"'-][^\s\"']{0,255})",
        ("sshpass", "redis-cli", "docker login"),
    ),
    # --- vendor token formats (the kinds of gitleaks' rule set) --------------------------------------
    _vendor(
        "aws_access_key",
        r"A(?:3T[A-Z0-9]|KIA|SIA|BIA|CCA|GPA|IDA|ROA|IPA|NPA|NVA)[A-Z0-9]{16}(?![A-Za-z0-9])",
        "A3T",
        "AKIA",
        "ASIA",
        "ABIA",
        "ACCA",
        "AGPA",
        "AIDA",
        "AROA",
        "AIPA",
        "ANPA",
        "ANVA",
    ),
    _vendor(
        "github_token",
        r"gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255}",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
    ),
    _vendor(
        "gitlab_token",
        r"gl(?:pat|dt|rt|ptt|ft|imt|cbt|soat|oas|agent|ffct)-[A-Za-z0-9_-]{20,255}|GR1348941[A-Za-z0-9_-]{20,64}",
        "glpat-",
        "gldt-",
        "glrt-",
        "glptt-",
        "glft-",
        "glimt-",
        "glcbt-",
        "glsoat-",
        "gloas-",
        "glagent-",
        "glffct-",
        "GR1348941",
    ),
    _vendor(
        "slack_token", r"xox[abposre]-[A-Za-z0-9-]{10,255}|xapp-[0-9]-[A-Za-z0-9-]{10,255}", "xox", "xapp-"
    ),
    _vendor(
        "slack_webhook",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,255}",
        "hooks.slack.com",
    ),
    _vendor(
        "stripe_key",
        r"sk_(?:live|test|prod)_[A-Za-z0-9]{10,255}|rk_(?:live|test|prod)_[A-Za-z0-9]{10,255}|"
        r"whsec_[A-Za-z0-9]{20,255}",
        "k_live_",
        "k_test_",
        "k_prod_",
        "whsec_",
    ),
    _vendor(
        "google_credential",
        r"AIza[0-9A-Za-z_-]{35}|ya29\.[0-9A-Za-z_-]{20,4096}|GOCSPX-[A-Za-z0-9_-]{20,64}|1//0[0-9A-Za-z_-]{30,512}",
        "AIza",
        "ya29.",
        "GOCSPX-",
        "1//0",
    ),
    _vendor("huggingface_token", r"hf_[A-Za-z0-9]{30,255}|api_org_[A-Za-z0-9]{30,255}", "hf_", "api_org_"),
    _vendor("openai_key", r"sk-(?:proj-|svcacct-|admin-|ant-|live-|test-)?[A-Za-z0-9_-]{20,1024}", "sk-"),
    _vendor("ngc_key", r"nvapi-[A-Za-z0-9_-]{20,255}", "nvapi-"),
    _vendor(
        "ai_api_key",
        r"gsk_[A-Za-z0-9]{20,255}|pplx-[A-Za-z0-9]{20,255}|r8_[A-Za-z0-9]{20,255}|xai-[A-Za-z0-9]{40,255}",
        "gsk_",
        "pplx-",
        "r8_",
        "xai-",
    ),
    _vendor(
        "package_registry_token",
        r"npm_[A-Za-z0-9]{36,255}|pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,1024}",
        "npm_",
        "pypi-AgEIcHlwaS5vcmc",
    ),
    _vendor(
        "saas_token",
        r"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,64}|key-[0-9a-z]{32}(?![A-Za-z0-9])|"
        r"do[opr]_v1_[a-f0-9]{64}|dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,64}|dapi[a-f0-9]{32}(?:-[0-9])?|"
        r"hv[sbr]\.[A-Za-z0-9_-]{24,255}|"
        r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}|gl(?:c|sa)_[A-Za-z0-9_=+/-]{32,255}|lin_api_[A-Za-z0-9]{40}|"
        r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}|pul-[a-f0-9]{40}|dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}|"
        r"ATATT3[A-Za-z0-9_=-]{50,255}|NRAK-[A-Z0-9]{27}|HRKU-[A-Za-z0-9_-]{30,255}|EAA[MC][A-Za-z0-9]{80,255}|"
        r"sntrys_[A-Za-z0-9_=+/-]{40,255}|AGE-SECRET-KEY-1[0-9A-Z]{58}",
        "SG.",
        "key-",
        "_v1_",
        "dp.",
        "dapi",
        "hvs.",
        "hvb.",
        "hvr.",
        "shpat_",
        "shpca_",
        "shppa_",
        "shpss_",
        "glc_",
        "glsa_",
        "lin_api_",
        "PMAK-",
        "pul-",
        "dt0c01.",
        "ATATT3",
        "NRAK-",
        "HRKU-",
        "EAAM",
        "EAAC",
        "sntrys_",
        "AGE-SECRET-KEY-1",
    ),
    _vendor("twilio_key", r"SK[0-9a-fA-F]{32}(?![A-Za-z0-9])", "SK"),
    _vendor("terraform_token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,255}", "atlasv1"),
    _vendor("telegram_bot_token", r"[0-9]{8,10}:AA[A-Za-z0-9_-]{33}", ":AA"),
    _vendor("azure_client_secret", r"[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}", "Q~"),
    _vendor("jwt", r"eyJ[A-Za-z0-9_-]{8,4096}\.eyJ[A-Za-z0-9_-]{4,8192}\.[A-Za-z0-9_-]{0,4096}", "eyJ"),
    # --- generic assignments, found from the secret word in the name ----------------------------------
    # password=x, "pwd": "x", 'api_key': 'x', AccountKey=x;, token: x, X-Api-Key: x, --password=x
    _Rule(
        "key_value",
        r"(?P<name>"
        + _KEY_WORD
        + _NAME_REST
        + r")\\?[\"']?[ \t]{0,3}(?::=|=>|[:=])[ \t]{0,5}"
        + _VALUE.format(nm=_NOT_MASKED_LC),
        _ASSIGN_KEYWORDS,
        fold=True,
        named=True,
        accept=_accept_assignment,
    ),
    # --password hunter42, -token x, "--api-key", "x" (a command line as text, a JSON or YAML list)
    _Rule(
        "flag_value",
        r"(?P<name>" + _KEY_WORD + _NAME_REST + r")(?:[ \t]{1,5}|\\?[\"'][ \t]{0,3},[ \t]{0,3}|,[ \t]{0,3})"
        r"\\?[\"']?" + _NOT_MASKED_LC + r"(?P<s>[^\s\"',\\\-\]][^\s\"',\\\]]{0,1023})",
        _ASSIGN_KEYWORDS,
        fold=True,
        named=True,
        accept=_accept_flag,
    ),
    # "the password hunter42 was rejected", netrc's "login bot password Xy7-netrc-pass"
    _Rule(
        "key_value",
        r"(?P<name>pass(?:word|wd|phrase)?|pwd|secret|token|api[ _-]?key)[ \t]{1,3}"
        + _NOT_MASKED_LC
        + r"(?P<s>[^\s\"',;]{8,256})",
        ("pass", "pwd", "secret", "token", "key"),
        fold=True,
        named=True,
        accept=_accept_prose,
    ),
)


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


_KEYWORDS = _KeywordIndex({k for rule in _RULES if not rule.fold for k in rule.keywords})
_KEYWORDS_FOLDED = _KeywordIndex({k for rule in _RULES if rule.fold for k in rule.keywords})

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
        for rule in _RULES:
            if not present.intersection(rule.keywords):
                continue  # masking only ever removes keywords: what was absent stays absent
            if rule.fold and lowered is None:
                lowered = text.lower()
            new = self._apply(rule, text, lowered)
            if new is not text:
                text, lowered = new, None
        return text

    def _apply(self, rule: _Rule, text: str, lowered: str | None) -> str:
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
            if flag is not None and isinstance(item, str) and item and _accept_flag(flag, item):
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
    if _NOT_SECRET_NAME.match(name.lower()):
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
            r._count("env")
            out[k] = MASK
        else:
            out[k] = r.text(v)
    return out
