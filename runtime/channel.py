"""What a channel does (R1, A1): start a conversation, post a customer message. Posting stores the
message and its turn, and queues the turn once both are committed, so a worker never looks for a
row that is not there yet. A channel retrying its own post sends the same `external_id`: the
second post, even while the first is still being stored, returns the first turn; the same
`external_id` with another text is a conflict (409), never a silent duplicate that loses the text.
"""

from contextlib import nullcontext
from dataclasses import dataclass

from django.db import IntegrityError, connection, transaction

from django.utils.translation import gettext as _

from asixto import tracing
from asixto.errors import ApplicationError
from runtime.models import Conversation, Message, Turn
from runtime.turn_order import turn_queue_in_order
from runtime.turn_writes import conversation_write, post_write
from tenants.selectors import current_tenant


@dataclass(frozen=True)
class Posted:
    turn: Turn
    created: bool  # False: a repeated external_id, this is the first post's turn


def conversation_start(*, data: dict, integration=None) -> Conversation:
    """A new conversation; the language defaults to the tenant's customer language (T6).
    `integration`: the API integration starting it (tenants.ApiKey.integration), none from the dashboard."""
    values = dict(data, integration=integration)
    values["language"] = values.get("language") or current_tenant().language or "es"
    conversation = Conversation(**values)
    conversation_write(conversation)
    return conversation


def _existing(conversation: Conversation, external_id: str, text: str) -> Turn | None:
    """The turn of the message already posted with `external_id`; a conflict if its text is not `text`."""
    turn = Turn.objects.filter(message__conversation=conversation, message__external_id=external_id).select_related(
        "message").first()
    if turn is not None and turn.message.text != text:
        raise ApplicationError(
            _("This external_id was already used for another message of this conversation; nothing was stored."),
            code="external_id_conflict", status_code=409)
    return turn


def message_post(*, conversation: Conversation, text: str, external_id: str = "", api_key_id=None, admit=None) -> Posted:
    """Store the customer's message and its turn; queue the turn after the commit (R1).
    `api_key_id`: the key that posted it, whose webhook gets the reply. `admit`, when given, is
    called once the message is known to be new, before anything is stored; it raises to refuse
    it (the channel API's fair-share limits, runtime/limits.py)."""
    if external_id:
        turn = _existing(conversation, external_id, text)
        if turn is not None:
            return Posted(turn, False)
    if admit is not None:
        admit()
    message = Message(conversation=conversation, role=Message.Role.CUSTOMER, text=text, external_id=external_id)
    # The request's trace is the turn's: its task, model and tool calls join it (asixto/tracing.py).
    turn = Turn(conversation=conversation, message=message, api_key_id=api_key_id, trace_id=tracing.current_trace_id())
    try:
        # One statement stores the message, its turn and the conversation's updated_at, all or nothing
        # (runtime/turn_writes.py); inside a caller's transaction, in a savepoint of its own, so a
        # repeated external_id leaves that transaction usable for the read below.
        with transaction.atomic() if connection.in_atomic_block else nullcontext():
            post_write(message=message, turn=turn)
            # robust: a broker that is down must not turn a stored message into a 500; the turn
            # stays queued and `requeue_stalled_turns` sends it again. Sent after the turns of the
            # conversation before it (runtime/turn_order.py); at once outside a transaction.
            transaction.on_commit(lambda: turn_queue_in_order(turn.pk), robust=True)
    except IntegrityError:
        # Another post with this external_id committed between our read and our insert: the
        # unique constraint made it the only one; answer with its turn.
        if not external_id:
            raise
        turn = _existing(conversation, external_id, text)
        if turn is None:
            raise
        return Posted(turn, False)
    return Posted(turn, True)
