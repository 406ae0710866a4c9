"""Writing many rows of one model in one statement, for catalog syncs of thousands of tools (P2).

The rows travel as one JSON document and PostgreSQL unpacks them with `jsonb_to_recordset`, so
the statement's text does not grow with the rows. Django's `bulk_create` and `bulk_update` put
one placeholder per value in the SQL and psycopg (client-side binding) quotes each value with a
regular expression; for 5,000 definitions that quoting alone took seconds, the one JSON
parameter takes milliseconds."""

import datetime
import json
import uuid

from django.db import connection, models
from django.db.models.expressions import RawSQL

BATCH = 5000


def insert_rows(model: type[models.Model], objects: list[models.Model], *, encoded: dict[int, str] | None = None):
    """INSERT every concrete field of `objects` (primary keys already set, as UUID defaults do).
    `encoded`: JSON texts already made of some JSON field values, by the value's `id()` (see
    `_document`)."""
    if not objects:
        return
    fields = list(model._meta.concrete_fields)
    for obj in objects:
        for field in fields:
            if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
                field.pre_save(obj, add=True)
    quote = connection.ops.quote_name
    columns = ", ".join(quote(field.column) for field in fields)
    for copies, group in _by_copies(objects, fields):
        sent = [field for field in fields if field not in copies]
        selected = ", ".join(f"v.{quote(copies.get(field, field).column)}" for field in fields)
        for batch in _batches(group):
            _execute(
                f"INSERT INTO {quote(model._meta.db_table)} ({columns}) SELECT {selected} FROM {_recordset(sent)}",
                _document(sent, batch, encoded),
            )


def update_rows(model: type[models.Model], objects: list[models.Model], field_names: list[str], *,
                encoded: dict[int, str] | None = None):
    """UPDATE `field_names` of `objects`, matched by primary key (`encoded`: as for insert_rows)."""
    if not objects:
        return
    pk = model._meta.pk
    fields = [model._meta.get_field(name) for name in field_names]
    quote = connection.ops.quote_name
    for copies, group in _by_copies(objects, fields):
        sent = [pk, *(field for field in fields if field not in copies)]
        assignments = ", ".join(f"{quote(field.column)} = v.{quote(copies.get(field, field).column)}" for field in fields)
        for batch in _batches(group):
            _execute(
                f"UPDATE {quote(model._meta.db_table)} AS t SET {assignments} FROM {_recordset(sent)} "
                f"WHERE t.{quote(pk.column)} = v.{quote(pk.column)}",
                _document(sent, batch, encoded),
            )


def uuids(values) -> RawSQL:
    """For `pk__in=` / `tool__in=` with thousands of ids: one array parameter instead of one
    placeholder per id."""
    return RawSQL("SELECT unnest(%s::uuid[])", (list(values),))


def _by_copies(objects, fields) -> list[tuple[dict, list]]:
    """`objects` in groups by which of their JSON fields hold the very object an earlier JSON
    field holds (a tool's effective definition is usually its server definition): such a value
    is sent once and copied by the statement, so PostgreSQL parses it once (P2). Each group comes
    with a map of every copied field to the field it is copied from."""
    json_fields = [field for field in fields if isinstance(field, models.JSONField)]
    groups: dict[tuple, list] = {}
    for obj in objects:
        values = [getattr(obj, field.attname) for field in json_fields]
        copies = []
        for index, value in enumerate(values):
            if isinstance(value, (dict, list)):
                source = next((earlier for earlier in range(index) if values[earlier] is value), None)
                if source is not None:
                    copies.append((json_fields[index], json_fields[source]))
        groups.setdefault(tuple(copies), []).append(obj)
    return [(dict(copies), group) for copies, group in groups.items()]


def _batches(objects):
    return (objects[start:start + BATCH] for start in range(0, len(objects), BATCH))


def _recordset(fields) -> str:
    quote = connection.ops.quote_name
    columns = ", ".join(f"{quote(field.column)} {field.db_type(connection)}" for field in fields)
    return f"jsonb_to_recordset(%s::jsonb) AS v({columns})"


def _document(fields, objects, encoded: dict[int, str] | None = None) -> str:
    """The rows as one JSON array. A JSON field's value is not encoded again when `encoded` has its
    text: a sync has just serialised every definition it read (P2); a value two fields of a row
    share is sent once already (`_by_copies`). JSON object key order is free: the columns are jsonb."""
    json_fields = [field for field in fields if isinstance(field, models.JSONField)]
    if not json_fields:
        return _ENCODE([{field.column: getattr(obj, field.attname) for field in fields} for obj in objects])
    others = [field for field in fields if field not in json_fields]
    texts = encoded or {}
    keys = [_ENCODE(field.column) for field in json_fields]
    rows = []
    for obj in objects:
        columns = []
        for key, field in zip(keys, json_fields):
            value = getattr(obj, field.attname)
            text = texts.get(id(value)) if isinstance(value, (dict, list)) else None
            columns.append(f"{key}:{_ENCODE(value) if text is None else text}")
        plain = _ENCODE({field.column: getattr(obj, field.attname) for field in others})
        rows.append("{" + ",".join(columns) + ("," + plain[1:] if len(plain) > 2 else "}"))
    return "[" + ",".join(rows) + "]"


def _plain(value):
    # Full precision for times (DjangoJSONEncoder cuts microseconds).
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} cannot be written through tools.rows")


_ENCODE = json.JSONEncoder(default=_plain, ensure_ascii=False).encode


def _execute(sql, document):
    with connection.cursor() as cursor:
        cursor.execute(sql, [document])
