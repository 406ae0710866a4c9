"""Conversation search (issue 20): one query text matched against the customer reference (a
phone, an e-mail) and the channel name as case-insensitive text, and against the words of the
conversation's messages by PostgreSQL full-text search in Spanish and in English, so "facturas"
finds "factura" and "refunds" finds "refund". The configurations (runtime.models.SEARCH_CONFIGS)
stem like PostgreSQL's `spanish` and `english` but drop no stop word: "estado" (a form of
"estar"), "no" or "when" are found like any word, and a phrase keeps its small words in place.
The query is parsed by `websearch_to_tsquery` (quotes for a phrase, `or`, `-word`) and passed as
a parameter: nothing is escaped by hand. Each configuration has its GIN expression index
(runtime.models.Message)."""

import re

from django.contrib.postgres.search import SearchQuery, SearchVector
from django.db.models import Q
from django.utils.translation import gettext as _

from asixto.json_input import unstorable_text
from runtime.models import SEARCH_CONFIGS, Message

MAX_QUERY_CHARS = 200


def query_problem(q: str) -> str | None:
    """Why `q` cannot be searched (A4), or None."""
    if len(q) > MAX_QUERY_CHARS:
        return _("Search for at most %(max)d characters.") % {"max": MAX_QUERY_CHARS}
    if unstorable_text(q):
        return _("Text may not contain NUL characters or unpaired surrogates.")
    return None


# A query's words and "phrases", each maybe with a leading "-" (an unclosed quote runs to the end).
_TERMS = re.compile(r'-?"[^"]*"?|[^\s"]+')


def _split(q: str) -> tuple[str, list[str]]:
    """`q` without its excluded terms ("-word", '-"a phrase"'), and those terms. An `or` left at
    either end, or next to another, joins nothing and goes."""
    kept, excluded = [], []
    for term in _TERMS.findall(q):
        if term.startswith("-") and len(term) > 1:
            excluded.append(term[1:])
        elif not (term.lower() == "or" and (not kept or kept[-1].lower() == "or")):
            kept.append(term)
    while kept and kept[-1].lower() == "or":
        kept.pop()
    return " ".join(kept), excluded


def _found(query: str) -> Q:
    """Messages whose words match `query` (websearch syntax) in Spanish or in English."""
    matches = Q()
    for config in SEARCH_CONFIGS:
        matches |= Q(**{f"search_{config}": SearchQuery(query, config=config, search_type="websearch")})
    return matches


def matching_messages(q: str):
    """Messages with the words of `q` in Spanish or in English and none of its excluded terms in
    either: the two languages stem a word apart ("cancelaciones" is "cancel" in Spanish, itself in
    English), so an exclusion must hold in both, or what "X" finds "-X" would not exclude."""
    vectors = {f"search_{config}": SearchVector("text", config=config) for config in SEARCH_CONFIGS}
    wanted, excluded = _split(q)
    messages = Message.objects.annotate(**vectors)
    if wanted:
        messages = messages.filter(_found(wanted))
    for term in excluded:
        messages = messages.exclude(_found(term))
    return messages


def conversations_matching(queryset, *, q: str):
    """`queryset` (of conversations) narrowed to those `q` finds; a blank `q` keeps them all."""
    q = q.strip()
    if not q:
        return queryset
    return queryset.filter(
        Q(customer_ref__icontains=q) | Q(channel_name__icontains=q)
        | Q(pk__in=matching_messages(q).values("conversation_id"))
    )
