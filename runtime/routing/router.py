"""The router call (R6): a small model reads the conversation — only the conversation, never the
agent's instructions nor retrieved material, so it cannot drift into answering — and returns
facts as JSON: which of the candidate tools the request needs, what is asked (standalone, with
references to earlier messages resolved), how many, and whether the request is clear.

`router_messages` builds the request (pure); `parse_facts` validates the answer against
`FACTS_SCHEMA` (jsonschema) and the candidates; anything invalid, unclear, "none", or a tool that
was not a candidate gives `None`, and the turn proceeds unrouted. `ask_router` makes the call
on the tenant's router endpoint (else its main one) with a short deadline.
"""

import json
import re
from dataclasses import dataclass, field

from django.conf import settings
from jsonschema import Draft202012Validator

from runtime.model_client import Endpoint, ModelError, complete
from runtime.routing.candidates import ToolCard

MAX_TRANSCRIPT_MESSAGES = 8
MESSAGE_CLIP = 600
MAX_ANSWER_CHARS = 4000

FACTS_SCHEMA = {
    "type": "object",
    "required": ["tool", "request", "clear"],
    "properties": {
        "tool": {"type": "string", "maxLength": 250},
        "request": {"type": "string", "minLength": 1, "maxLength": 400},
        "quantity": {"type": ["integer", "null"], "minimum": 1, "maximum": 100},
        "references": {"type": ["string", "null"], "maxLength": 400},
        "details": {"type": ["object", "null"], "maxProperties": 20},
        "clear": {"type": "boolean"},
    },
}
_validator = Draft202012Validator(FACTS_SCHEMA)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Facts:
    tool: str
    request: str
    quantity: int | None = None
    references: str | None = None
    details: dict = field(default_factory=dict, hash=False)

    def to_dict(self) -> dict:
        return {"tool": self.tool, "request": self.request, "quantity": self.quantity,
                "references": self.references, "details": self.details}

    @classmethod
    def from_dict(cls, data: dict) -> "Facts":
        return cls(tool=data["tool"], request=data["request"], quantity=data.get("quantity"),
                   references=data.get("references"), details=data.get("details") or {})


def router_endpoint(tenant) -> Endpoint:
    """The tenant's router model if it set one (T6), else its main model."""
    if tenant.router_base_url and tenant.router_model_name:
        return Endpoint(tenant.router_base_url, tenant.router_model_name, tenant.router_api_key)
    return Endpoint(tenant.model_base_url, tenant.model_name, tenant.model_api_key)


def router_messages(*, conversation: list[dict], candidates: list[ToolCard]) -> list[dict]:
    """The router's request: the task, the candidate actions (name and verb), the conversation."""
    options = "\n".join(f"- {card.name}: {card.verb or card.title or card.name}" for card in candidates)
    task = (
        "You read a conversation between a customer and a company's agent. Do not answer the customer. "
        "Decide which one of these actions the customer's last message asks for, if any:\n"
        f"{options}\n"
        "Reply with one JSON object and nothing else:\n"
        '{"tool": "<action name, or none>", "request": "<what the customer asks, as one standalone sentence in '
        'the customer\'s language, with words like \'that one\' or \'in red\' replaced by what they refer to>", '
        '"quantity": <how many items the customer wants, or null>, "references": "<what earlier messages the '
        'request refers to, or null>", "details": {<values the customer gave: names, numbers, dates>}, '
        '"clear": <true if you are sure which action is asked, else false>}'
    )
    recent = conversation[-MAX_TRANSCRIPT_MESSAGES:]
    lines = []
    for n, message in enumerate(recent, 1):
        who = "Customer" if message.get("role") == "user" else "Agent"
        text = " ".join(str(message.get("content") or "").split())[:MESSAGE_CLIP]
        mark = " (last message)" if n == len(recent) else ""
        lines.append(f"{who}{mark}: {text}")
    return [{"role": "system", "content": task}, {"role": "user", "content": "\n".join(lines)}]


def parse_facts(text: str, candidates: list[ToolCard]) -> Facts | None:
    """The facts in the router's answer, or None when anything about them is unclear."""
    text = (text or "").strip()[:MAX_ANSWER_CHARS]
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        data = json.loads(text)  # the answer as asked: one JSON object
    except ValueError:
        start, end = text.find("{"), text.rfind("}")  # or one object with a sentence around it
        if start < 0 or end <= start:
            return None
        try:
            data = json.loads(text[start:end + 1])
        except ValueError:
            return None
    if not isinstance(data, dict) or any(True for _error in _validator.iter_errors(data)):
        return None
    names = {card.name for card in candidates}
    if data["clear"] is not True or data["tool"] not in names or not data["request"].strip():
        return None
    return Facts.from_dict(data)


def ask_router(*, endpoint: Endpoint, conversation: list[dict],
               candidates: list[ToolCard]) -> tuple[Facts | None, str, tuple[int | None, int | None], bool]:
    """One router call. Returns the facts (or None: proceed unrouted), what the router said, or
    the error code when the call failed (a router that fails never fails the turn), the request's
    tokens in and out (None when unknown), and whether it failed once sent (usage counts it as a
    failed model request; issue 20)."""
    try:
        answer = complete(endpoint=endpoint, messages=router_messages(conversation=conversation, candidates=candidates),
                          deadline=settings.ASIXTO_ROUTER_TIMEOUT, retries=0)  # a failed router is no route, at once
    except ModelError as exc:
        return None, exc.code, (None, None), exc.sent
    return (parse_facts(answer.content, candidates), answer.content[:MAX_ANSWER_CHARS],
            (answer.tokens_in, answer.tokens_out), False)
