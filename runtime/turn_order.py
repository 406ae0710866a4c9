"""One turn at a time per conversation, in the order the customer wrote (R1, R10).

A customer on a messaging channel often sends a burst ("hola" / "tengo un problema" / "con mi
pedido"): each message is a turn. Run side by side, the later turn would not see the earlier one's
reply, and the replies would reach the customer in whatever order the model answered them. So a
turn's task is sent only when no earlier turn of its conversation is still to finish; the end of
a turn sends the next one. Both sides look after their own commit, so whichever commits last sees
the other and sends it (both may: a turn is claimed by one runner only). The stalled-turn sweep
leaves a turn waiting on an earlier one alone (`waiting_on_earlier`), and sends it like any other
once nothing earlier is open."""

from functools import cache

from django.db import connection, transaction
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


@cache
def _sql(select: str, where: str, tail: str = "") -> str:
    """`SELECT {select} FROM turn t WHERE {where} AND t is queued AND NOT waiting_on_earlier()`, the
    statement written once: a message's post and a turn's end each send it, and compiling the ORM's
    query with its subquery cost more CPU than PostgreSQL spends answering it (P4). Parameters:
    those of `where`, then the queued status and the two open ones."""
    quote, table = connection.ops.quote_name, connection.ops.quote_name(Turn._meta.db_table)
    column = {name: quote(Turn._meta.get_field(name).column) for name in ("id", "conversation", "status", "created_at")}
    earlier = (f"SELECT 1 FROM {table} u WHERE u.{column['conversation']} = t.{column['conversation']} "
               f"AND u.{column['status']} IN (%s, %s) AND (u.{column['created_at']} < t.{column['created_at']} "
               f"OR (u.{column['created_at']} = t.{column['created_at']} AND u.{column['id']} < t.{column['id']}))")
    return (f"SELECT {select.format(**column)} FROM {table} t WHERE {where.format(**column)} AND t.{column['status']} = %s "
            f"AND NOT EXISTS ({earlier}){tail.format(**column)}")


def _first(sql: str, params: list):
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, Turn.Status.QUEUED, *OPEN])
        row = cursor.fetchone()
    return row[0] if row else None


def turn_queue_in_order(turn_id) -> None:
    """Send the turn's task now, unless an earlier turn of its conversation is open (its end sends it)."""
    if _first(_sql("1", "t.{id} = %s"), [turn_id]) is not None:
        _send(turn_id)


def next_turn_queue(conversation_id) -> None:
    """After a turn of the conversation ended: send the next queued one, if nothing before it is open."""
    def send():
        upcoming = _first(_sql("t.{id}", "t.{conversation} = %s", " ORDER BY t.{created_at}, t.{id} LIMIT 1"),
                          [conversation_id])
        if upcoming is not None:
            _send(upcoming)

    transaction.on_commit(send, robust=True)  # at once outside a transaction
