"""Model instances from the rows of a statement written once (P4): a hot read (the API key of every
request) sends SQL kept as a string instead of building and compiling the ORM query again each time,
which costs more CPU than PostgreSQL spends answering it. The values go through the same converters
as the ORM's (`from_db_value`: decrypted secrets, decoded JSON), so the instances are what the ORM
would have given."""

from functools import cache

from django.db import connection


def columns(model, alias: str) -> str:
    """The model's concrete columns, in field order, qualified by `alias`: for a SELECT list."""
    quote = connection.ops.quote_name
    return ", ".join(f"{alias}.{quote(field.column)}" for field in model._meta.concrete_fields)


@cache
def _converters(model) -> tuple:
    found = []
    for field in model._meta.concrete_fields:
        column = field.get_col(model._meta.db_table)
        found.append((column, tuple(connection.ops.get_db_converters(column) + column.get_db_converters(connection))))
    return tuple(found)


@cache
def _attnames(model) -> list:
    return [field.attname for field in model._meta.concrete_fields]


def instance(model, row, start: int = 0):
    """The model instance from `row[start:start + its column count]` (columns() order), as the ORM
    loads it; and the index where the next model's columns start."""
    values = []
    for value, (column, converters) in zip(row[start:], _converters(model), strict=False):
        for converter in converters:
            value = converter(value, column, connection)
        values.append(value)
    end = start + len(values)
    return model.from_db(connection.alias, _attnames(model), values), end
