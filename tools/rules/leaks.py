"""What must never reach the model: tokens and secrets, stack traces, internal
identifiers (contract: "Prohibido en la respuesta"; SPEC C8, G7).

`clean_text` and `clean_data` return the cleaned value and what was found.
Certification uses the findings; the gateway uses the cleaned value on every
result, so the patterns are compiled once and kept linear (no nested
unbounded repeats) to stay fast on 100 KB results. A Leak never carries the
leaked value itself, only its kind, a label and where it was, so recording it
does not copy the secret.
"""

import base64
import binascii
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import re2

TOKEN = "token"
TRACE = "trace"
INTERNAL_ID = "internal_id"

REDACTED = "[redacted]"
# Configured secrets shorter than this are not looked for (see configured_secrets).
MIN_SECRET_LENGTH = 6
TRACE_REMOVED = "[trace removed]"
ID_REMOVED = "[id removed]"


@dataclass(frozen=True)
class Leak:
    kind: str  # TOKEN, TRACE or INTERNAL_ID
    label: str  # e.g. "JWT", "Python traceback", "UUID"
    where: str = ""  # path in structured data ("items/0/id"), empty for text


@dataclass(frozen=True)
class Cleaned:
    value: Any
    leaks: tuple[Leak, ...]


# --- Identifier shapes -------------------------------------------------------

_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
# What an identifier made for machines looks like: a number, a UUID, a long
# hex string (database ObjectIds), a prefixed random id ("cus_9f2a7c3b").
# Readable references such as "RAD-2024-0012" are meant for customers.
_ID_LIKE_VALUE = re.compile(rf"^(?:-?\d+|{_UUID}|[0-9a-fA-F]{{12,}}|[a-z]{{2,6}}_[A-Za-z0-9]{{6,}})$")
# Keys that are internal whatever their value.
_INTERNAL_KEY = re.compile(r"^(?:_id|_?pk|_rev|__v|uuid|guid|internal(?:_\w*|[A-Z]\w*)?)$")
# Keys that are internal when their value looks like a machine id.
_ID_KEY = re.compile(r"^(?:id|ID|\w+_id|\w+_ID|[a-z]\w*Id)$")
# Pagination cursors ("next_page_token") are not secrets: the contract asks
# large results to paginate.
_SECRET_KEY = re.compile(
    r"^(?:(?:access|refresh|auth|api|bearer|session|id|client)_?token|token|\w*secret|\w*password|passwd|pwd"
    r"|contrase(?:ñ|n)a|api_?key|apikey|authorization|credentials?)$",
    re.IGNORECASE,
)


@lru_cache(maxsize=4096)
def _cached_key_shape(key: str) -> tuple[bool, bool, bool]:
    return bool(_SECRET_KEY.match(key)), bool(_INTERNAL_KEY.match(key)), bool(_ID_KEY.match(key))


def _key_shape(key: str) -> tuple[bool, bool, bool]:
    """(a secret's key, an internal key, an id's key): the same few keys come in every result of
    a tool, so short ones are remembered (a long one is likely junk, and would fill the cache)."""
    return _cached_key_shape(key) if len(key) <= 64 else _cached_key_shape.__wrapped__(key)


def is_internal_field(key: str, value) -> bool:
    """True for a field that carries an internal identifier (`id`, `_id`, `internal_*`…)."""
    _secret, internal, id_key = _key_shape(key)
    if internal:
        return value is not None and value != ""
    if id_key:
        if isinstance(value, bool):
            return False
        if isinstance(value, int):
            return True
        return isinstance(value, str) and bool(_ID_LIKE_VALUE.match(value))
    return False


def is_secret_field(key: str, value) -> bool:
    return _key_shape(key)[0] and isinstance(value, (str, int)) and str(value) != ""


# --- Text patterns -----------------------------------------------------------


@dataclass(frozen=True)
class _Pattern:
    kind: str
    label: str
    # A cheap regex, led by literals, that must match before `regex` runs:
    # most results hold none of these things, and the hints scan a clean
    # 100 KB text in a few milliseconds where the full patterns take ~50.
    hint: str
    regex: re.Pattern
    # Returns the replacement, or None to keep the match as it is.
    replace: Callable[[re.Match], str | None]


def _constant(text: str):
    return lambda match: text


def _trace_removed(match: re.Match) -> str:
    # Keep the line break the trace ended with, so the next line stays apart.
    return TRACE_REMOVED + ("\n" if match.group(0).endswith("\n") else "")


