"""One turn at a time per conversation, in the order the customer wrote (R1, R10).

A customer on a messaging channel often sends a burst ("hola" / "tengo un problema" / "con mi
pedido"): each message is a turn. Run side by side, the later turn would not see the earlier one's
reply, and the replies would reach the customer in whatever order the model answered them. So a
turn's task is sent only when no earlier turn of its conversation is still to finish; the end of
a turn sends the next one. Both sides look after their own commit, so whichever commits last sees
the other and sends it (both may: a turn is claimed by one runner only). The stalled-turn sweep
leaves a turn waiting on an earlier one alone (`waiting_on_earlier`), and sends it like any other
once nothing earlier is open."""

from django.db import transaction
from django.db.models import Exists, OuterRef, Q

from runtime.models import Turn

OPEN = (Turn.Status.QUEUED, Turn.Status.RUNNING)


def waiting_on_earlier() -> Exists:
    """For a Turn queryset: an earlier turn of the same conversation is still queued or running."""
    return Exists(Turn.objects.filter(conversation_id=OuterRef("conversation_id"), status__in=OPEN).filter(
        Q(created_at__lt=OuterRef("created_at")) | Q(created_at=OuterRef("created_at"), id__lt=OuterRef("id"))))


def _send(turn_id) -> None:
    from runtime.tasks import turn_run  # the tasks import the turn service, which imports this module

    turn_run.delay(str(turn_id))


def turn_queue_in_order(turn_id) -> None:
    """Send the turn's task now, unless an earlier turn of its conversation is open (its end sends it)."""
    if Turn.objects.filter(~waiting_on_earlier(), pk=turn_id, status=Turn.Status.QUEUED).exists():
        _send(turn_id)


def next_turn_queue(conversation_id) -> None:
    """After a turn of the conversation ended: send the next queued one, if nothing before it is open."""
    def send():
        upcoming = (Turn.objects.filter(~waiting_on_earlier(), conversation_id=conversation_id, status=Turn.Status.QUEUED)
                    .order_by("created_at", "id").values_list("pk", flat=True).first())
        if upcoming is not None:
            _send(upcoming)

    transaction.on_commit(send, robust=True)  # at once outside a transaction
