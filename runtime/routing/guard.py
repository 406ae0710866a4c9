"""Check is never do (R6, issue 18): the rules a route to a tool that acts must pass, whatever the
catalog. `gate.check` applies them to its decision (`guarded`); `route.py` asks `acting_route_allowed`
before it shows a tool that acts alone.

Check or do, whatever the catalog: `action.acts` gives the log-odds that a message asks to change something
rather than to know something (a probe over its USE vector and the grammar of the request, fitted on the
development domains); the score weighs how well a tool's level fits it ("level").
A message that asks to know (P(acts) below ACTS_KNOW) is never routed to a tool that acts: the best read candidate
within READ_MARGIN of it takes its place, else nothing is routed. One that does not clearly ask to act (below
ACTS_DO) goes to the read candidate when it is within READ_MARGIN of the acting one (same topic, close call).
Chosen by leaving one development domain out (datasets/fit_gate.py --lodo --grid): stricter values cost routed
requests (they run unrouted) and save harmful routes (0.85: 2.8% harmful, gate 0.766; 0.7: 3.3%, gate 0.790).
A tool that acts is routed only when the gate is at least WRITE_BAND sure a tool is needed (below: the turn runs
unrouted, the model seeing every tool); a read tool needs only the gate's threshold.
"""

from dataclasses import replace

from runtime.routing import action
from runtime.routing.candidates import CatalogIndex
from runtime.routing.words import normalise

ACTS_KNOW, ACTS_DO, READ_MARGIN = 0.7, 0.85, 3.0
WRITE_BAND = 0.8


def guarded(index: CatalogIndex, result, text: str = ""):
    """Check is never do: a message that asks to know is not routed to a tool that acts (its read candidate
    instead, when close, else nothing); a close call between a read and an acting candidate goes to the read
    one; a tool that acts is routed only above WRITE_BAND. An agreement to the agent's offer is the customer's
    own yes to that action."""
    if not result.needs_tool or not result.candidates or result.reason == "agrees to the agent's offer":
        return result
    cards = {card.name: card for card in index.cards}
    if not cards[result.best].acts:
        return result
    if result.follow_up:
        # a follow-up carries an earlier request to act on only when it does not ask or put off something itself
        # ("¿y si luego quiero volver a pedir…?", "mejor al rato lo hago", "first tell me what number you have")
        plain = normalise(text)
        if action.asks_to_know(text, plain) or action.puts_off(plain):
            return replace(result, needs_tool=False, reason=f"{result.reason}; it asks or puts off, and its tool acts")
    acts = action.probability(result.acts)
    top = result.candidates[0][1]
    reads = [c for c in result.candidates if not cards[c[0]].acts and c[1] >= top - READ_MARGIN]
    if reads and acts < ACTS_DO:
        first = reads[0]
        return replace(result, candidates=[first, *[c for c in result.candidates if c != first]],
                       reason=f"{result.reason}; asks to know: the read tool first")
    if acts < ACTS_KNOW:
        return replace(result, needs_tool=False, reason=f"{result.reason}; asks to know, and its tool acts")
    if result.probability < WRITE_BAND:
        return replace(result, needs_tool=False, reason=f"{result.reason}; a tool that acts, below its band")
    return result


def acting_route_allowed(result, *, sure: bool = False) -> bool:
    """Whether a tool that acts may be shown alone for this decision: the customer agreed to the agent's
    offer of it, or what decided asks to act (P(acts) at least ACTS_KNOW; ACTS_DO when `sure`) and the gate
    is at least WRITE_BAND sure a tool is needed."""
    if result.reason == "agrees to the agent's offer":
        return True
    return result.probability >= WRITE_BAND and action.probability(result.acts) >= (ACTS_DO if sure else ACTS_KNOW)
