# Sourced by ./run and ./run-tests: a virtualenv in .venv with requirements.txt installed.
# pip runs only when requirements.txt changed since the last install and the venv does not
# already hold exactly the pinned versions (so a ready venv needs no network).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "• creating .venv" >&2
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.requirements.sha256
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  if ! .venv/bin/python bin/pins_installed.py requirements.txt; then
    echo "• installing requirements" >&2
    .venv/bin/python -m pip install --quiet --upgrade pip >&2
    .venv/bin/python -m pip install --quiet -r requirements.txt >&2
    echo "$want" > "$stamp"
  fi
fi
export PATH="$PWD/.venv/bin:$PATH"
# As root, stdio servers are fenced off the platform's PostgreSQL and Redis with iptables
# (tools/mcp/fence.py): install Debian's package if it is missing and apt can.
if [ "$(id -u)" = 0 ] && [ "${ASIXTO_STDIO_FENCE:-1}" != 0 ] && ! command -v iptables >/dev/null 2>&1 \
   && [ ! -x /usr/sbin/iptables ] && command -v apt-get >/dev/null 2>&1; then
  echo "• installing Debian's iptables (the stdio servers' fence)" >&2
  (apt-get install -y -q iptables >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q iptables >/dev/null 2>&1; }) \
    || echo "  iptables could not be installed: stdio servers will not start as root (README, stdio servers)" >&2
fi
