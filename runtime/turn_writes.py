"""The turn service's writes, each in one SQL statement (P3, P4, R10), its claim, and the post
that stores a customer's message with its turn (runtime/channel.py).

A tool-loop iteration stores a step, renews the runner's lease and sometimes adds status events
or truncation logs; the turn's end stores the reply message, its event and the final status.
Each of these is one statement here (data-modifying CTEs), so one round trip and atomic without
a transaction block: on a busy database a round trip, not Python, is the cost of a step.

Every write is conditional on the lease: the rows are inserted `FROM lease`, the turn's row
updated only while `runner` still holds it, so a runner that was presumed dead and taken over
writes nothing (`LeaseLost`). Values go through the model fields (`pre_save`,
`get_db_prep_save`), as the ORM would send them, with a cast to the column's type."""

import json
from dataclasses import dataclass
from functools import cache

from django.db import connection, transaction

from runtime import events
from runtime.models import Conversation, Message, Turn, TurnEvent, TurnStep
from runtime.selectors import HISTORY_MESSAGES


class LeaseLost(Exception):
    """Another runner took the turn over (this one was presumed dead): stop without writing."""


def _quote(name):
    return connection.ops.quote_name(name)


@cache
def _placeholder(field) -> str:
    # A cast without a length: a value too long for its column is refused, as by the ORM, never cut.
    return f"%s::{field.cast_db_type(connection).split('(')[0]}"


@cache
def _assignments_sql(model, names: tuple) -> tuple[str, tuple]:
    fields = tuple(model._meta.get_field(name) for name in names)
    return ", ".join(f"{_quote(field.column)} = {_placeholder(field)}" for field in fields), fields


def _assignments(model, changes: dict) -> tuple[str, list]:
    sql, fields = _assignments_sql(model, tuple(changes))
    return sql, [field.get_db_prep_save(value, connection) for field, value in zip(fields, changes.values(), strict=True)]


@cache
def _insert_sql(model, names: tuple, count: int, source: str, conflict: tuple) -> tuple[str, tuple]:
    """The statement `_insert` sends for `count` rows with values for `names`, and its fields."""
    fields = tuple(field for field in model._meta.concrete_fields if not (field.primary_key and field.name not in names))
    row = ", ".join(_placeholder(field) for field in fields)
    names_sql = ", ".join(f"c{i}" for i in range(len(fields)))
    columns = ", ".join(_quote(field.column) for field in fields)
    values = ", ".join(f"({n}, {row})" for n in range(count))
    sql = (f"INSERT INTO {_quote(model._meta.db_table)} ({columns}) SELECT {names_sql} "
           f"FROM (VALUES {values}) AS v(n, {names_sql}), {source} ORDER BY n")
    if conflict:
        given = {model._meta.get_field(name).column for name in names} - set(conflict)
        updates = ", ".join(f"{_quote(column)} = EXCLUDED.{_quote(column)}" for column in sorted(given))
        sql += f" ON CONFLICT ({', '.join(map(_quote, conflict))}) DO UPDATE SET {updates}"
    return sql, fields


def _insert(model, rows: list[dict], source: str, *, conflict: tuple[str, ...] = ()) -> tuple[str, list]:
    """INSERT of `rows` (field names → values, the same names in each; defaults and auto fields as
    the ORM fills them), in their order, selected FROM `source` (no row there: nothing inserted).
    With `conflict`, an existing row with the same values of those fields gets the given values
    instead."""
    sql, fields = _insert_sql(model, tuple(rows[0]), len(rows), source, conflict)
    params = []
    for values in rows:
        row = model(**values)
        params += [field.get_db_prep_save(field.pre_save(row, True), connection) for field in fields]
    return sql, params


def _grouped(rows) -> list:
    """(model, values) pairs as (model, [values, …]), models in order of first appearance."""
    groups: dict = {}
    for model, values in rows:
        groups.setdefault(model, []).append(values)
    return list(groups.items())


def _inserts(*, turn_id, steps: dict, rows: list, source: str) -> tuple[list[str], list]:
    """The CTE parts (and their parameters) that store `steps` (index → values; given values
    replace a stored step's) and `rows` ((model, values) pairs: events, truncation logs), each
    selected FROM `source`: one INSERT per step, one per model of the other rows."""
    inserts = [(TurnStep, [{"turn_id": turn_id, "index": index, **step}], ("turn_id", "index")) for index, step in steps.items()]
    inserts += [(model, group, ()) for model, group in _grouped(rows)]
    parts, params = [], []
    for n, (model, group, conflict) in enumerate(inserts):
        sql, values_params = _insert(model, group, source, conflict=conflict)
        parts.append(f"s{n} AS ({sql})")
        params += values_params
    return parts, params


