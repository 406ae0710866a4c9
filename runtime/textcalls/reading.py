"""Reading calls out of a message, format by format, into a `_Reader` (package-internal)."""

from collections.abc import Mapping

from runtime.textcalls.cleaning import _cut, _sql_spans
from runtime.textcalls.model import MAX_ATTEMPTS, MAX_CALLS, MAX_FRAGMENT, MAX_PARAMETERS, MAX_REJECTED, RAW_KEPT, TextCall
from runtime.textcalls.syntax import (
    _BAD, _CALL_JSON, _CALL_LANGS, _CLOSERS, _DECODER, _DROPPED, _DS_CALL_BEGIN, _DS_CALL_END, _DS_CALLS_BEGIN,
    _DS_SEP, _FENCE_INFO, _INVOKE, _MISTRAL_NAMED, _NAME, _NAME_SEPARATORS, _NAME_THEN_JSON, _OPENER, _SQL_LANGS,
)
from runtime.textcalls.values import (
    _all_call_objects, _arguments, _as_function_tag, _call_shape, _decode, _decode_at, _Finder, _literal, _parameters,
    _pythonic, _resolve, _typed, _unfenced,
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
