"""Translatable text kept as a code and its parameters, rendered in the reader's language (A3).

A sync runs on a worker for whichever admin asked; what it notices (findings, the sync's error)
is read later by people who chose other languages. So what is stored is not text but how to make
it: a *code* and its *parameters*. `render_text(code, params)` makes the text in the language
active when it is read.

Codes:
- a gettext msgid (the English source): the rules write their messages as lazy translations
  (`gettext_lazy`, `format_lazy`), which already hold the msgid and the values; `text_code`
  takes them out. Placeholders are `{name}` (str.format, as `format_lazy` uses) or `%(name)s`
  (older messages); which one is told from the msgid, as gettext's own tools do.
- `mcp:<code>`: an error of the connection layer (`McpError.code`/`.params`), rendered by
  `tools.mcp.errors.render_error`, with the English text it had kept beside it in case that
  code is not known (any more).
- `literal`: text that was never translatable (a plain string), shown as it was stored.

Positional values (`format_lazy("{}, {}", a, b)`) are kept in order under "_args". Any other
parameter is a plain value, a list of parameters (shown joined with "; "), or a nested
`{"code": ..., "params": ...}` for a translatable part (the error inside "The live probe
failed: {error}"). Pure functions; no database.
"""

from dataclasses import dataclass, field

from django.utils.functional import Promise
from django.utils.text import _format_lazy
from django.utils.translation import gettext

LITERAL = "literal"
POSITIONAL = "_args"  # the positional values of a `format_lazy("{}, {}", a, b)`
MCP_PREFIX = "mcp:"
MAX_PARAM_CHARS = 4000  # a parameter can quote a tenant's server; keep stored rows bounded
_SCALARS = (str, int, float, bool, type(None))


@dataclass(frozen=True)
class CodedText:
    """A text as a code and parameters; shows itself in the active language. Use it where a
    message cannot be a lazy translation (a connection error, an older `%`-style message)."""

    code: str
    params: dict = field(default_factory=dict)

    def __str__(self):
        return render_text(self.code, self.params)


def coded(message, **params) -> CodedText:
    """`message` (a `gettext_lazy` msgid, so it is extracted for translators) with `params`."""
    code, _params = text_code(message)
    return CodedText(code, {name: _param(value) for name, value in params.items()})


def text_code(message) -> tuple[str, dict]:
    """The code and parameters of `message`: a lazy translation, a CodedText, or plain text."""
    if isinstance(message, CodedText):
        return message.code, dict(message.params)
    if isinstance(message, Promise):
        found = _lazy_call(message)
        if found is not None:
            return found
    return LITERAL, {"text": _bounded(str(message))}


def error_code(exc) -> tuple[str, dict]:
    """The code and parameters of an error raised during a sync or a probe.

    `McpError` gains `.code` and `.params` (with `tools.mcp.errors.render_error`); until then,
    and for any other error, its English message is stored under the literal code."""
    code, params = getattr(exc, "code", None), getattr(exc, "params", None)
    message = getattr(exc, "message", None) or str(exc)
    if isinstance(code, str) and code and isinstance(params, dict) and _is_mcp_error(exc):
        return f"{MCP_PREFIX}{code}", {"params": _json_safe(params), "text": _bounded(str(message))}
    return text_code(message)


def render_text(code: str, params: dict | None) -> str:
    """The text of `code` with `params`, in the active language."""
    params = params or {}
    if code == LITERAL:
        return str(params.get("text", ""))
    if code.startswith(MCP_PREFIX):
        return _render_mcp(code[len(MCP_PREFIX):], params)
    positional = [_shown(value) for value in params.get(POSITIONAL, [])]
    values = {name: _shown(value) for name, value in params.items() if name != POSITIONAL}
    for template in (gettext(code), code):  # a broken translation falls back to the English
        try:
            return _fill(template, positional, values)
        except (KeyError, IndexError, ValueError, TypeError):
            continue
    return code


def _fill(template: str, positional: list, values: dict) -> str:
    if not values and not positional:
        return template
    if "%(" in template:
        return template % values
    return template.format(*positional, **values)


def _render_mcp(code: str, params: dict) -> str:
    from tools.mcp import errors  # the connection layer may not render codes yet

    render = getattr(errors, "render_error", None)
    if render is not None:
        try:
            return str(render(code, params.get("params") or {}))
        except Exception:  # an unknown or renamed code: the English text kept beside it
            pass
    return str(params.get("text", code))


def _shown(value):
    if isinstance(value, dict) and "code" in value:
        return render_text(value["code"], value.get("params"))
    if isinstance(value, list):
        return "; ".join(str(_shown(item)) for item in value)
    return value


def _json_safe(value):
    if isinstance(value, str):
        return _bounded(value)
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, (list, tuple)):
        return [_json_safe(item) for item in value]
    if isinstance(value, dict):
        return {str(name): _json_safe(item) for name, item in value.items()}
    return _bounded(str(value))


def _param(value):
    """A parameter as stored: plain values stay, translatable parts become nested codes."""
    if isinstance(value, (CodedText, Promise)):
        code, params = text_code(value)
        if code == LITERAL:
            return params["text"]
        return {"code": code, "params": params}
    if isinstance(value, str):
        return _bounded(value)
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, (list, tuple)):
        return [_param(item) for item in value]
    # Anything else (a dict included) is shown as text: only nested translatable parts, made
    # above, are stored as {"code", "params"}, so a value can never become a template.
    return _bounded(str(value))


def _lazy_call(message: Promise) -> tuple[str, dict] | None:
    # A Django lazy object tells what it will call through its pickling contract.
    try:
        _unpickle, (func, args, kwargs, *_classes) = message.__reduce__()
    except (TypeError, ValueError):
        return None
    if func is gettext and len(args) == 1 and not kwargs and isinstance(args[0], str):
        return args[0], {}
    if func is _format_lazy and args:
        template = args[0]
        if isinstance(template, Promise):
            inner = _lazy_call(template)
            if inner is None or inner[1]:
                return None
            template = inner[0]
        if isinstance(template, str):
            params = {name: _param(value) for name, value in kwargs.items()}
            if len(args) > 1:
                params[POSITIONAL] = [_param(value) for value in args[1:]]
            return template, params
    return None


def _is_mcp_error(exc) -> bool:
    from tools.mcp import McpError

    return isinstance(exc, McpError)


def _bounded(text: str) -> str:
    return text if len(text) <= MAX_PARAM_CHARS else text[: MAX_PARAM_CHARS - 1] + "…"
