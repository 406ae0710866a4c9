"""Tool calls that models write as text (R5): parsed into calls, and every trace removed.

Models served without native tool calling, or that slip out of it, write their calls in the text:
Hermes/Qwen `<tool_call>{json}</tool_call>`, Qwen3-coder `<function=NAME><parameter=K>V</parameter>`
(and the `<invoke name=…>` variant of MiniMax), GLM `NAME<arg_key>K</arg_key><arg_value>V</arg_value>`,
Llama `<|python_tag|>{json}` and pythonic `[name(a=1)]`, Mistral `[TOOL_CALLS]`, DeepSeek
`<｜tool▁call▁begin｜>`, Kimi `<|tool_call_begin|>`, gpt-oss `to=functions.NAME`, fenced ```json
blocks, or a bare JSON object. `parse_text_calls` finds them (executable only when
they name a tool the model was offered) and returns the text without them, without thinking, special
tokens, orphan tags and SQL; `clean_reply` is only that cleaning, for what reaches the customer.

The text comes from a model, so it is treated as hostile: only the first MAX_TEXT characters are
read, searches only move forward (no nested or unbounded regexes; repeated finds remember their last
answer), fragments and literals are size-bounded, Python literals go through `ast.literal_eval`
(never evaluated), and at most MAX_CALLS calls are taken from one message.
"""

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

MAX_TEXT = 200_000  # characters of one model message that are read; the rest is dropped
MAX_CALLS = 16  # calls taken from one message; the rest are rejected
MAX_REJECTED = 32
MAX_FRAGMENT = 64_000  # a call fragment larger than this is rejected without decoding
MAX_LITERAL = 16_000  # Python literals and pythonic calls parsed with `ast`
MAX_PARAMETERS = 64
MAX_ATTEMPTS = 64  # decode attempts of call-shaped JSON or pythonic lines inside prose
RAW_KEPT = 500  # characters of a rejected fragment kept for the turn record
PREFIX_SEPARATOR = "__"  # `<server slug>__<tool>`, as in tools.rules.names (no Django here)


@dataclass(frozen=True)
class TextCall:
    name: str  # a model-visible tool name from `tools`
    arguments: dict
    raw: str  # the fragment it came from


@dataclass(frozen=True)
class ParsedText:
    calls: tuple[TextCall, ...]
    text: str  # the message with every call, fragment and debris removed, trimmed
    rejected: tuple[str, ...]  # call-like fragments that were not executable, for the turn record


def parse_text_calls(text: str, tools: Mapping[str, dict]) -> ParsedText:
    """`tools` maps each model-visible tool name to its inputSchema (dict)."""
    reader = _Reader(tools)
    if not isinstance(text, str) or not text:
        return ParsedText((), "", ())
    original = text[:MAX_TEXT]
    work = _without_thinking(_own_turn(original))
    work = _cut(work, _scan(work, reader))
    work = _cut(work, [m.span() for m in _DEBRIS.finditer(work)])
    work = _bare_calls(work, reader)
    work = _embedded_calls(work, reader)
    work = _cut(work, _sql_spans(work))
    work = _guarded(work)
    if work != original:
        work = _tidy(work)
    return ParsedText(tuple(reader.calls), work.strip(), tuple(reader.rejected))


def clean_reply(text: str) -> str:
    """Only the cleaning: what may reach the customer (no call syntax, no special tokens, no JSON
    meant for a tool, no SQL). Calls found are dropped, not executed."""
    return parse_text_calls(text, {}).text


# --- Markers -------------------------------------------------------------------------------------

_DS_CALLS_BEGIN, _DS_CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
_DS_CALL_BEGIN, _DS_CALL_END, _DS_SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
_HARMONY, _KIMI = "to=functions.", "<|tool_call_begin|>"
_NAME_SEPARATORS = {_HARMONY: "<|message|>", _KIMI: "<|tool_call_argument_begin|>"}  # NAME…<sep>{json}

