"""Reads of the runtime. Every query runs in the current tenant's schema (T1)."""

import functools

from django.db import connection
from django.db.models import Prefetch

from asixto import rows
from runtime.models import Conversation, Message, TruncationLog, Turn, TurnEvent
from runtime.reply import Line
from runtime.search import conversations_matching
from tenants.models import ApiKey
from tenants.selectors import current_tenant
from tools.catalog_cache import cached
from tools.selectors import agent_ready_tools
from tools.models import Tool, ToolCall

HISTORY_MESSAGES = 40


def offered_tools(*, channel: str) -> list[Tool]:
    """The tools a turn on `channel` may offer the model (R2, M7): certified for their current
    definition, enabled, on an enabled server, allowed by the exposure policy for the channel,
    in the catalog's order (server slug, then the server's own order) so it never changes
    between requests and the model server's prompt cache keeps working."""
    tenant = current_tenant()

    def load():
        return list(agent_ready_tools().select_related("server").order_by("server__slug", "position"))

    # Read once per catalog generation and process (tools/catalog_cache.py), not once per turn (P4).
    return [tool for tool in cached(("offered-tools",), load) if tenant.allows_level(channel, tool.level)]


def history_before(*, message: Message, newest: list | None = None) -> tuple[list[Line], int]:
    """The conversation's messages before `message`, oldest first (the newest HISTORY_MESSAGES),
    and how many older ones there are besides. A reply counts from its question: the reply to an
    earlier message of a burst, stored after `message` came in, follows its question. `newest`: the
    newest HISTORY_MESSAGES + 1 of them as (role, text), newest first, when already read (the
    turn's claim reads them, runtime/turn_writes.py); the older ones are counted only when there are any."""
    def earlier():
        return Message.objects.filter(conversation_id=message.conversation_id, created_at__lt=message.created_at).exclude(
            pk=message.pk
        )

    if newest is None:
        fields = ("id", "role", "text", "created_at", "reply_of__message__created_at")
        found = [*earlier().order_by("-created_at", "-id").values(*fields)[:HISTORY_MESSAGES + 1],
                 *Message.objects.filter(conversation_id=message.conversation_id, created_at__gte=message.created_at,
                                         reply_of__message__created_at__lt=message.created_at).values(*fields)]
        asked = "reply_of__message__created_at"
        found.sort(key=lambda row: (row[asked] or row["created_at"], row[asked] is not None, row["id"]), reverse=True)
        newest = [(row["role"], row["text"]) for row in found[:HISTORY_MESSAGES + 1]]
    older = earlier().count() - HISTORY_MESSAGES if len(newest) > HISTORY_MESSAGES else 0
    return [Line(role, text) for role, text in reversed(newest[:HISTORY_MESSAGES])], older


def _scoped_integration(key):
    """The integration a channel key is confined to; None for an admin key or the dashboard (no key)."""
    return key.integration if key is not None and key.scope != ApiKey.Scope.ADMIN else None


def visible_conversations(*, key=None):
    """The conversations an API key may read and post to: a channel key only its integration's
    (the key and the keys rotated from it); an admin key, the dashboard (no key), all of them."""
    integration = _scoped_integration(key)
    return Conversation.objects.all() if integration is None else Conversation.objects.filter(integration=integration)


@functools.cache
def _visible_conversation_sql(scoped: bool) -> str:
    quote, meta = connection.ops.quote_name, Conversation._meta
    sql = f"SELECT {rows.columns(Conversation, 'c')} FROM {quote(meta.db_table)} c WHERE c.{quote(meta.pk.column)} = %s"
    return sql + (f" AND c.{quote(meta.get_field('integration').column)} = %s" if scoped else "")


def visible_conversation(*, key=None, pk) -> Conversation | None:
    """The conversation `pk` if `key` may read and post to it (as visible_conversations), else None;
    in a statement written once: every message posted through the API reads it (P4)."""
    integration = _scoped_integration(key)
    with connection.cursor() as cursor:
        cursor.execute(_visible_conversation_sql(integration is not None), [pk] + ([integration] if integration else []))
        row = cursor.fetchone()
    return rows.instance(Conversation, row)[0] if row else None


def conversations(*, key=None, channel_name=None, customer_ref=None, q=None):
    """`key`: as visible_conversations; `q`: the conversation search (runtime.search, issue 20)."""
    queryset = visible_conversations(key=key)
    if channel_name:
        queryset = queryset.filter(channel_name=channel_name)
    if customer_ref:
        queryset = queryset.filter(customer_ref=customer_ref)
    if q:
        queryset = conversations_matching(queryset, q=q)
    return queryset.order_by("-created_at")


def visible_turns(*, key=None):
    """Turns of the conversations `key` may read (visible_conversations)."""
    integration = _scoped_integration(key)
    return Turn.objects.all() if integration is None else Turn.objects.filter(conversation__integration=integration)


def turns(*, key=None):
    """visible_turns with what a turn's page and detail show."""
    return visible_turns(key=key).select_related("conversation", "message", "reply").prefetch_related(
        Prefetch("events", queryset=TurnEvent.objects.order_by("id")),
        Prefetch("truncations", queryset=TruncationLog.objects.order_by("id")),
    )


def turn_tool_calls(*, turn: Turn):
    """The gateway's records of this turn's calls (G9), in the order they were made."""
    return ToolCall.objects.filter(turn_id=turn.pk).order_by("started_at")


def truncation_logs(*, tool_name=None, kind=None, since=None, until=None, turn_id=None):
    queryset = TruncationLog.objects.all()
    if tool_name:
        queryset = queryset.filter(tool_name=tool_name)
    if kind:
        queryset = queryset.filter(kind=kind)
    if since:
        queryset = queryset.filter(created_at__gte=since)
    if until:
        queryset = queryset.filter(created_at__lt=until)
    if turn_id:
        queryset = queryset.filter(turn_id=turn_id)
    return queryset.order_by("-created_at", "-id")