def _redact_group(match: re.Match) -> str:
    # Keep what names the secret ("password: "), drop the secret itself.
    return match.group(0)[: match.start("secret") - match.start()] + REDACTED


_CREDENTIAL_HEADER_WORD = re.compile(r"key|token|secret|auth|sign|pass|session|cookie", re.IGNORECASE)
_SCHEME = re.compile(r"(?:basic|bearer|digest|token|negotiate|hmac)[ \t]", re.IGNORECASE)


def _is_credential_header(match: re.Match) -> bool:
    # "X-Request-Id: …" is not a secret; "X-Api-Key: …" and "X-Auth-Token: …" are. And a word
    # ("Authorization: approved") is not a credential: those carry a scheme, a digit or an "=".
    name, value = match.group("name"), match.group("secret")
    if name.lower().startswith("x-") and not _CREDENTIAL_HEADER_WORD.search(name):
        return False
    return bool(_SCHEME.match(value)) or any(c.isdigit() or c == "=" for c in value) or len(value) >= 20


def _redact_json_id(match: re.Match) -> str | None:
    key, raw = match.group("key"), match.group("value")
    value = raw[1:-1] if raw.startswith('"') else int(raw)
    if not is_internal_field(key, value):
        return None
    return f'"{key}": "{ID_REMOVED}"'


_PATTERNS = (
    # Traces first: they hold paths and ids that later patterns would
    # otherwise nibble at, leaving half a trace behind.
    _Pattern(
        TRACE,
        "Python traceback",
        r"Traceback \(",
        re.compile(
            r"Traceback \(most recent call last\):[^\n]*\n(?:[ \t][^\n]*(?:\n|$))*"
            r"(?:[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)\b[^\n]*)?"
        ),
        _trace_removed,
    ),
    _Pattern(TRACE, "Python traceback", r'File "', re.compile(r'File "[^"\n]+", line \d+(?:, in [^\n]+)?'), _trace_removed),
    _Pattern(
        TRACE,
        "stack trace",
        # Java, .NET and JavaScript frames ("at pkg.Class.method(File.java:42)",
        # "at fn (/app/x.js:10:15)", "at X.Y() in C:\x.cs:line 42"), with the
        # exception line above them and "Caused by:" / "... 3 more" lines.
        r"(?m::(?:line )?\d+\)?[ \t]*$)|Native Method|Unknown Source",
        re.compile(
            r"(?:^[ \t]*(?:Exception in thread \"[^\"\n]*\" )?[\w.$]*(?:Exception|Error)\b[^\n]*\n)?"
            r"(?:^[ \t]*(?:at \S[^\n]*(?::(?:line )?\d+|Native Method|Unknown Source)\)?|Caused by: [^\n]*|\.\.\. \d+ more)"
            r"[ \t]*(?:\n|$))+",
            re.MULTILINE,
        ),
        _trace_removed,
    ),
    _Pattern(
        TRACE,
        "database error",
        r"SQLSTATE|ORA-|psycopg|syntax error at or near|duplicate key value",
        re.compile(
            r"SQLSTATE\[[^\]\n]*\][^\n]*|\bORA-\d{5}\b[^\n]*|\bpsycopg2?\.errors\.\w+[^\n]*"
            r"|\b(?:syntax error at or near|duplicate key value violates unique constraint)\b[^\n]*"
        ),
        _trace_removed,
    ),
    _Pattern(
        TOKEN,
        "private key",
        r"PRIVATE KEY-",
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)"),
        _constant(REDACTED),
    ),
    _Pattern(
        TOKEN, "bearer token", r"earer\s", re.compile(r"\b[Bb]earer\s+[A-Za-z0-9\-._~+/]{8,}=*"), _constant(f"Bearer {REDACTED}")
    ),
    _Pattern(
        TOKEN,
        "JWT",
        r"eyJ",
        # Starts only where a run of token characters starts: with `\b`, "eyJ-eyJ-eyJ-…" made every
        # "eyJ" a start that scanned to the end of the run (quadratic).
        re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        _constant(REDACTED),
    ),
    _Pattern(
        TOKEN,
        "API key",
        r"_live_|_test_|sk-|AKIA|gh[pousr]_|github_pat_|xox|AIza|glpat-",
        re.compile(
            r"\b(?:(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{10,}|sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}"
            r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}"
            r"|AIza[0-9A-Za-z_-]{35}|glpat-[A-Za-z0-9_-]{20,})"
        ),
        _constant(REDACTED),
    ),
    _Pattern(
        TOKEN,
        "credentials in URL",
        r"://[^/\s:@]+:[^/\s@]+@",
        # The same care: a scheme starts where a run of scheme characters starts ("a.a.a.…").
        re.compile(r"(?<![A-Za-z0-9+.-])(?P<scheme>[a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@"),
        lambda m: f"{m.group('scheme')}{REDACTED}@",
    ),
    _Pattern(
        TOKEN,
        "auth header",
        # An HTTP header that carries a credential, echoed back ("Authorization: Basic …",
        # "X-Api-Token: …", "Cookie: sid=…"). After "bearer token", whose redaction it leaves alone.
        r"uthorization|UTHORIZATION|[Xx]-|ookie|OOKIE",
        re.compile(
            r"(?<![\w-])(?P<name>(?:proxy-)?authorization|x-[a-z0-9-]++|(?:set-)?cookie)[\"']?[ \t]*[:=][ \t]*[\"']?"
            r"(?!(?:bearer[ \t]+)?\[)(?P<secret>(?:(?:basic|bearer|digest|token|negotiate|hmac)[ \t]+)?[^\s\"',;&}]{6,})",
            re.IGNORECASE,
        ),
        lambda match: _redact_group(match) if _is_credential_header(match) else None,
    ),
    _Pattern(
        TOKEN,
        "credential",
        # Case variants spelled out: an (?i) hint loses the fast literal scan.
        r"(?:key|secret|token|passw|pwd|contrase|KEY|SECRET|TOKEN|PASSW|PWD|Key|Secret|Token|Passw|Pwd|Contrase)",
        re.compile(
            r"(?:api[_-]?key|apikey|secret|(?<!page_)(?<!cursor_)token|password|passwd|pwd|contrase(?:ñ|n)a)\b"
            r"[\"']?\s*[:=]\s*[\"']?(?P<secret>(?!\[)[^\s\"',;&}]{6,})",
            re.IGNORECASE,
        ),
        _redact_group,
    ),
    _Pattern(
        INTERNAL_ID,
        "internal id",
        # JSON text, such as a content item that repeats structuredContent.
        r"\"\s*:",
        re.compile(
            r'"(?P<key>id|ID|_id|_?pk|_rev|__v|uuid|guid|internal\w*|[A-Za-z]\w*_(?:id|ID)|[a-z]\w*Id)"'
            r'\s*:\s*(?P<value>"[^"\\\n]*"|-?\d+\b)'
        ),
        _redact_json_id,
    ),
    _Pattern(
        INTERNAL_ID, "UUID", r"-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-", re.compile(rf"\b{_UUID}\b"), _constant(ID_REMOVED)
    ),
)
# Python's `\s` and `\d` on text (RE2's own are ASCII only): the hints must find at least what
# the patterns behind them would.
_PY_SPACE = r"\t\n\x0b\f\r\x1c-\x1f\x85\p{Z}"