# Opener -> closers. Without a closer a fragment ends at the next same opener or at the end.
_CLOSERS = {
    "<tool_call>": ("</tool_call>",),
    "<tool_calls>": ("</tool_calls>",),
    "<function_call>": ("</function_call>",),
    "<function_calls>": ("</function_calls>",),
    "<TOOLCALL>": ("</TOOLCALL>",),
    "<minimax:tool_call>": ("</minimax:tool_call>",),
    "<seed:tool_call>": ("</seed:tool_call>",),
    "<|tool_call|>": ("<|/tool_call|>",),
    "<function=": ("</function>",),
    "<|python_tag|>": ("<|eom_id|>", "<|eot_id|>"),
    _DS_CALLS_BEGIN: (_DS_CALLS_END,),
    _DS_CALL_BEGIN: (_DS_CALL_END,),
    _HARMONY: ("<|call|>",),
    _KIMI: ("<|tool_call_end|>",),
    "<tool_response>": ("</tool_response>",),  # results a model made up: dropped, not executed
    "[TOOL_RESULTS]": ("[/TOOL_RESULTS]",),
    "```": ("```",),
}
_DROPPED = ("<tool_response>", "[TOOL_RESULTS]")
_OPENER = re.compile("|".join(re.escape(o) for o in (*_CLOSERS, "[TOOL_CALLS]")))
_CALL_START = re.compile("|".join(re.escape(o) for o in (*_CLOSERS, "[TOOL_CALLS]") if o not in ("```", *_DROPPED)))

# (opener, closer, whether a closer alone means everything before it was thinking)
_THINKING = (
    ("<think>", "</think>", True),
    ("<thinking>", "</thinking>", True),
    ("[THINK]", "[/THINK]", True),
    ("<seed:think>", "</seed:think>", True),
    ("<|channel|>analysis<|message|>", "<|end|>", False),  # gpt-oss reasoning channel
)

_DEBRIS = re.compile(
    r"<\|start_header_id\|>[^<>\n]{0,40}<\|end_header_id\|>"
    r"|<\|(?:im_start|start)\|>(?:assistant|user|system|tool)?"
    r"|<\|channel\|>(?:analysis|commentary|final)?"
    r"|<\|[\w./ -]{0,64}\|>"
    r"|<｜[^｜<>\n]{0,64}｜>"
    r"|(?i:</?(?:tool_calls?|tool_response|tools|function_calls?|think|thinking|arg_key|arg_value|toolcall|invoke|seed:think|seed:tool_call|minimax:tool_call)\s{0,8}>)"
    r"|(?i:</?(?:function|parameter|invoke)(?:=[^<>\n]{0,200}| name=\"[^\"<>\n]{0,200}\")?\s{0,8}>)"
    r"|\[/?(?:TOOL_CALLS|ARGS|CALL_ID|TOOL_RESULTS|AVAILABLE_TOOLS|INST|THINK)\]"
    r"|</?s>|<(?:eos|bos|end_of_turn)>|<start_of_turn>(?:model|user)?"
)
_OTHER_TURN = re.compile(
    r"<\|im_start\|>(?:user|system|tool)|<\|start_header_id\|>(?:user|system|ipython|tool)"
    r"|<\|start\|>(?:user|system|developer|functions)|<start_of_turn>user|<\|(?:user|system)\|>"
)
# What clean text can never contain, whatever slipped past the parsers (compared lower-cased).
_FORBIDDEN = (
    "<tool_call", "</tool_call", "<function=", "</function", "<parameter=", "<|", "<｜",
    "[tool_calls]", "[args]", "<think>", "</think>", "[think]", "[/think]", "<arg_key>", "<arg_value>",
)  # fmt: skip
_FORBIDDEN_ENDS = frozenset(m[-1] for m in _FORBIDDEN)

