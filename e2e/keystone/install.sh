#!/usr/bin/env bash
# Installs OpenStack Keystone (from PyPI, pinned by constraints.txt beside this script) and gunicorn into a
# virtualenv for the end-to-end tests and the sandbox. Idempotent: does nothing when the venv already holds the
# pinned set (a stamp file records the hash of constraints.txt).
#
# Usage: e2e/keystone/install.sh [VENV]        (default: target/tools/keystone-venv under the repository root)
# Needs: Python >= 3.11 (python3.11, python3.12, python3.13 or python3) and access to PyPI.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=${1:-$root/target/tools/keystone-venv}
constraints=$here/constraints.txt
keystone_version=30.0.0
stamp_file=$venv/.e2e-keystone-stamp
stamp=$(sha256sum "$constraints" | cut -d' ' -f1)

if [ -x "$venv/bin/keystone-manage" ] && [ -x "$venv/bin/gunicorn" ] && [ "$(cat "$stamp_file" 2>/dev/null)" = "$stamp" ]; then
  echo "Keystone $keystone_version already installed in $venv"
  exit 0
fi

python=""
for candidate in python3.11 python3.12 python3.13 python3; do
  if command -v "$candidate" >/dev/null 2>&1 &&
    "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
    python=$candidate
    break
  fi
done
if [ -z "$python" ]; then
  echo "error: Keystone $keystone_version needs Python >= 3.11; install python3.11 (e.g. apt-get install python3.11-venv)" >&2
  exit 1
fi

started=$(date +%s)
echo "installing Keystone $keystone_version and gunicorn into $venv (Python: $($python --version))"
rm -rf "$venv"
"$python" -m venv "$venv"
# uv (itself a PyPI package) resolves and installs the ~100 packages several times faster than pip.
"$venv/bin/pip" install --quiet --disable-pip-version-check uv
# Byte-compile at install time: with PYTHONDONTWRITEBYTECODE=1 every keystone-manage call would otherwise
# recompile everything (~9 s instead of ~3 s).
"$venv/bin/uv" pip install --quiet --python "$venv/bin/python" --compile-bytecode \
  --constraint "$constraints" "keystone==$keystone_version" gunicorn
PYTHONWARNINGS=ignore "$venv/bin/keystone-manage" --version >/dev/null
echo "$stamp" >"$stamp_file"
echo "Keystone installed in $(($(date +%s) - started)) s"
