"""Writing many rows of one model in one statement, for catalog syncs of thousands of tools (P2).

Each column travels as one array parameter and the statement reads them back with `unnest`,
so its text does not grow with the number of rows: Django's `bulk_create` and `bulk_update`
(and a `VALUES (…), (…)` list) put one placeholder per value in the SQL, which psycopg then
parses, and for 5,000 tools that parsing cost more than the database's work. JSON columns
travel as text and are cast to jsonb by PostgreSQL."""

import json

from django.db import connection, models

BATCH = 5000


def insert_rows(model: type[models.Model], objects: list[models.Model]):
    """INSERT every concrete field of `objects` (primary keys already set, as UUID defaults do)."""
    if not objects:
        return
    fields = list(model._meta.concrete_fields)
    for obj in objects:
        for field in fields:
            if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
                field.pre_save(obj, add=True)
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    columns = ", ".join(quote(field.column) for field in fields)
    for start in range(0, len(objects), BATCH):
        batch = objects[start:start + BATCH]
        sql = f"INSERT INTO {table} ({columns}) SELECT {_selected(fields)} FROM {_unnest(fields)}"
        _execute(sql, [_array(field, batch) for field in fields])


def update_rows(model: type[models.Model], objects: list[models.Model], field_names: list[str]):
    """UPDATE `field_names` of `objects`, matched by primary key."""
    if not objects:
        return
    pk = model._meta.pk
    fields = [model._meta.get_field(name) for name in field_names]
    quote = connection.ops.quote_name
    assignments = ", ".join(f"{quote(field.column)} = {_value(field)}" for field in fields)
    for start in range(0, len(objects), BATCH):
        batch = objects[start:start + BATCH]
        sql = (
            f"UPDATE {quote(model._meta.db_table)} AS t SET {assignments} FROM {_unnest([pk, *fields])} "
            f"WHERE t.{quote(pk.column)} = v.{quote(pk.column)}"
        )
        _execute(sql, [_array(field, batch) for field in [pk, *fields]])


def _is_json(field) -> bool:
    return isinstance(field, models.JSONField)


def _array_type(field) -> str:
    return "text" if _is_json(field) else field.db_type(connection)


def _unnest(fields) -> str:
    quote = connection.ops.quote_name
    arrays = ", ".join(f"%s::{_array_type(field)}[]" for field in fields)
    return f"unnest({arrays}) AS v({', '.join(quote(field.column) for field in fields)})"


def _value(field) -> str:
    column = f"v.{connection.ops.quote_name(field.column)}"
    return f"{column}::jsonb" if _is_json(field) else column


def _selected(fields) -> str:
    return ", ".join(_value(field) for field in fields)


def _array(field, objects) -> list:
    if _is_json(field):
        values = [getattr(obj, field.attname) for obj in objects]
        return [None if value is None and field.null else json.dumps(value, cls=field.encoder) for value in values]
    return [field.get_db_prep_save(getattr(obj, field.attname), connection) for obj in objects]


def _execute(sql, params):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
