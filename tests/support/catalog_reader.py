"""Another process reading the catalog through the gateway's lookup cache (tools.catalog_cache).

    python tests/support/catalog_reader.py SCHEMA

For each line on stdin (a model-visible tool name) it prints one JSON line: whether that tool
is available to agents as this process sees it. Needs DJANGO_SETTINGS_MODULE, DATABASE_URL
(the test database) and the test's REDIS_URL in the environment."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main():
    import django

    django.setup()
    from django_tenants.utils import schema_context

    from tools.gateway.call import find_tool

    with schema_context(sys.argv[1]):
        for line in sys.stdin:
            tool = find_tool(name=line.strip())
            print(json.dumps({"available": bool(tool and tool.is_available_to_agents)}), flush=True)


if __name__ == "__main__":
    main()
