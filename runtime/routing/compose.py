"""The composed instruction (R6): the platform, not the model, writes what the routed step asks,
in the tool's own wording — its `com.asixto/verb`, its name and the inputs of its inputSchema —
with the facts the router found (the request with its references resolved, how many, the values
the customer gave). Pure functions.

The instruction is in English on purpose, whatever the catalog's or the customer's language: the
reply is pinned to the customer's language separately (R7). The values the customer gave are
offered as arguments only where they fit the tool's inputSchema; the model still makes the call
itself (no `tool_choice` forcing: a constrained decoder loops, and an answer that never comes is
worse than prose).
"""

import json

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from runtime.routing.candidates import ToolCard
from runtime.routing.router import Facts

MAX_INPUTS_LISTED = 12


def _inputs(schema: dict) -> list[str]:
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = set(schema.get("required") or [])
    lines = []
    for name, prop in list(properties.items())[:MAX_INPUTS_LISTED]:
        prop = prop if isinstance(prop, dict) else {}
        about = prop.get("description") or prop.get("title") or ""
        if isinstance(prop.get("enum"), list):
            about = (about + " " if about else "") + "one of " + ", ".join(json.dumps(v, ensure_ascii=False) for v in prop["enum"][:12])
        need = "required" if name in required else "optional"
        lines.append(f"  - {name} ({need}){': ' + str(about)[:200] if about else ''}")
    return lines


def fitting_details(card: ToolCard, details: dict) -> dict:
    """The customer's values that are inputs of the tool and valid for them, one by one."""
    properties = card.input_schema.get("properties") if isinstance(card.input_schema.get("properties"), dict) else {}
    fitting = {}
    for name, value in (details or {}).items():
        prop = properties.get(name)
        if not isinstance(prop, dict):
            continue
        try:
            if Draft202012Validator(prop).is_valid(value):
                fitting[name] = value
        except SchemaError:
            continue
    return fitting


def compose_instruction(*, card: ToolCard, facts: Facts, confirmed: bool = True) -> str:
    """The instruction of the routed step. A tool that changes something (`card.acts`) is called only
    once the customer has confirmed the action and its details, unless `confirmed`: they already asked
    for exactly that (`route.confirmed`)."""
    verb = card.verb or card.title or card.name
    if card.acts and not confirmed:
        first = (f"The customer's message may ask for this step: \"{verb}\", with the tool `{card.name}`; it is the only "
                 "tool for this step. It changes something for the customer, so do not call it yet: first tell the "
                 "customer in one short sentence what you would do, with the details you would use, and ask them to "
                 "confirm. Call it only after they confirm. If they only wanted to know something, answer that instead.")
    else:
        first = (f"The customer's message asks for this step: \"{verb}\". Do it now by calling the tool `{card.name}`; it "
                 "is the only tool for this step.")
    lines = [first, f"What the customer asks: {facts.request}"]
    if facts.quantity:
        lines.append(f"How many: {facts.quantity}")
    if facts.references:
        lines.append(f"It refers to earlier messages: {facts.references}")
    inputs = _inputs(card.input_schema)
    if inputs:
        lines.append(f"The inputs of `{card.name}`:")
        lines.extend(inputs)
    known = fitting_details(card, facts.details)
    if known:
        lines.append("Values the customer already gave: " + json.dumps(known, ensure_ascii=False))
    lines.append(
        "Use only what the customer said: never invent a value. If a required input is missing, ask the customer "
        "for it instead of calling the tool."
    )
    return "\n".join(lines)


def routed_messages(messages: list[dict], instruction: str) -> list[dict]:
    """The loop's first request with the instruction added to its system message (some chat
    templates accept a system message only at the start)."""
    first = dict(messages[0])
    first["content"] = f"{first.get('content') or ''}\n\n## Step\n{instruction}".strip()
    return [first, *messages[1:]]
