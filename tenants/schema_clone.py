"""Copy a migrated schema into a new one with plain DDL (issue 22, P5): text-search dictionaries and
configurations (the conversation search's, issue 20), tables, defaults, identity columns and their
sequences, constraints, indexes, triggers and the rows migrate wrote (django_migrations, content
types, permissions).

The script is read from the catalogs once per process and template state, with the template on
the search_path alone, so every name it holds is unqualified and lands in whatever schema runs it.
Objects it cannot copy faithfully (views, functions, types, sequences outside identity columns,
partitioned or unlogged tables, row security, text-search parsers and templates, a text-search
configuration used by anything but an index) raise CloneUnsupported before anything is created:
the caller then migrates the new schema instead. An index names its configuration by name, so the
copy's index uses the copy's configuration; a default or a constraint copied by LIKE would keep
the template's, hence the refusal."""

from dataclasses import dataclass

from django.db import connection
from psycopg import sql


class CloneUnsupported(Exception):
    """The template holds something this copier does not reproduce."""


@dataclass(frozen=True)
class CloneScript:
    structure: str  # text-search dictionaries and configurations, CREATE TABLE … (LIKE template.…) for every table
    data: str  # the rows migrate wrote, copied from the template
    finish: str  # sequence values, keys, indexes, foreign keys, triggers


UNSUPPORTED = """
SELECT 'relation ' || relname || ' (' || relkind::text || ')' FROM pg_class
 WHERE relnamespace = %(ns)s::regnamespace
   AND (relkind NOT IN ('r', 'i', 'S') OR relpersistence <> 'p' OR relrowsecurity OR reloptions IS NOT NULL)
UNION ALL SELECT 'function ' || proname FROM pg_proc WHERE pronamespace = %(ns)s::regnamespace
UNION ALL SELECT 'type ' || typname FROM pg_type t WHERE typnamespace = %(ns)s::regnamespace AND typrelid = 0
   AND NOT EXISTS (SELECT 1 FROM pg_type e WHERE e.oid = t.typelem AND e.typrelid <> 0)
UNION ALL SELECT 'sequence ' || s.relname FROM pg_class s WHERE s.relnamespace = %(ns)s::regnamespace AND s.relkind = 'S'
   AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = s.oid AND d.deptype = 'i')
UNION ALL SELECT 'constraint ' || conname FROM pg_constraint WHERE connamespace = %(ns)s::regnamespace
   AND contype NOT IN ('p', 'u', 'x', 'f', 'c')
UNION ALL SELECT 'policy ' || polname FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid
 WHERE c.relnamespace = %(ns)s::regnamespace
UNION ALL SELECT 'text search parser ' || prsname FROM pg_ts_parser WHERE prsnamespace = %(ns)s::regnamespace
UNION ALL SELECT 'text search template ' || tmplname FROM pg_ts_template WHERE tmplnamespace = %(ns)s::regnamespace
UNION ALL SELECT 'text search configuration ' || cfg.cfgname || ' used by '
       || pg_describe_object(d.classid, d.objid, d.objsubid)
FROM pg_ts_config cfg JOIN pg_depend d ON d.refclassid = 'pg_ts_config'::regclass AND d.refobjid = cfg.oid
 WHERE cfg.cfgnamespace = %(ns)s::regnamespace
   AND NOT (d.classid = 'pg_class'::regclass AND EXISTS (SELECT 1 FROM pg_index i WHERE i.indexrelid = d.objid))"""
