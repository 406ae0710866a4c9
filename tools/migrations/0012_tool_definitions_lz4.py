"""Tool definitions compress with LZ4 instead of PostgreSQL's default pglz (P2).

Each tool row holds two definitions of 1–3 KB, over the size PostgreSQL compresses from; writing
5,000 of them in a sync spent most of the database's CPU in pglz. LZ4 compresses several times
faster for a slightly larger result. Only values written from now on use it; both read alike. A
server built without LZ4 keeps pglz (the statement is skipped)."""

from django.db import migrations

LZ4 = """
DO $$ BEGIN
    ALTER TABLE tools_tool ALTER COLUMN definition SET COMPRESSION lz4,
                           ALTER COLUMN server_definition SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN NULL;
END $$;
"""
DEFAULT = """
ALTER TABLE tools_tool ALTER COLUMN definition SET COMPRESSION default,
                       ALTER COLUMN server_definition SET COMPRESSION default;
"""


class Migration(migrations.Migration):
    dependencies = [("tools", "0011_tool_call_interrupted")]

    operations = [migrations.RunSQL(LZ4, DEFAULT)]