def _for_re2(hint: str) -> str:
    """`hint` with Python's Unicode `\\s` and `\\d` spelled out for RE2."""
    if re.search(r"\\[wWbBSD]", hint):
        raise ValueError(f"a leak hint RE2 would read differently: {hint}")
    out, in_class, i = [], False, 0
    while i < len(hint):
        char = hint[i]
        if char == "\\" and i + 1 < len(hint):
            escape = hint[i : i + 2]
            out.append({"\\s": _PY_SPACE if in_class else f"[{_PY_SPACE}]", "\\d": r"\p{Nd}"}.get(escape, escape))
            i += 2
            continue
        if char == "[" and not in_class:
            in_class = True
        elif char == "]" and in_class and hint[i - 1] not in "[^":
            in_class = False
        out.append(char)
        i += 1
    return "".join(out)


def _hint_set():
    # One pass over the text for every hint (RE2's multi-pattern search, linear time): a
    # pattern per pass cost ~20 µs on a one-line result and ~12 ms on 100 KB (P1).
    hints = re2.Set.SearchSet(re2.Options())
    for pattern in _PATTERNS:
        hints.Add(_for_re2(pattern.hint))
    hints.Compile()
    return hints


_HINTS = _hint_set()
_PYTHON_HINTS = tuple(re.compile(p.hint) for p in _PATTERNS)


def _possible(text: str) -> tuple[_Pattern, ...]:
    """The patterns whose hint occurs in `text`; only those can match."""
    try:
        found = _HINTS.Match(text)
    except UnicodeEncodeError:  # a lone surrogate: RE2 reads UTF-8 only
        return tuple(p for p, hint in zip(_PATTERNS, _PYTHON_HINTS) if hint.search(text))
    return tuple(_PATTERNS[index] for index in sorted(found)) if found else ()