# Dictionaries before configurations (their mappings name them). Names from other schemas are
# qualified: the template is alone on the search path (pg_catalog's are always visible).
TEXT_SEARCH_DICTIONARIES = """
SELECT d.dictname, quote_ident(n.nspname) || '.' || quote_ident(t.tmplname), d.dictinitoption
FROM pg_ts_dict d JOIN pg_ts_template t ON t.oid = d.dicttemplate JOIN pg_namespace n ON n.oid = t.tmplnamespace
WHERE d.dictnamespace = %s::regnamespace ORDER BY d.oid"""
TEXT_SEARCH_CONFIGURATIONS = """
SELECT c.cfgname, quote_ident(n.nspname) || '.' || quote_ident(p.prsname)
FROM pg_ts_config c JOIN pg_ts_parser p ON p.oid = c.cfgparser JOIN pg_namespace n ON n.oid = p.prsnamespace
WHERE c.cfgnamespace = %s::regnamespace ORDER BY c.oid"""
# One mapping per list of dictionaries, for all the token types that use it.
TEXT_SEARCH_MAPPINGS = """
SELECT cfgname, string_agg(quote_ident(alias), ', ' ORDER BY maptokentype), dictionaries
FROM (SELECT c.oid, c.cfgname, m.maptokentype, t.alias,
             string_agg(m.mapdict::regdictionary::text, ', ' ORDER BY m.mapseqno) AS dictionaries
      FROM pg_ts_config c JOIN pg_ts_config_map m ON m.mapcfg = c.oid
      JOIN LATERAL ts_token_type(c.cfgparser) t ON t.tokid = m.maptokentype
      WHERE c.cfgnamespace = %s::regnamespace GROUP BY c.oid, c.cfgname, m.maptokentype, t.alias) token_types
GROUP BY oid, cfgname, dictionaries ORDER BY oid, min(maptokentype)"""
TABLES = """
SELECT c.relname, obj_description(c.oid, 'pg_class'),
       array_agg(a.attname ORDER BY a.attnum) FILTER (WHERE a.attgenerated = '')
FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE c.relnamespace = %s::regnamespace AND c.relkind = 'r' GROUP BY c.oid, c.relname ORDER BY c.oid"""
SEQUENCES = "SELECT sequencename, data_type::text, last_value FROM pg_sequences WHERE schemaname = %s ORDER BY 1"
# Keys first (foreign keys need them), then the other indexes, then foreign keys.
CONSTRAINTS = """
SELECT c.relname, con.conname, pg_get_constraintdef(con.oid), con.contype = 'f'
FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid
WHERE con.connamespace = %s::regnamespace AND con.contype IN ('p', 'u', 'x', 'f')
ORDER BY con.contype = 'f', con.oid"""
INDEXES = """
SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE c.relnamespace = %s::regnamespace
  AND NOT EXISTS (SELECT 1 FROM pg_constraint con WHERE con.conindid = i.indexrelid AND con.conrelid = i.indrelid)
ORDER BY i.indexrelid"""
TRIGGERS = """
SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
WHERE c.relnamespace = %s::regnamespace AND NOT t.tgisinternal ORDER BY t.oid"""
LIKE_OPTIONS = ("INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING GENERATED INCLUDING CONSTRAINTS "
                "INCLUDING STORAGE INCLUDING COMPRESSION INCLUDING COMMENTS INCLUDING STATISTICS")


def _unqualified(definition: str, template: str) -> str:
    # pg_get_indexdef and pg_get_triggerdef always name the table with its schema.
    for quoted in {template, f'"{template}"'}:
        definition = definition.replace(f" ON {quoted}.", " ON ").replace(f" ON ONLY {quoted}.", " ON ONLY ")
    return definition


def build_script(template: str) -> CloneScript:
    """Read `template` from the catalogs into a script that recreates it (CloneUnsupported when it
    holds what the script cannot recreate). Leaves the connection on the public schema."""
    connection.set_schema(template, include_public=False)
    try:
        with connection.cursor() as cursor:
            return _read(cursor, template)
    finally:
        connection.set_schema_to_public()


