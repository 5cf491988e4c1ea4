#!/usr/bin/env bash
# The deploy linters in their own venv (.tools/deploy): checkov's dependency tree would clash with the
# workspace lock, and none of them is needed to run Cairn. Installed exactly as locked in
# deploy/tools.txt (uv, which bootstrap.sh put in .tools), again whenever that file changes.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.tools/deploy"
lock="$root/deploy/tools.txt"
python="${CAIRN_PYTHON:-$(command -v python3.11 || command -v python3)}"
export UV_PYTHON_DOWNLOADS=never
stamp="$venv/.lock-sha256"
want="$(sha256sum "$lock" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "deploy-tools: installing deploy/tools.txt into $venv" >&2
  "$root/.tools/bin/uv" venv --quiet --allow-existing --python "$python" "$venv"
  "$root/.tools/bin/uv" pip sync --quiet --python "$venv/bin/python" "$lock"
  echo "$want" > "$stamp"
fi
