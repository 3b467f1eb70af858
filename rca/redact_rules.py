"""The secret-finding rules of the bundle redactor: which names hold secrets, and the table of regexes
(headers, URLs, vendor token formats, assignments, flags) with their keyword prefilters. The engine
that runs them is `rca.redact`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["NOT_SECRET_NAME", "RULES", "SECRET_NAME", "Rule", "accept_flag"]

SECRET_NAME = re.compile(
    r"(?i)(pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|"
    r"client[_-]?secret|credential|auth(?:orization)?|cookie|session[_-]?id|signature|sas|dsn|"
    r"webhook)(?:$|[_\-.]|s\b)|^(?:.*[_\-.])?(?:key|pat|sig)$|accountkey$|sharedaccesskey$"
)
# Names that contain a secret word but are not secrets (matched against the lower-cased name).
NOT_SECRET_NAME = re.compile(
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
class Rule:
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


def accept_flag(name: str, value: str) -> bool:
    bare = name.lstrip("-").lower()
    return name.startswith("-") and bool(_SECRET_TEXT_NAME.match(bare)) and not _not_a_value(bare, value)


def _accept_prose(name: str, value: str) -> bool:
    return any(c.isdigit() for c in value) and _accept_assignment(name, value)


def _accept_bearer(name: str, value: str) -> bool:
    return len(value) >= 16 or _looks_random(value)  # not "bearer authentication", "the bearer of"


def _vendor(name: str, pattern: str, *keywords: str) -> Rule:
    """A vendor token: it starts at a token boundary, its body is bounded, it is masked whole.

    The boundary is checked after the first character of each alternative when that is a literal,
    so the regex still starts with literals, which the engine skips to (seven times faster than a
    look-behind first, which it must try at every position)."""
    alternatives = "|".join(_bounded_start(alt) for alt in _top_level_alternatives(pattern))
    return Rule(name, rf"(?P<s>{alternatives})", keywords)


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

RULES: tuple[Rule, ...] = (
    # --- headers and URLs ---------------------------------------------------------------------------
    Rule(
        "auth_header",
        r"(?<![\w-])(?:proxy-)?authorization[ \t]{0,3}\\?[\"']?[ \t]{0,3}[:=][ \t]{0,5}\\?[\"']?[ \t]{0,3}"
        r"(?:(?:bearer|basic|token|digest|negotiate|apikey|api-key|sharedkey|aws4-hmac-sha256)[ \t]{1,3})?+"
        + _NOT_MASKED_LC
        + r"(?P<s>[^\s\"',;\\]{1,4096})",
        ("authorization",),
        fold=True,
    ),
    Rule(
        "cookie",
        r"(?<![\w-])(?:set-)?cookie[ \t]{0,3}:[ \t]{0,5}"
        + _NOT_MASKED_LC
        + r"(?P<s>[^\s\"'\\][^\r\n\"'\\]{0,4095})",
        ("cookie",),
        fold=True,
    ),
    Rule(
        "bearer",
        r"(?<![\w-])bearer[ \t]{1,3}" + _NOT_MASKED_LC + r"(?P<s>[a-z0-9\-._~+/]{8,4096}=*)",
        ("bearer",),
        fold=True,
        accept=_accept_bearer,
    ),
    # user:password@host after any "://": the user may be empty, the password may hold '@' (the last
    # '@' before the host ends it).
    Rule(
        "url_credentials",
        r"://[^\s/?#:\"'<>]{0,128}:" + _NOT_MASKED + r"(?P<s>[^\s/?#\"'<>]{1,256})@(?=[^\s@/?#\"'<>])",
        ("://",),
    ),
    # --- command lines ------------------------------------------------------------------------------
    # curl -u user:pass, --user 'user:pass', --proxy-user; `-u 1000:1000` (uid:gid) is kept
    Rule(
        "curl_user",
        r"(?<![\w-])(?:-[A-Za-z]{0,5}u|--user|--proxy-user)(?:=|[ \t]{1,5})[\"']?[^\s:\"']{0,256}:"
        + _NOT_MASKED
        + r"(?P<s>[^\s\"']{1,256})",
        ("-u", "--user", "--proxy-user"),
        accept=lambda name, value: not value.isdigit(),
    ),
    Rule(
        "cli_password",
        r"(?<![\w-])(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlsh|mariadb|mariadb-dump|"
        r"mariadb-admin)\b[^\r\n]{0,512}?\s-p[\"']?" + _NOT_MASKED + r"(?P<s>[^\s\"'-][^\s\"']{0,255})",
        ("mysql", "mariadb"),
    ),
    Rule(
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
    Rule(
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
    Rule(
        "flag_value",
        r"(?P<name>" + _KEY_WORD + _NAME_REST + r")(?:[ \t]{1,5}|\\?[\"'][ \t]{0,3},[ \t]{0,3}|,[ \t]{0,3})"
        r"\\?[\"']?" + _NOT_MASKED_LC + r"(?P<s>[^\s\"',\\\-\]][^\s\"',\\\]]{0,1023})",
        _ASSIGN_KEYWORDS,
        fold=True,
        named=True,
        accept=accept_flag,
    ),
    # "the password hunter42 was rejected", netrc's "login bot password Xy7-netrc-pass"
    Rule(
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