_NAME = re.compile(r"[A-Za-z_][\w.\-]{0,127}")
_NAME_THEN_JSON = re.compile(r"([A-Za-z_][\w.\-]{0,127})\s*(\{.*)", re.S)
_MISTRAL_NAMED = re.compile(r"([A-Za-z_][\w.\-]{0,127})(?:\[CALL_ID\][\w-]{0,64})?\[ARGS\]")
_FENCE_INFO = re.compile(r"[\w+.-]{0,30}")
_CALL_LANGS = ("tool_code", "tool_call", "tool_calls", "function_call", "tool")
_SQL_LANGS = ("sql", "mysql", "postgresql", "postgres", "psql", "plpgsql", "sqlite")
_INTEGER = re.compile(r"[+-]?\d{1,40}")
_NUMBER = re.compile(r"-?\d{1,40}(?:\.\d{1,40})?(?:[eE][+-]?\d{1,3})?")
_INVOKE = re.compile(r'<invoke name="([^"<>\n]{1,128})">|</invoke>|<parameter name="([^"<>\n]{1,128})">')
_CALL_JSON = re.compile(r"""\{\s{0,20}["'](?:name|tool_name|function|arguments|parameters|type)["']\s{0,20}:""")
_DECODER = json.JSONDecoder()
_BAD = object()  # arguments that could not be read

# SQL: a keyword, then a shape only SQL has; prose ("select one from the list") stays.
_SQL_START = re.compile(r"(?i)\b(?:select|insert|update|delete|drop|alter|truncate|create)\b")
_T = r"[\w.\"`\[\]]+"  # a table or column name
_SQL_SHAPES = tuple(
    re.compile(p)
    for p in (
        r"SELECT\s[^;]{0,400}?\bFROM\s+" + _T,
        r"(?i:select)\s+(?:\*|(?i:count|sum|avg|min|max)\s*\()[^;\n]{0,400}?(?i:\bfrom)\s+" + _T,
        r"INSERT\s+INTO\s+" + _T,
        r"(?i:insert\s+into)\s+" + _T + r"\s*(?:\(|(?i:values)\b)",
        r"(?i:update)\s+" + _T + r"\s+(?i:set)\s+" + _T + r"\s*=",
        r"DELETE\s+FROM\s+" + _T,
        r"(?i:delete\s+from)\s+" + _T + r"\s+(?i:where)\b",
        r"(?i:drop|alter|truncate)\s+(?i:table)\s+" + _T,
        r"CREATE\s+(?:TABLE\s+" + _T + r"\s*\(|(?:UNIQUE\s+)?INDEX\s+" + _T + r"\s+ON\s|VIEW\s+" + _T + r"\s+AS\s)",
    )
)
_SQL_CONTINUATION = re.compile(
    r"[ \t]*(?:(?:WHERE|AND|OR|FROM|JOIN|LEFT|RIGHT|INNER|OUTER|FULL|ON|ORDER|GROUP|HAVING|LIMIT|"
    r"OFFSET|VALUES|SET|UNION|RETURNING|SELECT)\b|[()])"
)


# --- Reading calls -------------------------------------------------------------------------------


