"""Pre-routing of one message (R6), end to end: the cheap check, then — only when it says a tool
is needed — the router call, then the composed instruction. Anything unclear on the way gives
no route, and the turn proceeds exactly as it would without routing.

`route_message` returns the route (or None) and a record of the decision for the turn's steps
(the gate's candidates and reason, what the router said), so a re-run replays the decision
instead of asking again (R10).
"""

from dataclasses import dataclass

from runtime.model_client import Endpoint
from runtime.routing.candidates import Example, ToolCard
from runtime.routing.compose import compose_instruction, fitting_details
from runtime.routing.gate import GateResult, check
from runtime.routing.guard import acting_route_allowed
from runtime.routing.index_store import ready_index
from runtime.routing.router import Facts, ask_router


@dataclass(frozen=True)
class Route:
    tool: str  # the model-visible name of the one tool the routed step shows
    verb: str
    facts: Facts
    instruction: str

    def to_dict(self) -> dict:
        return {"tool": self.tool, "verb": self.verb, "facts": self.facts.to_dict(), "instruction": self.instruction}

    @classmethod
    def from_dict(cls, data: dict) -> "Route":
        return cls(tool=data["tool"], verb=data.get("verb", ""), facts=Facts.from_dict(data["facts"]),
                   instruction=data["instruction"])


def confirmed(card: ToolCard, facts: Facts, gate: GateResult) -> bool:
    """The customer already asked for exactly this action with its details, so the step needs no
    confirmation: they agreed to the agent's offer of it, or their message clearly asks to act and
    gives every required input of the tool."""
    if gate.reason == "agrees to the agent's offer":
        return True
    required = card.input_schema.get("required") if isinstance(card.input_schema.get("required"), list) else []
    return acting_route_allowed(gate, sure=True) and set(required) <= set(fitting_details(card, facts.details))


def route_message(*, cards: list[ToolCard], conversation: list[dict], endpoint: Endpoint,
                  examples: list[Example] = ()) -> tuple[Route | None, dict]:
    """`conversation`: [{"role": "user" | "assistant", "content"}…], the message to route last;
    `examples`: what the tenant taught routing (its sample requests and corrections)."""
    index = ready_index(cards, examples)
    if index is None:  # its vectors are being built (a task): this turn does not wait for them
        return None, {"gate": {"needs_tool": False, "reason": "index not ready", "candidates": []}}
    gate = check(index, conversation)
    record = {"gate": {"needs_tool": gate.needs_tool, "reason": gate.reason, "candidates": gate.candidates,
                       "probability": round(gate.probability, 4), "acts": round(gate.acts, 3)}}
    if not gate.needs_tool:
        return None, record
    by_name = {card.name: card for card in cards}
    candidates = [by_name[name] for name, _score in gate.candidates if name in by_name]
    facts, said, tokens, failed = ask_router(endpoint=endpoint, conversation=conversation, candidates=candidates)
    record["router"] = said
    # Kept on the routing step's own columns (runtime/turn.py), not in the record.
    record["router_tokens"], record["router_failed"] = tokens, failed
    if facts is None:
        record["outcome"] = "unclear"
        return None, record
    card = by_name[facts.tool]
    if card.acts and not acting_route_allowed(gate, sure=card.name != gate.best):
        # a tool that acts is shown alone only when the check lets it through (`guard.guarded`), and one the
        # check did not put first only when the message clearly asks to act; else the turn runs unrouted, the
        # model seeing every tool
        record["outcome"] = "acting tool held back"
        return None, record
    route = Route(tool=card.name, verb=card.verb or card.title or card.name, facts=facts,
                  instruction=compose_instruction(card=card, facts=facts, confirmed=confirmed(card, facts, gate)))
    record["outcome"] = "routed"
    return route, record