def configured_secrets(headers: dict | None) -> tuple[str, ...]:
    """The secrets a server was configured with (its auth header values, T7), as they could come
    back in a result: the whole value, the credential after its scheme ("Bearer abc" → "abc"), and
    a Basic credential decoded. Values shorter than MIN_SECRET_LENGTH are left out: replacing
    "1" or "true" everywhere would mangle results without protecting anything."""
    found = []
    for value in (headers or {}).values():
        if not isinstance(value, str):
            continue
        value = value.strip()
        found.append(value)
        scheme, _space, credential = value.partition(" ")
        credential = credential.strip()
        if credential:
            found.append(credential)
            if scheme.lower() == "basic":
                found += _basic_parts(credential)
    return tuple(sorted({s for s in found if len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True))


def _basic_parts(credential: str) -> list[str]:
    try:
        decoded = base64.b64decode(credential, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return []
    return [decoded, decoded.partition(":")[2]]


def _redact_secrets(text: str, secrets, where: str, leaks: list[Leak]) -> str:
    # Longest first (configured_secrets sorts them), so a secret that contains another goes whole.
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
            leaks.append(Leak(TOKEN, "configured secret", where))
    return text


def clean_text(text: str, *, where: str = "", secrets: tuple[str, ...] = ()) -> Cleaned:
    """The text without the server's own secrets, tokens, traces and internal identifiers, and
    what was removed."""
    leaks: list[Leak] = []
    text = _redact_secrets(text, secrets, where, leaks)
    return Cleaned(_clean_string(text, where, leaks, _possible(text)), tuple(leaks))


def find_leaks(text: str) -> tuple[Leak, ...]:
    return clean_text(text).leaks


def _clean_string(text: str, where: str, leaks: list[Leak], patterns) -> str:
    for pattern in patterns:
        text = pattern.regex.sub(_replacer(pattern, leaks, where), text)
    return text


def _replacer(pattern: _Pattern, leaks: list[Leak], where: str):
    def replace(match: re.Match) -> str:
        replacement = pattern.replace(match)
        if replacement is None:
            return match.group(0)
        leaks.append(Leak(pattern.kind, pattern.label, where))
        return replacement

    return replace


def clean_data(value, *, where: str = "", secrets: tuple[str, ...] = ()) -> Cleaned:
    """Structured data (structuredContent) without secret or internal-id fields.

    Such fields are dropped rather than masked: the model has no use for a key
    whose value it cannot see. Strings (and keys) are cleaned like text. The
    input is not modified.
    """
    # One hint pass over all strings joined, instead of one per string: a
    # 100 KB result may hold thousands of short strings and usually no leak.
    strings: list[str] = []
    _strings(value, strings)
    patterns = _possible("\n".join(strings))
    leaks: list[Leak] = []
    cleaned = _clean_value(value, where, leaks, patterns, secrets)
    return Cleaned(cleaned, tuple(leaks))


def _strings(value, found: list[str]) -> None:
    """Every string inside `value`, appended to `found` (a list, not a generator: a frame per
    nesting level and string is most of the cost on a small result)."""
    if isinstance(value, str):
        found.append(value)
    elif isinstance(value, list | dict):
        for item in value if isinstance(value, list) else value.values():
            if isinstance(item, str):
                found.append(item)
            elif isinstance(item, list | dict):
                _strings(item, found)


def _clean_value(value, where: str, leaks: list[Leak], patterns, secrets):
    if isinstance(value, str):
        value = _redact_secrets(value, secrets, where, leaks) if secrets else value
        return _clean_string(value, where, leaks, patterns) if patterns else value
    if isinstance(value, list):
        return [_clean_value(item, _join(where, i), leaks, patterns, secrets) for i, item in enumerate(value)]
    if isinstance(value, dict):
        kept = {}
        for key, item in value.items():
            path = _join(where, key)
            if not isinstance(key, str):
                kept[key] = _clean_value(item, path, leaks, patterns, secrets)
                continue
            if secrets:
                # A secret echoed as a key: the path recorded must not carry it either.
                key = _redact_secrets(key, secrets, where, leaks)
                path = _join(where, key)
            if is_secret_field(key, item):
                leaks.append(Leak(TOKEN, "credential", path))
            elif is_internal_field(key, item):
                leaks.append(Leak(INTERNAL_ID, "internal id", path))
            else:
                kept[key] = _clean_value(item, path, leaks, patterns, secrets)
        return kept
    return value


def _join(where: str, key) -> str:
    return f"{where}/{key}" if where else str(key)
