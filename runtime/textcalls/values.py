"""Small readers: names, arguments, literals and typed parameters (package-internal)."""

import ast
import json

from runtime.textcalls.model import MAX_FRAGMENT, MAX_LITERAL, MAX_PARAMETERS, PREFIX_SEPARATOR
from runtime.textcalls.syntax import _BAD, _DECODER, _INTEGER, _NUMBER


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
