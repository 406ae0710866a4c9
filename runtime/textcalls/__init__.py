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

The package, one module per concern: `model` (the returned shapes and the limits), `syntax` (markers
and bounded patterns), `reading` (the formats), `values` (names, arguments, typed parameters),
`cleaning` (what never reaches the customer).
"""

from collections.abc import Mapping

from runtime.textcalls.cleaning import _cut, _guarded, _own_turn, _sql_spans, _tidy, _without_thinking
from runtime.textcalls.model import MAX_CALLS, MAX_TEXT, ParsedText, TextCall
from runtime.textcalls.reading import _bare_calls, _embedded_calls, _Reader, _scan
from runtime.textcalls.syntax import _DEBRIS

__all__ = ["MAX_CALLS", "MAX_TEXT", "ParsedText", "TextCall", "clean_reply", "parse_text_calls", "TEXT_CALLS_NOT_RUN"]


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


# What the model is told, once a turn, when its answer held call-shaped text that was not run
# (`ParsedText.rejected`): call JSON inside prose is a call or a quotation (of the customer, of an
# example), and a name may not be offered; the model says which by calling the tool, or answering.
TEXT_CALLS_NOT_RUN = (
    "Your last answer contained a tool call written inside its text. It was not run, and the customer has "
    "received nothing from it. If you meant to use a tool, call it now with tool calling, using a tool you "
    "were offered. If you were quoting or showing an example, answer again without it. Never say that an "
    "action was done or a result found unless a tool returned it."
)
