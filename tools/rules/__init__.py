"""The tool contract (seed 000, SPEC C1–C9) as pure functions over plain data.

A tool definition is a dict in MCP wire form (camelCase keys: name, title,
description, inputSchema, outputSchema, annotations, _meta). Nothing here
touches the database or the network; the certification service and the
gateway wrap these functions.

Entry points:
- certify_definition(tool, *, server_slug, scenarios) -> findings for C1–C6 and M6
- tool_level(annotations) -> "read" | "write" | "destructive" (M7)
- check_probe_result(result, *, output_schema, budget) -> findings for C8
- check_idempotency(first, second) -> findings for C9
- is_blocking(findings) -> whether the tool is kept away from agents
- overlay.effective_definition(definition, *, overlay, compatible, suggestion)
  -> the definition certification and the gateway read, and what the gateway added (issue 8)
- suggestions.suggest_verb / suggest_capabilities -> suggested `_meta` (C6)
"""

from .annotations import DESTRUCTIVE, LEVELS, READ, WRITE, check_annotations, tool_level
from .descriptions import check_description
from .findings import BLOCKING, WARNING, Finding, is_blocking
from .meta import VERB_KEY, check_meta
from .names import check_name, prefixed_name
from .results import ERROR_TYPES, check_idempotency, check_probe_result
from .overlay import SUGGESTED_KEY
from .schemas import check_input_schema, check_output_schema
from .tasks import check_task_support

__all__ = [
    "BLOCKING",
    "DESTRUCTIVE",
    "ERROR_TYPES",
    "LEVELS",
    "READ",
    "WARNING",
    "WRITE",
    "Finding",
    "certify_definition",
    "check_idempotency",
    "check_probe_result",
    "is_blocking",
    "prefixed_name",
    "tool_level",
]


def certify_definition(tool: dict, *, server_slug: str, scenarios: list[str] | None, compatible: bool = False,
                       overlaid=()) -> list[Finding]:
    """Findings of a tool definition against C1–C6 and M6, in rule order.

    `scenarios` is the tenant's scenario list (T6) that capabilities must come
    from; None when the tenant has not set one, which skips that check.
    `compatible`: the server's contract mode (overlay.py): a missing outputSchema
    then means text results (a warning), not a block, and so does a missing
    capability list (the tool's words named none of the scenarios).
    `overlaid`: the overlay fields the admin set, so hints point to the overlay.
    """
    if not isinstance(tool, dict):
        tool = {}
    meta = tool.get("_meta") if isinstance(tool.get("_meta"), dict) else {}
    name = tool.get("name")
    # A verb phrase Asixto suggested from the name is no evidence of what the tool does (C5).
    suggested = meta.get(SUGGESTED_KEY) if isinstance(meta.get(SUGGESTED_KEY), list) else []
    verb_phrase = None if "verb" in suggested else meta.get(VERB_KEY)
    return [
        *check_name(name, server_slug=server_slug),
        *check_description(tool.get("description")),
        *check_input_schema(tool.get("inputSchema")),
        *check_output_schema(tool.get("outputSchema"), compatible=compatible),
        *check_annotations(tool.get("annotations"), name=name, verb_phrase=verb_phrase, overlaid=overlaid),
        *check_meta(meta, scenarios=scenarios, compatible=compatible),
        *check_task_support(tool.get("execution")),
    ]