def _read(cursor, template: str) -> CloneScript:
    def render(composed):
        return composed.as_string(cursor.connection)

    cursor.execute(UNSUPPORTED, {"ns": template})
    if unsupported := [row[0] for row in cursor.fetchall()]:
        raise CloneUnsupported(", ".join(unsupported))
    source = sql.Identifier(template)
    structure = _text_search(cursor, template)
    cursor.execute(TABLES, [template])
    tables = cursor.fetchall()
    for name, comment, _columns in tables:
        table = sql.Identifier(name)
        structure.append(sql.SQL("CREATE TABLE {} (LIKE {}.{} " + LIKE_OPTIONS + ")").format(table, source, table))
        if comment is not None:
            structure.append(sql.SQL("COMMENT ON TABLE {} IS {}").format(table, sql.Literal(comment)))
    filled = set()
    if tables:
        cursor.execute(" UNION ALL ".join(
            render(sql.SQL("SELECT {} FROM {}.{} HAVING count(*) > 0").format(sql.Literal(name), source, sql.Identifier(name)))
            for name, _comment, _columns in tables
        ))
        filled = {row[0] for row in cursor.fetchall()}
    data = []
    for name, _comment, columns in tables:
        if name in filled:
            names = sql.SQL(", ").join(map(sql.Identifier, columns))
            data.append(sql.SQL("INSERT INTO {} ({}) OVERRIDING SYSTEM VALUE SELECT {} FROM {}.{}").format(
                sql.Identifier(name), names, names, source, sql.Identifier(name)))
    finish = []
    cursor.execute(SEQUENCES, [template])
    for sequence, data_type, value in cursor.fetchall():
        # An identity copied by LIKE gets a sequence of its own, not always of the same type.
        finish.append(sql.SQL("ALTER SEQUENCE {} AS " + data_type).format(sql.Identifier(sequence)))
        if value is not None:
            finish.append(sql.SQL("SELECT setval({}, {}, true)").format(sql.Literal(sequence), sql.Literal(value)))
    cursor.execute(CONSTRAINTS, [template])
    constraints = cursor.fetchall()
    finish += _add_constraints([row for row in constraints if not row[3]])
    cursor.execute(INDEXES, [template])
    finish += [sql.SQL(_unqualified(row[0], template)) for row in cursor.fetchall()]
    finish += _add_constraints([row for row in constraints if row[3]])
    cursor.execute(TRIGGERS, [template])
    finish += [sql.SQL(_unqualified(row[0], template)) for row in cursor.fetchall()]
    return CloneScript(*("".join(render(statement) + ";\n" for statement in part) for part in (structure, data, finish)))


def _text_search(cursor, template: str) -> list:
    """The template's text-search dictionaries and configurations, as pg_dump writes them."""
    statements = []
    cursor.execute(TEXT_SEARCH_DICTIONARIES, [template])
    for name, dictionary_template, options in cursor.fetchall():
        # The options are stored as the text of the CREATE's own list (language = 'spanish', …).
        statements.append(sql.SQL("CREATE TEXT SEARCH DICTIONARY {} (TEMPLATE = {}{})").format(
            sql.Identifier(name), sql.SQL(dictionary_template), sql.SQL(f", {options}" if options else "")))
    cursor.execute(TEXT_SEARCH_CONFIGURATIONS, [template])
    for name, parser in cursor.fetchall():
        statements.append(sql.SQL("CREATE TEXT SEARCH CONFIGURATION {} (PARSER = {})").format(
            sql.Identifier(name), sql.SQL(parser)))
    cursor.execute(TEXT_SEARCH_MAPPINGS, [template])
    for name, token_types, dictionaries in cursor.fetchall():
        statements.append(sql.SQL("ALTER TEXT SEARCH CONFIGURATION {} ADD MAPPING FOR {} WITH {}").format(
            sql.Identifier(name), sql.SQL(token_types), sql.SQL(dictionaries)))
    return statements


def _add_constraints(constraints):
    """One ALTER TABLE per table for all its constraints: a table is locked and its cache entry
    rebuilt once, not once per constraint."""
    by_table = {}
    for table, name, definition, _is_foreign in constraints:
        by_table.setdefault(table, []).append(
            sql.SQL("ADD CONSTRAINT {} ").format(sql.Identifier(name)) + sql.SQL(definition)
        )
    return [sql.SQL("ALTER TABLE {} ").format(sql.Identifier(table)) + sql.SQL(", ").join(clauses)
            for table, clauses in by_table.items()]


def run_script(script: CloneScript, *, schema_name: str) -> None:
    """Create `schema_name` and run `script` in it, in the caller's transaction."""
    with connection.cursor() as cursor:
        cursor.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema_name)).as_string(cursor.connection))
    connection.set_schema(schema_name, include_public=False)
    try:
        with connection.cursor() as cursor:
            for part in (script.structure, script.data, script.finish):
                if part:
                    cursor.execute(part)
    finally:
        connection.set_schema_to_public()
