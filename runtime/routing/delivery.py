"""The delivery check (R8): a routed turn should deliver what its tool gives (a list of products,
a case number). It judges what came back, not how the answer looks: the turn delivered only if
the routed tool was called, that is, the call reached a result the model can tell the customer
about: what it found, a business error ("no case with that number"), or a failure of the server
(it was tried, with the gateway's retries; asking again would call it again). Prose instead —
however result-like, an empty block, or a mention of a search that never ran — is nothing
delivered, and the model is asked once more, naming the skipped step and offering an honest way
out. A call whose arguments were refused before anything was sent is not a call. Pure functions.
"""

import re

NOT_SENT = frozenset({"invalid_arguments"})  # the arguments refused before anything was sent (G2)
# How an answer pretends: an empty block, or talk of a search it never ran. Recorded with the re-ask.
_EMPTY_BLOCK = re.compile(r"```[a-z]*\s*```|\[\s*\]|\{\s*\}|<(table|ul|ol)>\s*</\1>", re.IGNORECASE)
_CLAIMS_SEARCH = re.compile(
    r"\b(busqu[eé]|consult[eé]|revis[eé]|encontr[eé]|he (buscado|consultado|revisado|encontrado)|seg[uú]n (el|la|los|mi) "
    r"(cat[aá]logo|sistema|b[uú]squeda|consulta)|resultados?|i (searched|looked up|checked|found)|here (are|is) the "
    r"results?|search results?|according to (the|my) (search|system|catalog))\b",
    re.IGNORECASE,
)


def delivered(*, tool_outcomes: list[tuple[str, str]], routed: str) -> bool:
    """Whether the routed tool was called in this turn (`tool_outcomes`: (name, outcome)), whatever
    it answered: its answer, good or bad, is for the model to tell."""
    return any(name == routed and outcome not in NOT_SENT for name, outcome in tool_outcomes)


def pretence(text: str) -> str:
    """What the answer pretends to have delivered, for the record: "empty block", "search claimed" or ""."""
    if _EMPTY_BLOCK.search(text or ""):
        return "empty block"
    if _CLAIMS_SEARCH.search(text or ""):
        return "search claimed"
    return ""


def reask(*, verb: str, name: str) -> str:
    """The one more request, naming the skipped step and offering an honest way out."""
    return (
        f"The step \"{verb}\" was skipped: the tool `{name}` was not called, so the customer has received "
        f"nothing. Call `{name}` now. If nothing fits the request, say so plainly; if a required detail is missing, "
        "ask the customer for it. Never describe results you do not have."
    )
