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
