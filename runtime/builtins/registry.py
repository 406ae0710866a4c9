"""Built-in tools as tools (R12): their MCP-style definitions, the reasons a message gives to
attach them, and the one call path that runs them under the gateway's contract.

A built-in has the same shape as a tenant's tool: `asixto__<tool>`, a description, an
`inputSchema` closed with `additionalProperties: false`, an `outputSchema`, annotations and the
`_meta` verb and capabilities. Its arguments are checked by the gateway's validator
(tools/rules/validation.py), what the model reads passes the gateway's sanitiser
(tools/gateway/sanitize.py) and every call leaves a record where gateway calls leave theirs
(tools.ToolCall, source "turn", tool_name `asixto__…`, no tool row).

Each tool family lives in its own module and registers its tools here with `register`."""

import hashlib
import json
import re
import time
import unicodedata
import uuid
from dataclasses import dataclass, field
from typing import Callable

from django.conf import settings
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from tools.gateway import CallOutcome, records
from tools.gateway.sanitize import model_text
from tools.models import ToolCall
from tenants.selectors import current_tenant
from tools.rules.annotations import tool_level
from tools.rules.validation import build_validator, first_error

PREFIX = "asixto__"
VERB_KEY = "com.asixto/verb"
CAPABILITIES_KEY = "com.asixto/capabilities"
# What the model reads from a built-in is bounded like a tenant tool's result (R4).
RESULT_BUDGET = 3000


class Refusal(Exception):
    """A built-in declines the call (bad date, unknown skill, number not in the turn…): the model
    is told why, as a business error, and can correct itself."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text


@dataclass
class Context:
    """What a built-in may know of the turn calling it."""

    turn_id: uuid.UUID | None
    conversation_id: str
    channel: str
    idempotency_key: str
    language: str
    timezone: str = "UTC"
    evidence: tuple[str, ...] = ()  # the customer's message and the tool results read so far (charts)
    skills: tuple = ()  # the skills this turn may load


@dataclass
class Result:
    structured: dict
    text: str = ""  # what the model reads; the structured content as JSON when empty
    public: bool = False  # R13: taken from a public source (web search, a public page)
    chart: dict | None = None  # a chart spec for the channel (draw_chart)
    skill: object = None  # the skill loaded (invoke_skill)


@dataclass
class BuiltinTool:
    """One built-in tool, shaped like a catalog Tool where the turn reads one."""

    definition: dict
    run: Callable[[dict, Context], Result]
    reasons: tuple = ()  # compiled patterns over the folded message; any match attaches the tool
    public: bool = False  # needs the tenant's public-sources switch (R13)
    verb_language: str = "en"
    definition_hash: str = field(init=False)

    def __post_init__(self):
        self.definition_hash = hashlib.sha256(json.dumps(self.definition, sort_keys=True).encode()).hexdigest()

    @property
    def prefixed_name(self) -> str:
        return self.definition["name"]

    @property
    def level(self) -> str:
        """read, write or destructive, from its annotations, as a catalog tool's (M7)."""
        return tool_level(self.definition.get("annotations"))


def allowed(tool: BuiltinTool, channel: str) -> bool:
    """The tenant's policies hold for a built-in as for a catalog tool (issue 19, M1): its level
    on `channel` (the exposure policy, M7), and the public-sources switch for a public one (R13)."""
    tenant = current_tenant()
    return tenant.allows_level(channel, tool.level) and (tenant.public_sources or not tool.public)


TOOLS: dict[str, BuiltinTool] = {}


def definition(*, name, title, description, properties, required, output, verb, capabilities, read_only=False,
               destructive=False, idempotent=True, open_world=False) -> dict:
    return {
        "name": PREFIX + name, "title": title, "description": description,
        "inputSchema": {"type": "object", "additionalProperties": False, "required": required,
                        "properties": properties},
        "outputSchema": {"type": "object", **output},
        "annotations": {"title": title, "readOnlyHint": read_only, "destructiveHint": destructive,
                        "idempotentHint": idempotent, "openWorldHint": open_world},
        "_meta": {VERB_KEY: verb, CAPABILITIES_KEY: capabilities},
    }


