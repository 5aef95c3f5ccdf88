#!/usr/bin/env bash
# Installs the Python `kubernetes` client (37.x) into target/tools/python-venv (or $E2E_TOOLS_DIR/python-venv),
# where the API conformance tests look for it (override with E2E_PYTHON=/path/to/python). Run from anywhere: bash e2e/kube-emulator/tests/python/setup-venv.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/../../../.." && pwd)"
venv="${E2E_TOOLS_DIR:-$root/target/tools}/python-venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import kubernetes, sys; sys.exit(0 if kubernetes.__version__.startswith("37.") else 1)' 2>/dev/null; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'kubernetes>=37,<38'
fi
"$venv/bin/python" -c 'import kubernetes; print("python kubernetes client", kubernetes.__version__, "ready in '"$venv"'")'