class _Reader:
    """Collects the calls of one message: executable ones, and the rest for the turn record."""

    def __init__(self, tools):
        self.tools = tools if isinstance(tools, Mapping) else {}
        self.calls: list[TextCall] = []
        self.rejected: list[str] = []

    def reject(self, raw):
        raw = raw.strip()[:RAW_KEPT]
        if len(self.rejected) < MAX_REJECTED and raw not in self.rejected:
            self.rejected.append(raw)

    def call(self, name, arguments, raw):
        resolved = _resolve(name, self.tools)
        arguments = _arguments(arguments)
        if resolved is None or arguments is None or len(self.calls) >= MAX_CALLS:
            self.reject(raw)
        else:
            self.calls.append(TextCall(resolved, arguments, raw))

    def objects(self, value, raw):
        """A decoded call object (`name` + `arguments`/`parameters`), or a list of them."""
        for item in (value if isinstance(value, list) else [value])[: MAX_CALLS + 1]:
            name, arguments = _call_shape(item)
            if name is None:
                self.reject(raw)
            else:
                self.call(name, arguments, raw)

    def properties(self, name):
        schema = self.tools.get(_resolve(name, self.tools) or "")
        properties = schema.get("properties") if isinstance(schema, dict) else None
        return properties if isinstance(properties, dict) else {}

    def body(self, body, raw):
        """What sits between call tags: JSON, Qwen3-coder XML, GLM pairs, `name {json}`, pythonic."""
        stripped = _unfenced(body.strip())
        if not stripped:
            return  # an empty pair of tags is debris, not a call
        if stripped[0] in "{[":
            self.json_sequence(stripped, raw)
        elif "<invoke " in stripped:  # MiniMax-M2 and Claude style, read as Qwen3-coder's
            self.functions(_INVOKE.sub(_as_function_tag, stripped), raw)
        elif "<function=" in stripped:
            self.functions(stripped, raw)
        elif "<arg_key>" in stripped:
            self.glm(stripped, raw)
        elif match := _NAME_THEN_JSON.fullmatch(stripped):
            self.call(match[1], match[2], raw)
        elif _NAME.fullmatch(stripped):
            self.call(stripped, {}, raw)
        else:
            self.pythonic(stripped, raw)

    def json_sequence(self, body, raw):
        """JSON call objects or lists, one or several separated by `;` (Llama 3.x)."""
        pos, decoded = 0, 0
        while decoded <= MAX_CALLS:
            while pos < len(body) and body[pos] in " \t\r\n;,":
                pos += 1
            if pos >= len(body):
                return
            try:
                value, pos = _DECODER.raw_decode(body, pos)
            except (ValueError, RecursionError):
                if decoded == 0:
                    value = _literal(body)  # {'name': 'x', 'arguments': {...}}
                    if isinstance(value, (dict, list)):
                        self.objects(value, raw)
                    else:
                        self.pythonic(body, raw)
                elif body[pos:].strip(" \t\r\n;,}]"):
                    self.reject(body[pos:])
                return
            self.objects(value, raw)
            decoded += 1

    def pythonic(self, text, raw):
        calls = _pythonic(text)
        if calls is None:
            self.reject(raw)
        for name, arguments in calls or ():
            self.call(name, arguments, raw)

    def functions(self, body, raw):
        """Qwen3-coder: `<function=NAME><parameter=K>V</parameter>…</function>`, once or more."""
        pos = body.find("<function=")
        for _ in range(MAX_CALLS + 1):
            if pos < 0:
                return
            name_end = body.find(">", pos, pos + 160)
            if name_end < 0 or "\n" in body[pos:name_end]:
                self.reject(body[pos:])
                return
            following = [i for i in (body.find("</function>", name_end), body.find("<function=", name_end)) if i >= 0]
            end = min(following, default=len(body))
            piece = body[pos : end + 11 if body.startswith("</function>", end) else end]
            name, inner = body[pos + 10 : name_end].strip(), _unfenced(body[name_end + 1 : end].strip())
            if "<parameter=" in inner:
                self.call(name, _parameters(inner, self.properties(name)), piece)
            elif not inner or inner[0] in "{[":
                self.call(name, inner, piece)
            else:
                self.reject(piece)
            pos = body.find("<function=", end)

    def glm(self, body, raw):
        """GLM-4.5: `NAME<arg_key>K</arg_key><arg_value>V</arg_value>…`."""
        name = body[: body.find("<arg_key>")].strip()
        properties, arguments, pos = self.properties(name), {}, 0
        for _ in range(MAX_PARAMETERS + 1):
            key_at = body.find("<arg_key>", pos)
            if key_at < 0:
                break
            key_end = body.find("</arg_key>", key_at)
            value_at = body.find("<arg_value>", key_end) if key_end >= 0 else -1
            value_end = body.find("</arg_value>", value_at) if value_at >= 0 else -1
            if value_end < 0:
                arguments = _BAD
                break
            key = body[key_at + 9 : key_end].strip()
            arguments[key] = _typed(body[value_at + 11 : value_end], properties.get(key))
            pos = value_end + 12
        else:
            arguments = _BAD
        self.call(name, arguments, raw)

    def deepseek(self, body, raw):
        """`<｜tool▁call▁begin｜>[function<｜tool▁sep｜>]NAME…<｜tool▁call▁end｜>`, once or more."""
        for piece in body.split(_DS_CALL_BEGIN)[: MAX_CALLS + 2]:
            piece = piece.split(_DS_CALL_END, 1)[0].strip()
            if not piece:
                continue
            left, sep, right = piece.partition(_DS_SEP)
            if not sep:
                self.reject(piece)
            elif left.strip() == "function":  # V3: function<sep>NAME\n```json\n{…}\n```
                name, _, arguments = right.strip().partition("\n")
                self.call(name, _unfenced(arguments.strip()), piece)
            else:  # V3.1: NAME<sep>{…}
                self.call(left, _unfenced(right.strip()), piece)

    def named(self, body, separator, raw):
        """gpt-oss `to=functions.NAME <|constrain|>json<|message|>{…}<|call|>`, Kimi
        `<|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{…}<|tool_call_end|>`."""
        name = _NAME.match(body)
        _, sep, arguments = body.partition(separator)
        if name is None or not sep:
            self.reject(raw)
        else:
            self.call(name.group(), arguments, raw)

    def mistral(self, text, start, pos):
        """`[TOOL_CALLS][{…}]` (v3) or `[TOOL_CALLS]NAME[ARGS]{…}` (v11); returns the fragment's end."""
        while pos < len(text) and text[pos].isspace():
            pos += 1
        named = _MISTRAL_NAMED.match(text, pos)
        try:
            value, end = _DECODER.raw_decode(text, named.end() if named else pos)
        except (ValueError, RecursionError):
            self.reject(text[start:])  # whatever follows the token was meant as a call
            return len(text)
        if named:
            self.call(named[1], value, text[start:end])
        else:
            self.objects(value, text[start:end])
        return end

    def fence(self, content):
        """Whether a fenced block holds calls (recorded) or SQL; plain code blocks stay."""
        info, newline, rest = content.partition("\n")
        has_info = bool(newline) and _FENCE_INFO.fullmatch(info.strip()) is not None
        lang, code = (info.strip().lower(), rest.strip()) if has_info else ("", content.strip())
        if lang in _SQL_LANGS or _sql_spans(code):
            return True
        if _OPENER.search(code):
            _scan(code, self, fences=False)
            return True
        if code[:1] in "{[" and _all_call_objects(value := _decode(code)):
            self.objects(value, code)
            return True
        if lang in _CALL_LANGS or (code.startswith("[") and code.endswith(")]")):
            if calls := _pythonic(code):
                for name, arguments in calls:
                    self.call(name, arguments, code)
                return True
        return False


