"""Exit 0 if every `name==version` pin of a requirements file is installed at that version.

    python bin/pins_installed.py requirements.txt

Used by bin/_venv.sh to skip pip (and the network) when the venv is already right."""

import re
import sys
from importlib import metadata

PIN = re.compile(r"^\s*([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*==\s*([^\s;#]+)")


def main(path):
    for line in open(path, encoding="utf-8"):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = PIN.match(line)
        if match is None:
            return 1  # not an exact pin: let pip decide
        name, version = match.groups()
        try:
            if metadata.version(name) != version:
                return 1
        except metadata.PackageNotFoundError:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
