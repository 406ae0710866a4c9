"""What a tenant schema is made of, read from information_schema and pg_catalog with the schema's
own name normalised, so a cloned schema and a migrated one can be compared as plain data. A column's place is its rank
among the live columns: a migrated table keeps the slots of columns a migration dropped (as
django_content_type.name), a copy has none, and both list their columns in the same order."""

from django.db import connection

COLUMNS = """
SELECT table_name, column_name, row_number() OVER (PARTITION BY table_name ORDER BY ordinal_position), data_type, udt_name, character_maximum_length,
       numeric_precision, numeric_scale, is_nullable, column_default, collation_name, is_identity,
       identity_generation, identity_start, identity_increment, identity_minimum, identity_maximum,
       identity_cycle, is_generated, generation_expression
FROM information_schema.columns WHERE table_schema = %s ORDER BY table_name, ordinal_position"""
CONSTRAINTS = """
SELECT rel.relname, con.conname, con.contype, con.condeferrable, con.condeferred, con.convalidated,
       pg_get_constraintdef(con.oid)
FROM pg_constraint con JOIN pg_class rel ON rel.oid = con.conrelid
WHERE con.connamespace = %s::regnamespace ORDER BY rel.relname, con.conname"""
INDEXES = "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = %s ORDER BY indexname"
SEQUENCES = """
SELECT sequencename, data_type, start_value, min_value, max_value, increment_by, cycle, cache_size, last_value
FROM pg_sequences WHERE schemaname = %s ORDER BY sequencename"""
SEQUENCE_OWNERS = """
SELECT seq.relname, dep.deptype, tab.relname, att.attname
FROM pg_class seq
JOIN pg_depend dep ON dep.classid = 'pg_class'::regclass AND dep.objid = seq.oid AND dep.refclassid = 'pg_class'::regclass
JOIN pg_class tab ON tab.oid = dep.refobjid
JOIN pg_attribute att ON att.attrelid = tab.oid AND att.attnum = dep.refobjsubid
WHERE seq.relkind = 'S' AND seq.relnamespace = %s::regnamespace ORDER BY seq.relname"""
TRIGGERS = """
SELECT tab.relname, trg.tgname, pg_get_triggerdef(trg.oid)
FROM pg_trigger trg JOIN pg_class tab ON tab.oid = trg.tgrelid
WHERE tab.relnamespace = %s::regnamespace AND NOT trg.tgisinternal ORDER BY tab.relname, trg.tgname"""
OTHER_OBJECTS = """
SELECT 'relation', relname, relkind::text FROM pg_class WHERE relnamespace = %(schema)s::regnamespace AND relkind NOT IN ('r', 'i', 'S')
UNION ALL SELECT 'function', proname, '' FROM pg_proc WHERE pronamespace = %(schema)s::regnamespace
UNION ALL SELECT 'type', typname, typtype::text FROM pg_type WHERE typnamespace = %(schema)s::regnamespace AND typrelid = 0
  AND NOT EXISTS (SELECT 1 FROM pg_type e WHERE e.oid = pg_type.typelem AND e.typrelid <> 0)
ORDER BY 1, 2"""

# The conversation search's dictionaries and configurations (issue 20): a dictionary's template and
# options, a configuration's parser and, per token type, its dictionaries in order.
TEXT_SEARCH = """
SELECT 'dictionary', d.dictname, t.tmplnamespace::regnamespace::text || '.' || t.tmplname, coalesce(d.dictinitoption, '')
FROM pg_ts_dict d JOIN pg_ts_template t ON t.oid = d.dicttemplate WHERE d.dictnamespace = %(schema)s::regnamespace
UNION ALL
SELECT 'configuration', c.cfgname, p.prsnamespace::regnamespace::text || '.' || p.prsname,
       (SELECT string_agg(m.maptokentype || ':' || m.mapseqno || ':' || dn.nspname || '.' || d.dictname, ' '
                          ORDER BY m.maptokentype, m.mapseqno)
        FROM pg_ts_config_map m JOIN pg_ts_dict d ON d.oid = m.mapdict JOIN pg_namespace dn ON dn.oid = d.dictnamespace
        WHERE m.mapcfg = c.oid)
FROM pg_ts_config c JOIN pg_ts_parser p ON p.oid = c.cfgparser WHERE c.cfgnamespace = %(schema)s::regnamespace
ORDER BY 1, 2"""


def _normalised(schema, rows):
    def one(value):
        if isinstance(value, str):
            return value.replace(f'"{schema}".', "<schema>.").replace(f"{schema}.", "<schema>.")
        return value

    return [tuple(one(value) for value in row) for row in rows]


def schema_signature(schema: str) -> dict:
    """Everything a migration leaves in `schema`: structure, the migrations recorded, and the rows
    migrate writes (content types, permissions) — the admin user tenant creation adds aside."""
    signature = {}
    with connection.cursor() as cursor:
        for name, query in [("columns", COLUMNS), ("constraints", CONSTRAINTS), ("indexes", INDEXES),
                            ("sequences", SEQUENCES), ("sequence owners", SEQUENCE_OWNERS), ("triggers", TRIGGERS)]:
            cursor.execute(query, [schema])
            signature[name] = _normalised(schema, cursor.fetchall())
        cursor.execute(OTHER_OBJECTS, {"schema": schema})
        signature["other objects"] = cursor.fetchall()
        cursor.execute(TEXT_SEARCH, {"schema": schema})
        signature["text search"] = _normalised(schema, cursor.fetchall())
        cursor.execute(f'SELECT id, app, name FROM "{schema}".django_migrations ORDER BY id')
        signature["migrations"] = cursor.fetchall()
        tables = sorted({row[0] for row in signature["columns"]} - {"django_migrations", "accounts_user"})
        signature["tables"] = tables
        for table in tables:
            cursor.execute(f'SELECT row_to_json(t)::text FROM "{schema}"."{table}" t ORDER BY 1')
            signature[f"rows of {table}"] = [row[0] for row in cursor.fetchall()]
    return signature


def migrations_applied_at(schema: str) -> list:
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT app, name, applied FROM "{schema}".django_migrations ORDER BY id')
        return cursor.fetchall()
