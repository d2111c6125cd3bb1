"""Secret and prompt-injection scanning for every write path (learn, import, observation, episode).

Pure Python (no Django). Detectors are regexes plus a value check; the value check is what keeps
prose, code identifiers, environment lookups and documentation placeholders from triggering.
Category names are stable: they are returned to clients and stored in events.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import accumulate

REDACTION_TEMPLATE = "[REDACTED:{category}]"

MIN_PASSWORD_LENGTH = 6
MIN_API_KEY_VALUE_LENGTH = 12
MIN_BEARER_LENGTH = 16
MIN_KEY_SEGMENT_LENGTH = 16

# Values that documentation uses in place of a real secret.
PLACEHOLDER_WORDS = frozenset(
    {
        "admin",
        "api_key",
        "apikey",
        "bar",
        "change_me",
        "changeit",
        "changeme",
        "dummy",
        "empty",
        "example",
        "false",
        "foo",
        "foobar",
        "hidden",
        "key",
        "masked",
        "mypassword",
        "nil",
        "none",
        "null",
        "optional",
        "pass",
        "passwd",
        "password",
        "placeholder",
        "pwd",
        "redacted",
        "required",
        "root",
        "sample",
        "secret",
        "str",
        "string",
        "tbd",
        "test",
        "todo",
        "token",
        "true",
        "undefined",
        "user",
        "username",
        "value",
    }
)
PLACEHOLDER_MARKERS = (
    "${",
    "{{",
    "}}",
    "%(",
    "<",
    ">",
    "...",
    "\u2026",
    "example",
    "placeholder",
    "redacted",
    "changeme",
    "change_me",
    "change-me",
    "replace_me",
    "replace-me",
    "xxxx",
    "****",
)
PLACEHOLDER_PREFIXES = ("your", "my_", "my-", "insert", "enter_", "enter-", "dummy", "fake")
PLACEHOLDER_SUFFIXES = ("_here", "-here")

_AWS_KEY_PREFIXES = "AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA"

# Key names end exactly at the name: "api_key_header" and "password_hash" are not assignments.
_KEY_PREFIX = r"(?<![\w.-])-{0,2}(?:[A-Za-z0-9]+[_.-])*"
_KEY_END = r"(?![\w-])[\"'`]?"
# An optional type annotation lets `password: str = "..."` reach its value.
_ANNOTATION = r"(?:\s*:\s*[A-Za-z_][\w\[\], |.]*?(?=\s*=))?"
_SEPARATOR = r"\s*(?::=|=>|=(?!=)|:(?!:))\s*"
_VALUE = (
    r"(?:(?P<quote>[\"'`])(?P<quoted>[^\"'`\n]*)(?P=quote)"
    r"|(?P<bare>[^\s\"'`,;)}\]]+))"
)


@dataclass(frozen=True)
class ScanResult:
    """Sorted unique category names found: secrets and prompt-injection attempts."""

    secrets: list[str] = field(default_factory=list)
    injections: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.secrets and not self.injections


@dataclass(frozen=True)
class _Detector:
    category: str
    pattern: re.Pattern[str]
    accept: Callable[[str, re.Match[str]], bool]
    # Generic key=value detectors give way when their value is recognised by a specific one.
    generic: bool = False


@dataclass(frozen=True)
class _Hit:
    category: str
    start: int
    end: int
    generic: bool


def _is_placeholder(value: str) -> bool:
    lower = value.lower()
    if not lower or lower in PLACEHOLDER_WORDS:
        return True
    if lower.startswith("$") or lower.startswith("%"):
        return True
    if any(marker in lower for marker in PLACEHOLDER_MARKERS):
        return True
    if lower.startswith(PLACEHOLDER_PREFIXES) or lower.endswith(PLACEHOLDER_SUFFIXES):
        return True
    # "***", "xxxxxx", "000000": one or two distinct characters are never a real secret.
    return len(set(lower)) <= 2


_CODE_REFERENCE = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*(?:[(\[].*)?")


def _is_code_reference(value: str) -> bool:
    """True for an unquoted value that is an expression: a dotted name, a call, a subscript, a path."""
    if value.startswith(("/", "~", "./", "../")):
        return True
    if not _CODE_REFERENCE.fullmatch(value):
        return False
    return "." in value or "(" in value or "[" in value


def _has_digit(value: str) -> bool:
    return any(ch.isdigit() for ch in value)


def _has_letter(value: str) -> bool:
    return any(ch.isalpha() for ch in value)


def _has_symbol(value: str) -> bool:
    return any(not ch.isalnum() and ch != "_" for ch in value)


def _assigned_value(match: re.Match[str]) -> tuple[str, bool]:
    quoted = match.group("quoted")
    if quoted is not None:
        return quoted, True
    return match.group("bare"), False


def _accept_password(_text: str, match: re.Match[str]) -> bool:
    value, quoted = _assigned_value(match)
    if len(value) < MIN_PASSWORD_LENGTH or _is_placeholder(value):
        return False
    if quoted:
        # A quoted value with spaces is a message ("Password must be ..."), not a password.
        return not any(ch.isspace() for ch in value)
    if _is_code_reference(value):
        return False
    # An unquoted bare word is usually a variable name; real passwords carry a digit or a symbol.
    return _has_digit(value) or _has_symbol(value)


def _accept_api_key_value(_text: str, match: re.Match[str]) -> bool:
    value, quoted = _assigned_value(match)
    if len(value) < MIN_API_KEY_VALUE_LENGTH or _is_placeholder(value):
        return False
    if any(ch.isspace() for ch in value):
        return False
    if not quoted and _is_code_reference(value):
        return False
    return _has_digit(value) and _has_letter(value)


def _accept_prefixed_key(_text: str, match: re.Match[str]) -> bool:
    token = match.group("secret")
    body = re.split(r"[-_]", token, maxsplit=1)[1]
    if _is_placeholder(body):
        return False
    longest_segment = max(len(part) for part in re.split(r"[-_]", body))
    return longest_segment >= MIN_KEY_SEGMENT_LENGTH and _has_digit(body) and _has_letter(body)


def _accept_random_token(_text: str, match: re.Match[str]) -> bool:
    token = match.group("secret")
    return not _is_placeholder(token) and _has_digit(token) and _has_letter(token)


def _accept_aws_access_key(_text: str, match: re.Match[str]) -> bool:
    # AWS documentation's sample keys end in EXAMPLE (AKIAIOSFODNN7EXAMPLE).
    return "EXAMPLE" not in match.group("secret")


def _accept_aws_secret(_text: str, match: re.Match[str]) -> bool:
    value = match.group("secret")
    if "EXAMPLE" in value:
        return False
    has_upper = any(ch.isupper() for ch in value)
    has_lower = any(ch.islower() for ch in value)
    return has_upper and has_lower and (_has_digit(value) or "/" in value or "+" in value)


def _accept_connection_string(_text: str, match: re.Match[str]) -> bool:
    return not _is_placeholder(match.group("secret"))


def _always(_text: str, _match: re.Match[str]) -> bool:
    return True


def _assignment(key_names: str) -> re.Pattern[str]:
    return re.compile(
        _KEY_PREFIX + r"(?i:" + key_names + r")" + _KEY_END + _ANNOTATION + _SEPARATOR + _VALUE
    )


_SECRET_DETECTORS: tuple[_Detector, ...] = (
    _Detector(
        "aws_access_key",
        re.compile(rf"(?<![A-Z0-9])(?P<secret>(?:{_AWS_KEY_PREFIXES})[A-Z0-9]{{16}})(?![A-Z0-9])"),
        _accept_aws_access_key,
    ),
    _Detector(
        "aws_secret_key",
        re.compile(
            r"(?<![\w-])(?i:(?:aws[_-]?)?secret[_-]?access[_-]?key|aws[_-]?secret(?:[_-]?key)?)"
            r"(?![\w-])[\"'`]?\s*(?:=|:|=>)\s*[\"'`]?"
            r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        _accept_aws_secret,
    ),
    _Detector(
        "api_key",
        re.compile(r"(?<![\w-])(?P<secret>(?:sk|pk|rk)[-_][A-Za-z0-9_-]{20,})"),
        _accept_prefixed_key,
    ),
    _Detector(
        "api_key",
        re.compile(
            r"(?<![\w-])(?P<secret>AIza[0-9A-Za-z_-]{35}"
            r"|xox[abposr]-[0-9A-Za-z-]{10,}"
            r"|glpat-[0-9A-Za-z_-]{20,})(?![\w-])"
        ),
        _accept_random_token,
    ),
    _Detector(
        "github_token",
        re.compile(
            r"(?<![\w-])(?P<secret>gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"
        ),
        _always,
    ),
    _Detector(
        "jwt",
        re.compile(
            r"(?<![\w-])(?P<secret>eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"
        ),
        _always,
    ),
    _Detector(
        "private_key",
        re.compile(
            r"(?P<secret>-----BEGIN (?P<kind>(?:[A-Z0-9]+ )*)PRIVATE KEY(?P<block>(?: BLOCK)?)-----"
            r"(?:[\s\S]*?-----END (?P=kind)PRIVATE KEY(?P=block)-----|[\s\S]*))"
        ),
        _always,
    ),
    _Detector(
        "bearer_token",
        re.compile(
            rf"(?<![\w-])(?i:bearer)\s+(?P<secret>[A-Za-z0-9._~+/=-]{{{MIN_BEARER_LENGTH},}})"
        ),
        _accept_random_token,
    ),
    _Detector(
        "connection_string",
        re.compile(
            r"(?<![\w+.-])(?i:[a-z][a-z0-9+.-]*)://(?P<user>[^\s:/@]*):"
            r"(?P<secret>[^\s/@]+)@[^\s/@]"
        ),
        _accept_connection_string,
    ),
    _Detector(
        "api_key_assignment",
        _assignment(
            r"x-api-key|api[_-]?key|apikey|api[_-]?secret|api[_-]?token|access[_-]?token"
            r"|auth[_-]?token|refresh[_-]?token|secret[_-]?key|client[_-]?secret"
            r"|app[_-]?secret|private[_-]?token|access[_-]?key"
        ),
        _accept_api_key_value,
        generic=True,
    ),
    _Detector(
        "password_assignment",
        _assignment(r"password|passwd|passphrase|pwd|(?<=[_.-])pass"),
        _accept_password,
        generic=True,
    ),
)


def _value_span(match: re.Match[str]) -> tuple[int, int]:
    for group in ("secret", "quoted", "bare"):
        if group in match.re.groupindex and match.group(group) is not None:
            return match.span(group)
    return match.span()


def _find_secrets(text: str) -> list[_Hit]:
    hits = [
        _Hit(detector.category, *_value_span(match), detector.generic)
        for detector in _SECRET_DETECTORS
        for match in detector.pattern.finditer(text)
        if detector.accept(text, match)
    ]
    specific = sorted((hit for hit in hits if not hit.generic), key=lambda hit: hit.start)
    starts = [hit.start for hit in specific]
    # Running maximum of end offsets, so one bisect answers "does any specific hit overlap?".
    reach = list(accumulate((hit.end for hit in specific), max))

    def overlaps_specific(hit: _Hit) -> bool:
        before = bisect_left(starts, hit.end)
        return before > 0 and reach[before - 1] > hit.start

    return [hit for hit in hits if not hit.generic or not overlaps_specific(hit)]


def scan_secrets(text: str) -> list[str]:
    """Sorted unique secret categories found in `text`; never returns the secrets themselves."""
    return sorted({hit.category for hit in _find_secrets(text)})


def redact_secrets(text: str) -> tuple[str, list[str]]:
    """`text` with each secret value replaced by [REDACTED:<category>], and the categories found.

    Only the secret value is replaced; the key name, scheme or "Bearer" before it is kept so the
    redacted text still reads. Overlapping hits are merged and labelled by the earliest one.
    """
    hits = sorted(_find_secrets(text), key=lambda hit: (hit.start, -hit.end))
    spans: list[tuple[int, int, str]] = []
    for hit in hits:
        if spans and hit.start < spans[-1][1]:
            start, end, category = spans[-1]
            spans[-1] = (start, max(end, hit.end), category)
        else:
            spans.append((hit.start, hit.end, hit.category))
    pieces: list[str] = []
    cursor = 0
    for start, end, category in spans:
        pieces.append(text[cursor:start])
        pieces.append(REDACTION_TEMPLATE.format(category=category))
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces), sorted({hit.category for hit in hits})


_INJECTION_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "ignore_instructions",
        re.compile(
            r"\b(?:ignore|disregard|forget|override)\s+(?:(?:all|any|the|your|my|of|these)\s+)*"
            r"(?:previous|prior|above|earlier|preceding|foregoing|original|system)\s+"
            r"(?:instructions?|prompts?|directions?|directives?|rules|guidelines|context)\b"
            r"|\b(?:ignore|disregard|forget)\s+(?:everything|all)\s+"
            r"(?:above|before\s+this|you\s+(?:were|have\s+been)\s+told)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "reveal_system_prompt",
        re.compile(
            r"\b(?:reveal|print|output|repeat|leak|dump|disclose|show\s+me|tell\s+me|give\s+me"
            r"|what\s+(?:is|are|was|were))\s+"
            r"(?:your|the)\s+(?:(?:full|entire|original|hidden|initial|secret|exact)\s+)*"
            r"(?:system\s+(?:prompt|message|instructions?)|initial\s+instructions"
            r"|hidden\s+instructions|instructions\s+you\s+were\s+given)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "role_override",
        re.compile(
            r"\byou\s+are\s+(?:now\s+)?no\s+longer\s+(?:an?\s+|bound|restricted|limited)"
            r"|\byou\s+are\s+now\s+(?:an?\s+|the\s+|my\s+)?(?:[\w-]+\s+){0,3}?"
            r"(?:ai|assistant|chatbot|bot|model|persona|character|unrestricted|unfiltered"
            r"|uncensored|jailbroken|free\s+from)\b"
            r"|\bfrom\s+now\s+on,?\s+you\s+(?:are|will\s+act|will\s+be)\b"
            r"|\b(?:act|behave|respond|pretend)\s+(?:as|like|to\s+be)\b[^.\n]{0,80}?"
            r"\b(?:no|without)\s+(?:any\s+)?(?:restrictions|limits|limitations|filters|rules"
            r"|guidelines|censorship)\b"
            r"|\bnew\s+system\s+(?:prompt|instructions?|message)\b"
            r"|<\|im_start\|>\s*system|<\|system\|>|<<SYS>>|\[INST\]"
            r"|^\s*#{1,6}\s*(?:system|assistant)\s*(?:prompt|message)?\s*:",
            re.IGNORECASE | re.MULTILINE,
        ),
    ),
    (
        "jailbreak",
        re.compile(
            r"(?i:\bdo\s+anything\s+now\b)"
            r"|\bDAN\s+(?i:mode)\b|\b(?i:you\s+are|act\s+as|enable|pretend\s+to\s+be)\s+DAN\b"
            r"|(?i:\b(?:you\s+are|you're)\s+(?:now\s+)?(?:in|running\s+in)\s+developer\s+mode\b)"
            r"|(?i:\bdeveloper\s+mode\s+(?:output|response)s?\b)"
            r"|(?i:\bwith\s+developer\s+mode\s+enabled\b)"
            r"|(?i:\bjailbr(?:oken|eak)\s+mode\b)",
        ),
    ),
)


def scan_prompt_injection(text: str) -> list[str]:
    """Sorted unique prompt-injection categories found in `text`."""
    return sorted(category for category, pattern in _INJECTION_PATTERNS if pattern.search(text))


def scan(text: str) -> ScanResult:
    """Both scans of `text`; `.clean` is True when neither found anything."""
    return ScanResult(secrets=scan_secrets(text), injections=scan_prompt_injection(text))