def register(tool: BuiltinTool) -> BuiltinTool:
    TOOLS[tool.prefixed_name] = tool
    return tool


def is_builtin(name: str) -> bool:
    return name.startswith(PREFIX)


def fold(text: str) -> str:
    """Lowercase, accents removed, spaces collapsed: what the reason patterns read."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return re.sub(r"\s+", " ", "".join(c for c in decomposed if not unicodedata.combining(c)))


def reasons(*patterns: str) -> tuple:
    return tuple(re.compile(pattern) for pattern in patterns)


def gives_reason(tool: BuiltinTool, folded_message: str) -> bool:
    return any(pattern.search(folded_message) for pattern in tool.reasons)


# ---------------------------------------------------------------- calling one

def call_builtin(*, tool: BuiltinTool, arguments, context: Context) -> tuple[CallOutcome, Result | None]:
    """Validate, run, sanitise and record one call. Never raises for what the model got wrong."""
    started, started_at = time.perf_counter(), timezone.now()
    result = None
    with translation.override(context.language or settings.LANGUAGE_CODE):
        problem = first_error(build_validator(tool.definition["inputSchema"]), arguments)
        if not allowed(tool, context.channel):
            text = _("The tool %(name)s is not allowed on this channel. Do not use it; tell the customer this cannot be done here.") % {
                "name": tool.prefixed_name}
            outcome = CallOutcome(outcome=ToolCall.Outcome.REFUSED, model_text=text, error=text)
        elif problem:
            text = _("The arguments for %(name)s are not valid: %(problem)s. Correct them and call the tool again.") % {
                "name": tool.prefixed_name, "problem": problem}
            outcome = CallOutcome(outcome=ToolCall.Outcome.INVALID_ARGUMENTS, model_text=text, error=problem)
        else:
            try:
                result = tool.run(arguments, context)
            except Refusal as refusal:
                outcome = CallOutcome(outcome=ToolCall.Outcome.BUSINESS_ERROR, model_text=refusal.text,
                                      error=refusal.text[:500], error_type="refusal")
            else:
                raw = {"content": [{"type": "text", "text": result.text}] if result.text else [],
                       "structuredContent": result.structured}
                seen = model_text(raw, channel=context.channel, budget=RESULT_BUDGET, language=context.language)
                outcome = CallOutcome(outcome=ToolCall.Outcome.OK, model_text=seen.text, structured=seen.structured,
                                      truncated=seen.truncated, result_chars=seen.original_chars, attempts=1)
    outcome.duration_ms = (time.perf_counter() - started) * 1000
    outcome.record_id = _record(tool, arguments, context, outcome, started_at)
    return outcome, result


def _record(tool, arguments, context, outcome, started_at):
    # The gateway's own record, so the dashboard's tool-call lists show built-ins beside catalog
    # tools. `source` stays "turn" (a new value needs a tools migration); the `asixto__` name and
    # the empty tool say it is a built-in.
    record_id = uuid.uuid4()
    records.submit({
        "id": record_id, "tool_id": None, "tool_name": tool.prefixed_name, "source": ToolCall.Source.TURN,
        "turn_id": context.turn_id, "conversation_id": context.conversation_id, "channel": context.channel,
        "idempotency_key": context.idempotency_key, "request_ids": [], "attempts": outcome.attempts,
        "started_at": started_at, "duration_ms": round(outcome.duration_ms, 3), "outcome": str(outcome.outcome),
        "http_status": None, "error": outcome.error[:2000], "error_code": "", "error_params": {},
        "arguments": arguments if isinstance(arguments, dict) else {"_": str(arguments)[:500]},
        "result_chars": outcome.result_chars, "model_chars": len(outcome.model_text), "truncated": outcome.truncated,
        "violations": [],
    })
    return record_id