def step_write(*, turn_id, runner: str, lease_until, steps: dict, turn: dict, rows: list) -> None:
    """Renew the lease (with `turn` changes) and, in the same statement, store `steps` and `rows`
    (see `_inserts`). Raises LeaseLost when `runner` no longer holds the turn; then nothing is
    written."""
    assignments, params = _assignments(Turn, {"lease_expires_at": lease_until, **turn})
    parts = [f"lease AS (UPDATE {_quote(Turn._meta.db_table)} SET {assignments} "
             f"WHERE {_quote('id')} = %s AND {_quote('runner')} = %s RETURNING {_quote('id')})"]
    params += [turn_id, runner]
    insert_parts, insert_params = _inserts(turn_id=turn_id, steps=steps, rows=rows, source="lease")
    parts += insert_parts
    params += insert_params
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {', '.join(parts)} SELECT count(*) FROM lease", params)
        held = cursor.fetchone()[0]
    if not held:
        raise LeaseLost()
    if any(model is TurnEvent for model, _values in rows):
        _wake(turn_id)


def reply_write(*, turn_id, conversation_id, runner: str, reply: str, status: str, error_code: str,
                error_detail: str, event_data: dict, finished_at, steps: dict | None = None, turn: dict | None = None,
                rows: tuple = ()) -> "ReplyWritten":
    """The turn's one reply (R10), in one statement: the agent's message, the reply event and the
    final status, with the writes the turn still holds back (`steps`, `turn` changes, `rows`, as
    in `step_write`: the reply step, the loop's last model step), only if `runner` holds the turn
    and no reply is stored yet. Returns whether this call stored it, and whether another turn of
    the conversation is queued (the customer wrote again meanwhile: runtime/turn_order.py)."""
    message = Message(conversation_id=conversation_id, role=Message.Role.AGENT, text=reply)
    assignments, params = _assignments(Turn, {
        **(turn or {}), "reply_id": message.pk, "status": status, "error_code": error_code,
        "error_detail": error_detail, "finished_at": finished_at, "lease_expires_at": None, "runner": "",
    })
    parts = [f"done AS (UPDATE {_quote(Turn._meta.db_table)} SET {assignments} WHERE {_quote('id')} = %s "
             f"AND {_quote('runner')} = %s AND {_quote('reply_id')} IS NULL RETURNING {_quote('id')})"]
    params += [turn_id, runner]
    insert_parts, insert_params = _inserts(turn_id=turn_id, steps=steps or {}, source="done", rows=[
        *rows,
        (Message, {"id": message.pk, "conversation_id": conversation_id, "role": message.role, "text": reply}),
        (TurnEvent, {"turn_id": turn_id, "kind": TurnEvent.Kind.REPLY, "text": reply, "data": event_data}),
    ])
    parts += insert_parts
    params += insert_params
    waiting = (f"SELECT EXISTS (SELECT 1 FROM {_quote(Turn._meta.db_table)} w WHERE w.conversation_id = %s "
               f"AND w.status = %s AND w.id <> %s)")
    params += [conversation_id, Turn.Status.QUEUED, turn_id]
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {', '.join(parts)} SELECT count(*), ({waiting}) FROM done", params)
        count, queued = cursor.fetchone()
    if count:
        _wake(turn_id)
    return ReplyWritten(stored=bool(count), others_queued=bool(queued))


@dataclass(frozen=True)
class ReplyWritten:
    stored: bool
    others_queued: bool  # another turn of the conversation waits: this one's end sends it


@cache
def _claim_sql() -> str:
    turn, message = Turn._meta.db_table, Message._meta.db_table
    selected = ", ".join(f"{alias}.{_quote(field.column)}" for alias, model in (("t", Turn), ("c", Conversation), ("m", Message))
                         for field in model._meta.concrete_fields)
    # The conversation's newest messages before this one, newest first, one more than the history
    # holds (so the caller knows whether there are older ones): a JSON array of [role, text]. A reply
    # counts from its question, so the reply to an earlier message of a burst, stored after this
    # message came in (turns of a conversation run one after the other: runtime/turn_order.py), is in
    # the history right after its question. The newest messages stored before this one (by the
    # index), and the replies stored after it to questions before it (few), sorted together.
    turn_table = _quote(turn)
    newest = (
        f"(SELECT json_agg(json_build_array(h.role, h.text) ORDER BY h.at DESC, h.answer DESC, h.id DESC) FROM ("
        f"SELECT e.role, e.text, COALESCE(q.created_at, e.created_at) AS at, (q.id IS NOT NULL) AS answer, e.id FROM "
        f"(SELECT * FROM {_quote(message)} e0 WHERE e0.conversation_id = t.conversation_id AND e0.created_at < m.created_at "
        f"AND e0.id <> m.id ORDER BY e0.created_at DESC, e0.id DESC LIMIT %s) e "
        f"LEFT JOIN {turn_table} r ON r.reply_id = e.id LEFT JOIN {_quote(message)} q ON q.id = r.message_id "
        f"UNION ALL SELECT e.role, e.text, q.created_at, TRUE, e.id FROM {turn_table} r "
        f"JOIN {_quote(message)} q ON q.id = r.message_id JOIN {_quote(message)} e ON e.id = r.reply_id "
        f"WHERE r.conversation_id = t.conversation_id AND q.created_at < m.created_at AND e.created_at >= m.created_at "
        f"ORDER BY at DESC, answer DESC, id DESC LIMIT %s) h)"
    )
    return (
        f"WITH claimed AS (UPDATE {_quote(turn)} SET status = %s, runner = %s, lease_expires_at = %s, runs = runs + 1, "
        f"started_at = COALESCE(started_at, %s) WHERE id = %s AND status IN (%s, %s) "
        f"AND (lease_expires_at IS NULL OR lease_expires_at < %s) RETURNING *) "
        f"SELECT {selected}, {newest} FROM claimed t JOIN {_quote(Conversation._meta.db_table)} c ON c.id = t.conversation_id "
        f"JOIN {_quote(message)} m ON m.id = t.message_id"
    )


