"""The platform in miniature, for stdio isolation tests (M3): a process that imports the project
the way the web and worker processes do, then lists the tools of one stdio server with the
real transport, and prints them as JSON.

    python tests/support/stdio_platform.py PROGRAM [ARG...]

The server gets PEEK_VAR = this process's pid, so an introspecting server reports what it got
when it tried to read this process's /proc environment."""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import asixto  # noqa: E402,F401 - what every platform process imports first

from tests.support.catalog_server import PEEK_VAR  # noqa: E402
from tools.mcp import ServerTarget, list_tools  # noqa: E402


def main():
    target = ServerTarget(transport="stdio", argv=tuple(sys.argv[1:]), env={PEEK_VAR: str(os.getpid())}, timeout=60.0)
    print(json.dumps(list_tools(target)))


if __name__ == "__main__":
    main()