def _scan(text, reader, *, fences=True):
    """Spans of `text` that are tagged call fragments; their calls go to `reader`."""
    finders = {}

    def find(needle, pos):
        if needle not in finders:
            finders[needle] = _Finder(text, needle)
        return finders[needle](pos)

    spans, pos = [], 0
    for match in _OPENER.finditer(text):
        start, opener, body_start = match.start(), match.group(), match.end()
        if start < pos or (opener == "```" and not fences):
            continue
        if opener == "[TOOL_CALLS]":
            pos = reader.mistral(text, start, body_start)
            spans.append((start, pos))
            continue
        closers = _CLOSERS[opener]
        body_end = end = len(text)
        for needle in (*closers, opener):
            hit = find(needle, body_start)
            if 0 <= hit < body_end:
                body_end, end = hit, hit + len(needle) if needle in closers else hit
        body, raw = text[body_start:body_end], text[start:end]
        if opener == "```":
            if len(body) <= MAX_FRAGMENT:  # larger blocks are not skipped: their inside is scanned
                if reader.fence(body):
                    spans.append((start, end))
                pos = end
            continue
        if len(body) > MAX_FRAGMENT:
            reader.reject(raw)
        elif opener == "<function=":
            reader.functions(raw, raw)
        elif opener in (_DS_CALLS_BEGIN, _DS_CALL_BEGIN):
            reader.deepseek(body, raw)
        elif opener in _NAME_SEPARATORS:
            reader.named(body, _NAME_SEPARATORS[opener], raw)
        elif opener not in _DROPPED:
            reader.body(body, raw)
        spans.append((start, end))
        pos = end
    return spans


