"""Another process reading the catalog through the gateway's lookup cache (tools.catalog_cache).

    python tests/support/catalog_reader.py SCHEMA

For each line on stdin it prints one JSON line. A line `TOOL` (a model-visible tool name) or
`SCHEMA TOOL` asks whether that tool is available to agents as this process sees it, in SCHEMA
(the command line's by default); `revalidate SECONDS` sets how long this process trusts the
catalog generations it read (tools.catalog_cache.REVALIDATE_SECONDS) and answers {"ok": true}.
Needs DJANGO_SETTINGS_MODULE, DATABASE_URL (the test database) and the test's REDIS_URL in the
environment."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main():
    import django

    django.setup()
    from django_tenants.utils import schema_context

    from tools import catalog_cache
    from tools.gateway.call import find_tool

    for line in sys.stdin:
        words = line.split()
        if words[0] == "revalidate":
            catalog_cache.REVALIDATE_SECONDS = float(words[1])
            print(json.dumps({"ok": True}), flush=True)
            continue
        schema, name = words if len(words) == 2 else (sys.argv[1], words[0])
        with schema_context(schema):
            tool = find_tool(name=name)
        print(json.dumps({"available": bool(tool and tool.is_available_to_agents)}), flush=True)


if __name__ == "__main__":
    main()