def turn_claim(*, turn_id, runner: str, lease_until, now) -> tuple[Turn, list] | None:
    """Take the turn unless it is finished or another runner holds a live lease: the turn with its
    conversation and message, and the conversation's newest HISTORY_MESSAGES + 1 messages before
    it as (role, text), newest first (runtime/selectors.py: `history_before`), in one statement;
    None when it is not this runner's."""
    with connection.cursor() as cursor:
        cursor.execute(_claim_sql(), [Turn.Status.RUNNING, runner, lease_until, now, turn_id, Turn.Status.QUEUED,
                                      Turn.Status.RUNNING, now, HISTORY_MESSAGES + 1, HISTORY_MESSAGES + 1])
        row = cursor.fetchone()
    if row is None:
        return None
    instances, start = [], 0
    for model in (Turn, Conversation, Message):
        fields = model._meta.concrete_fields
        instances.append(model.from_db(connection.alias, [field.attname for field in fields], row[start:start + len(fields)]))
        start += len(fields)
    turn, conversation, message = instances
    Turn._meta.get_field("conversation").set_cached_value(turn, conversation)
    Turn._meta.get_field("message").set_cached_value(turn, message)
    newest = row[start]
    if isinstance(newest, str):  # a driver that does not decode json
        newest = json.loads(newest)
    return turn, [tuple(pair) for pair in newest or ()]


def _wake(turn_id):
    transaction.on_commit(lambda: events.publish(turn_id))  # at once outside a transaction


def post_write(*, message: Message, turn: Turn) -> None:
    """A customer's message, its turn and the conversation's `updated_at` (the message's time) in
    one statement (P4: every post through the channel API sends it): atomic without a transaction
    block, as the three statements were in theirs. Fills the instances' `created_at` as stored. A
    repeated `external_id` raises IntegrityError (the unique constraint), and nothing is stored."""
    message_sql, params = _insert(Message, [_values(message)], "go")
    turn_sql, turn_params = _insert(Turn, [_values(turn)], "m")
    created = _quote(Message._meta.get_field("created_at").column)
    conversation = Conversation._meta
    parts = ["go AS (SELECT 1)", f"m AS ({message_sql} RETURNING {created})", f"t AS ({turn_sql} RETURNING {created})",
             f"u AS (UPDATE {_quote(conversation.db_table)} SET {_quote(conversation.get_field('updated_at').column)} = "
             f"m.{created} FROM m WHERE {_quote(conversation.db_table)}.{_quote(conversation.pk.column)} = %s)"]
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {', '.join(parts)} SELECT m.{created}, t.{created} FROM m, t",
                       [*params, *turn_params, message.conversation_id])
        message.created_at, turn.created_at = cursor.fetchone()
    message._state.adding = turn._state.adding = False


def _values(instance) -> dict:
    """The instance's concrete field values by attribute name (`conversation_id`), for `_insert`."""
    return {field.attname: getattr(instance, field.attname) for field in type(instance)._meta.concrete_fields}


def conversation_write(conversation: Conversation) -> None:
    """A new conversation in a statement written once (every conversation a channel starts through
    the API, P4), as `Conversation.objects.create` would store it; fills its times as stored."""
    sql, params = _insert(Conversation, [_values(conversation)], "(SELECT 1) AS go")
    times = [_quote(Conversation._meta.get_field(name).column) for name in ("created_at", "updated_at")]
    with connection.cursor() as cursor:
        cursor.execute(f"{sql} RETURNING {', '.join(times)}", params)
        conversation.created_at, conversation.updated_at = cursor.fetchone()
    conversation._state.adding = False
