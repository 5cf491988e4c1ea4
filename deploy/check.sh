#!/usr/bin/env bash
# `task deploy-check`: everything under deploy/ validated offline.
#   1. kubectl kustomize renders every overlay
#   2. kubernetes-validate --strict against a pinned Kubernetes version, on every rendered object
#   3. checkov on the rendered overlays and the Dockerfile (skips, each justified: deploy/checkov.yaml)
#   4. hadolint on the Dockerfile
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
KUBERNETES_VERSION=1.32.0
tools="$root/.tools/deploy/bin"

if ! command -v kubectl >/dev/null 2>&1; then
  echo "deploy-check: kubectl is not installed (needed for 'kubectl kustomize'); install kubectl >= 1.27" >&2
  exit 1
fi
"$root/scripts/deploy-tools.sh"

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for overlay in deploy/k8s/overlays/*/; do
  name="$(basename "$overlay")"
  kubectl kustomize "$overlay" > "$out/$name.yaml"
  echo "rendered $name: $(grep -c '^kind:' "$out/$name.yaml") objects"
done

validated=0
unchecked=0
for rendered in "$out"/*.yaml; do
  report="$("$tools/kubernetes-validate" --strict --kubernetes-version "$KUBERNETES_VERSION" "$rendered" 2>&1)" || {
    echo "$report" >&2
    echo "deploy-check: kubernetes-validate failed on $(basename "$rendered")" >&2
    exit 1
  }
  # The only other line allowed: a custom resource (a CRD's group, e.g. monitoring.coreos.com), which
  # kubernetes-validate has no schema for. A built-in kind it cannot find is a typo and fails.
  custom="Couldn't find schema for kind [A-Za-z]+ with api version [a-z0-9-]+(\.[a-z0-9-]+)+/"
  if echo "$report" | grep -v ' passed for resource ' | grep -Ev "$custom" | grep -q . \
     || echo "$report" | grep -E "$custom" | grep -q 'k8s\.io/'; then
    echo "$report" >&2
    echo "deploy-check: kubernetes-validate reported more than passes on $(basename "$rendered")" >&2
    exit 1
  fi
  validated=$((validated + $(echo "$report" | grep -c ' passed for resource ')))
  unchecked=$((unchecked + $(echo "$report" | grep -cE "$custom" || true)))
done
echo "kubernetes-validate (strict, Kubernetes $KUBERNETES_VERSION): $validated objects passed, $unchecked custom resources without a schema"

checkov_args=(--config-file deploy/checkov.yaml -f deploy/Dockerfile)
for rendered in "$out"/*.yaml; do checkov_args+=(-f "$rendered"); done
if ! "$tools/checkov" "${checkov_args[@]}" > "$out/checkov.txt" 2>&1; then
  cat "$out/checkov.txt" >&2
  echo "deploy-check: checkov failed" >&2
  exit 1
fi
grep -E '^(kubernetes|dockerfile) scan results:|^Passed checks' "$out/checkov.txt" | paste - - | sed 's/^/checkov /'

"$tools/hadolint" deploy/Dockerfile
echo "hadolint: deploy/Dockerfile clean"
echo "deploy-check: ok"