def _bare_calls(text, reader):
    """A message that is only a call (JSON or a pythonic list), and lines that are pythonic lists.
    Returns what is left."""
    whole = text.strip()
    if whole[:1] in "{[" and whole[-1:] in "}]" and _all_call_objects(value := _decode(whole)):
        reader.objects(value, whole)
        return ""
    if whole.startswith("[") and whole.endswith(")]") and (calls := _pythonic(whole)):
        for name, arguments in calls:
            reader.call(name, arguments, whole)
        return ""
    spans, pos, attempts = [], 0, 0
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith(")]") and attempts < MAX_ATTEMPTS:
            attempts += 1
            if calls := _pythonic(stripped):
                for name, arguments in calls:
                    reader.call(name, arguments, stripped)
                spans.append((pos, pos + len(line)))
        pos += len(line) + 1
    return _cut(text, spans)


def _embedded_calls(text, reader):
    """Call-shaped JSON inside prose: JSON meant for a tool, removed and recorded, never executed
    (a bare call is executed only when it is the whole message)."""
    spans, pos = [], 0
    for attempt, match in enumerate(_CALL_JSON.finditer(text)):
        start = match.start()
        if attempt >= MAX_ATTEMPTS:
            break
        if start < pos:
            continue
        before = start - 1
        while before >= 0 and start - before < 8 and text[before] in " \t\r\n":
            before -= 1
        for at in (before, start) if before >= 0 and text[before] == "[" else (start,):
            value, end = _decode_at(text, at)
            if _all_call_objects(value):
                reader.reject(text[at:end])
                spans.append((at, end))
                pos = end
                break
    return _cut(text, spans)


# --- Small readers -------------------------------------------------------------------------------


def _resolve(name, tools):
    """The model-visible tool `name` means, or None. An unprefixed name counts only when exactly one
    tool's unprefixed part matches it."""
    if not isinstance(name, str):
        return None
    name = name.strip().removeprefix("functions.")
    if name in tools:
        return name
    if not name or PREFIX_SEPARATOR in name:
        return None
    matches = [tool for tool in tools if tool.partition(PREFIX_SEPARATOR)[2] == name]
    return matches[0] if len(matches) == 1 else None


def _arguments(value):
    """A dict of arguments from what the model wrote (object, JSON string, Python literal), or None."""
    if value is None:
        return {}
    if isinstance(value, str):
        value = value.strip()
        if not value:
            return {}
        value = _decode(value)
        if isinstance(value, str):  # encoded twice
            value = _decode(value.strip())
    if not isinstance(value, dict):
        return None
    try:  # what goes to the gateway is plain JSON: no bytes, sets, NaN from Python literals
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        return None


def _as_function_tag(match):
    if match[1]:
        return f"<function={match[1]}>"
    return f"<parameter={match[2]}>" if match[2] else "</function>"


def _unwrapped(item):
    """The call inside OpenAI's `{"type": "function", "function": {…}}`; `tool_name` (Command R)
    read as `name`."""
    if isinstance(item, dict) and isinstance(item.get("function"), dict):
        item = item["function"]
    if isinstance(item, dict) and "name" not in item and "tool_name" in item:
        item = {("name" if key == "tool_name" else key): value for key, value in item.items()}
    return item


def _call_shape(item):
    """(name, arguments) of a decoded call object, loosely; (None, None) when it has no name."""
    item = _unwrapped(item)
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        return None, None
    for key in ("arguments", "parameters"):
        if key in item:
            return item["name"], item[key]
    return item["name"], None


_CALL_KEYS = frozenset({"name", "tool_name", "arguments", "parameters", "id", "type", "function"})


