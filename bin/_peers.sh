# Sourced by ./run-tests (after bin/_venv.sh, from the repo root): the published Python MCP servers
# the tests talk to (mcp-server-time, -fetch, -git), in a virtualenv of their own, .peers, kept apart
# from .venv so their dependencies never become the platform's. Same rule as .venv: pip runs only
# when requirements-peers.txt changed and the pins are not already installed (no network otherwise).
if [ ! -x .peers/bin/python ]; then
  echo "• creating .peers (the Python MCP servers the tests talk to)" >&2
  "${PYTHON:-python3}" -m venv .peers
fi
peers_stamp=.peers/.requirements.sha256
peers_want=$(sha256sum requirements-peers.txt | cut -d' ' -f1)
if [ "$(cat "$peers_stamp" 2>/dev/null || true)" != "$peers_want" ]; then
  if ! .peers/bin/python bin/pins_installed.py requirements-peers.txt; then
    echo "• installing the Python MCP peers" >&2
    .peers/bin/python -m pip install --quiet -r requirements-peers.txt >&2
  fi
  echo "$peers_want" > "$peers_stamp"
fi
# mcp-server-fetch simplifies pages with readabilipy, which installs its Node.js dependencies with
# `npm install` the first time a page is fetched: in the middle of a test, where a second suite (or a
# concurrent call) would find them half written. Installed here, once, before any test runs.
readability_js=$(.peers/bin/python -c "import os, readabilipy; print(os.path.join(os.path.dirname(readabilipy.__file__), 'javascript'))")
if [ ! -d "$readability_js/node_modules" ]; then
  echo "• installing readabilipy's Node.js dependencies (for mcp-server-fetch)" >&2
  (cd "$readability_js" && npm install --silent --no-audit --no-fund >&2)
fi
