#!/usr/bin/env bash
# Make a fresh checkout runnable with nothing but Python 3.11 and access to PyPI:
# a project-local tool venv (.tools) with uv and the `task` runner, then the workspace venv (.venv).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/.tools"
python="${CAIRN_PYTHON:-$(command -v python3.11 || command -v python3)}"

if [ ! -x "$tools/bin/uv" ] || [ ! -x "$tools/bin/task" ]; then
  echo "bootstrap: installing uv and task into $tools" >&2
  "$python" -m venv "$tools"
  "$tools/bin/pip" install --quiet --disable-pip-version-check "uv==0.13.8" "go-task-bin==3.54.0"
fi

# Never let uv fetch a Python build: the machine's 3.11 is the one we use.
export UV_PYTHON_DOWNLOADS=never
cd "$root"
"$tools/bin/uv" sync --frozen --quiet --python "$python"