def _all_call_objects(value):
    """Strictly call-shaped JSON (only call keys, a name, arguments), alone or as a list: what JSON
    outside call tags must look like to count as a call."""
    items = value if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, dict) and set(item) <= _CALL_KEYS:
            item = _unwrapped(item)
        if not (
            isinstance(item, dict)
            and set(item) <= _CALL_KEYS
            and isinstance(item.get("name"), str)
            and ("arguments" in item or "parameters" in item)
        ):
            return False
    return bool(items)


def _decode(text):
    """JSON, else a bounded Python literal; None when neither."""
    if not isinstance(text, str) or len(text) > MAX_FRAGMENT:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _literal(text)


def _literal(text):
    if len(text) > MAX_LITERAL:
        return None
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _decode_at(text, at):
    """The JSON or Python literal that starts at `at`, and where it ends; (None, at) if none."""
    try:
        return _DECODER.raw_decode(text, at)
    except (ValueError, RecursionError):
        pass
    end = _balanced_end(text, at)
    return (_literal(text[at:end]), end) if end > at else (None, at)


def _balanced_end(text, start):
    """End of the bracketed literal at `start` (quotes respected), within MAX_LITERAL; else `start`."""
    depth, quote, escaped = 0, "", False
    for i in range(start, min(len(text), start + MAX_LITERAL)):
        char = text[i]
        if quote:
            escaped, quote = (not escaped and char == "\\"), ("" if char == quote and not escaped else quote)
        elif char in "'\"":
            quote = char
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return start


def _pythonic(text):
    """`[name(a="x", b=2), …]` or `name(a="x")` with literal keyword arguments → [(name, args)];
    None for anything else (never evaluated)."""
    if len(text) > MAX_LITERAL:
        return None
    try:
        node = ast.parse(text.strip(), mode="eval").body
        nodes = node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]
        calls = []
        for call in nodes:
            if not isinstance(call, ast.Call) or call.args or not isinstance(call.func, ast.Name):
                return None
            if any(keyword.arg is None for keyword in call.keywords):
                return None
            calls.append((call.func.id, {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}))
        return calls or None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _parameters(body, properties):
    """Qwen3-coder `<parameter=K>V</parameter>` pairs, typed from the schema; _BAD when mangled."""
    arguments, pos = {}, 0
    for _ in range(MAX_PARAMETERS + 1):
        at = body.find("<parameter=", pos)
        if at < 0:
            return arguments
        key_end = body.find(">", at, at + 160)
        if key_end < 0:
            return _BAD
        following = [i for i in (body.find("</parameter>", key_end), body.find("<parameter=", key_end)) if i >= 0]
        end = min(following, default=len(body))
        key = body[at + 11 : key_end].strip()
        arguments[key] = _typed(body[key_end + 1 : end], properties.get(key))
        pos = end + 12 if body.startswith("</parameter>", end) else end
    return _BAD


def _typed(value, schema):
    """A parameter written as text, typed from its JSON schema; kept as text when it does not fit
    (the gateway then tells the model what is wrong)."""
    value = value.removeprefix("\n").removesuffix("\n")
    declared = schema.get("type") if isinstance(schema, dict) else None
    types = [declared] if isinstance(declared, str) else [t for t in declared or () if isinstance(t, str)]
    if not types or "string" in types:
        return value
    text = value.strip()
    for kind in types:
        if kind == "integer" and _INTEGER.fullmatch(text):
            return int(text)
        if kind == "number" and _NUMBER.fullmatch(text):
            return json.loads(text)
        if kind == "boolean" and text.lower() in ("true", "false"):
            return text.lower() == "true"
        if kind == "null" and text.lower() in ("null", "none"):
            return None
        if kind in ("object", "array") and isinstance(decoded := _decode(text), dict if kind == "object" else list):
            return decoded
    return value


def _unfenced(text):
    """`text` without a Markdown fence around it."""
    if text.startswith("```"):
        text = text.partition("\n")[2] if "\n" in text else text[3:]
        text = text.strip().removesuffix("```").strip()
    return text


