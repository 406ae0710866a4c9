"""Tool calls that a model writes as text (R5) — PLACEHOLDER.

The real parser is written in parallel and replaces this file at merge; it keeps exactly this
interface. This stand-in only understands `<tool_call>{json}</tool_call>` (closed or not), so the
turn service can run end to end meanwhile. Pure functions, no I/O.
"""

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class TextCall:
    name: str
    arguments: dict
    raw: str


@dataclass(frozen=True)
class ParsedText:
    calls: tuple[TextCall, ...]
    text: str
    rejected: tuple[str, ...]


_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
_DEBRIS = re.compile(r"</?tool_call>|<\|im_end\|>|<\|eot_id\|>|<think>.*?</think>", re.DOTALL)


def parse_text_calls(text: str, tools: Mapping[str, dict]) -> ParsedText:
    """Calls to known tools (`tools`: model-visible name → inputSchema) found in `text`, the text
    without them, and the fragments that looked like calls but could not be used."""
    calls, rejected = [], []
    for match in _BLOCK.finditer(text or ""):
        raw = match.group(0)
        try:
            payload = json.loads(match.group(1))
        except ValueError:
            rejected.append(raw)
            continue
        name = payload.get("name") if isinstance(payload, dict) else None
        arguments = payload.get("arguments", payload.get("parameters", {})) if isinstance(payload, dict) else None
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                arguments = None
        if name in tools and isinstance(arguments, dict):
            calls.append(TextCall(name=name, arguments=arguments, raw=raw))
        else:
            rejected.append(raw)
    return ParsedText(calls=tuple(calls), text=clean_reply(_BLOCK.sub("", text or "")), rejected=tuple(rejected))


def clean_reply(text: str) -> str:
    """`text` with every tool-call fragment and special token removed, for the customer."""
    return _DEBRIS.sub("", _BLOCK.sub("", text or "")).strip()
