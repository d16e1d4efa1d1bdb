#!/usr/bin/env bash
# Renders every overlay (and the prod overlay with each component) and validates
# the result offline against the Kubernetes JSON schemas shipped by kubernetes-validate,
# strictly (unknown fields fail), for each Kubernetes version given.
#
# kubernetes-validate only warns on a kind or apiVersion it has no schema for and exits 0:
# here that warning fails the run, except for PodMonitor (a Prometheus Operator CRD, whose
# schema no Kubernetes release ships) in the renders that include the component.
#
# What the manifests mean (the memory sums, the ports, the pod played by the real binaries)
# is tested by edge/e2e/manifests/ (make test-e2e); see README.md, "What make test checks".
#
# usage: deploy/k8s/validate.sh KUSTOMIZE KUBERNETES_VALIDATE VERSION...
set -euo pipefail
kustomize=$1 validate=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
# kustomize only reads relative paths inside its root: the composition lives beside overlays/.
compose=$(mktemp -d "$here/.validate-XXXXXX")
trap 'rm -rf "$work" "$compose"' EXIT

for component in podmonitor shared-cache tracing; do
  mkdir -p "$compose/$component"
  cat > "$compose/$component/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../../overlays/prod
components:
  - ../../components/$component
YAML
done

# name, directory, kinds allowed without a schema (a regex; empty: none)
renders=()
for overlay in "$here"/overlays/*/; do
  renders+=("overlay-$(basename "$overlay")|$overlay|")
done
renders+=("prod+podmonitor|$compose/podmonitor|PodMonitor")
renders+=("prod+shared-cache|$compose/shared-cache|")
renders+=("prod+tracing|$compose/tracing|")
renders+=("component-podmonitor|$here/components/podmonitor|PodMonitor")

failed=0
for entry in "${renders[@]}"; do
  IFS='|' read -r name dir schemaless <<<"$entry"
  out="$work/$name.yaml"
  "$kustomize" build "$dir" > "$out"
  for version in "$@"; do
    log="$work/$name-$version.log"
    if ! "$validate" --strict --quiet -k "$version" "$out" > "$log" 2>&1; then
      echo "FAIL $name against Kubernetes $version:"; cat "$log"; failed=1; continue
    fi
    missing=$(grep "Couldn't find schema" "$log" || true)
    if [[ -n "$schemaless" ]]; then
      missing=$(grep -Ev "Couldn't find schema for kind ($schemaless) " <<<"$missing" || true)
    fi
    if [[ -n "$missing" ]]; then
      echo "FAIL $name against Kubernetes $version: no schema (a typo in kind or apiVersion?):"
      echo "$missing"; failed=1; continue
    fi
    echo "ok   $name against Kubernetes $version ($(grep -c '^kind:' "$out") resources)"
  done
done
exit $failed