class _Finder:
    """`str.find` that remembers its last answer, so forward searches from many places stay linear."""

    def __init__(self, text, needle):
        self.text, self.needle, self.since, self.found = text, needle, None, -1

    def __call__(self, pos):
        if self.since is not None and self.since <= pos and (self.found < 0 or pos <= self.found):
            return self.found
        self.since, self.found = pos, self.text.find(self.needle, pos)
        return self.found


# --- Cleaning ------------------------------------------------------------------------------------


def _own_turn(text):
    """`text` up to where the model starts writing someone else's turn (a missing stop token)."""
    match = _OTHER_TURN.search(text)
    return text[: match.start()] if match else text


def _without_thinking(text):
    """`text` without reasoning: closed blocks, a block never closed (it runs until a call begins),
    and everything before a closer that has no opener."""
    final = text.rfind("<|channel|>final<|message|>")
    if final >= 0:
        text = text[final + len("<|channel|>final<|message|>") :]
    for opener, closer, lone_closer in _THINKING:
        first_close = text.find(closer)
        if lone_closer and first_close >= 0 and text.find(opener, 0, first_close) < 0:
            text = text[first_close + len(closer) :]
        spans, pos = [], 0
        while (start := text.find(opener, pos)) >= 0:
            end = text.find(closer, start)
            if end < 0:
                call = _CALL_START.search(text, start)
                spans.append((start, call.start() if call else len(text)))
                break
            spans.append((start, end + len(closer)))
            pos = end + len(closer)
        text = _cut(text, spans)
    return text


def _sql_spans(text):
    """SQL statements: from the keyword to `;`, a backtick or the end of the line, plus the lines
    that continue it (WHERE, AND, ORDER …)."""
    spans, pos = [], 0
    for attempt, match in enumerate(_SQL_START.finditer(text)):
        start = match.start()
        if attempt >= 1000:
            break
        if start < pos or not any(shape.match(text, start) for shape in _SQL_SHAPES):
            continue
        end = start
        for _ in range(50):
            line_end = text.find("\n", end)
            line_end = len(text) if line_end < 0 else line_end
            stops = [i for i in (text.find(";", end, line_end), text.find("`", end, line_end)) if i >= 0]
            if stops:
                end = min(stops) + (text[min(stops)] == ";")
                break
            end = line_end
            if line_end >= len(text) or not _SQL_CONTINUATION.match(text, line_end + 1):
                break
            end = line_end + 1
        if start > 0 and text[start - 1] == "`" and text.startswith("`", end):
            start, end = start - 1, end + 1  # inline code that held only the statement
        spans.append((start, end))
        pos = end
    return spans


def _cut(text, spans):
    """`text` without `spans`; a space keeps the words on both sides of a cut apart."""
    if not spans:
        return text
    pieces, pos = [], 0
    for start, end in sorted(spans):
        if end <= pos:
            continue
        pieces.append(text[pos : max(start, pos)])
        pos = end
    pieces.append(text[pos:])
    out, last = [pieces[0]], pieces[0][-1:]
    for piece in pieces[1:]:
        if piece and last and not last.isspace() and not piece[0].isspace():
            out.append(" ")
        out.append(piece)
        last = piece[-1:] or last
    return "".join(out)


def _guarded(text):
    """`text` with every forbidden marker removed, also the ones removal itself would create."""
    lowered = text.lower()
    if not any(marker in lowered for marker in _FORBIDDEN):
        return text
    out = []
    for char in text:
        out.append(char)
        if char.lower() in _FORBIDDEN_ENDS:
            tail = "".join(out[-12:]).lower()
            for marker in _FORBIDDEN:
                if tail.endswith(marker):
                    del out[-len(marker) :]
                    break
    return "".join(out)


_BLANK_LINES = re.compile(r"\n{3,}")
_INNER_SPACES = re.compile(r"(?<=\S)[ \t]{2,}(?=\S)")


def _tidy(text):
    """Whitespace left behind by removals."""
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return _INNER_SPACES.sub(" ", _BLANK_LINES.sub("\n\n", text))
