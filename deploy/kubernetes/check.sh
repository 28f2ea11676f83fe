#!/usr/bin/env bash
# Offline checks of the Kubernetes deployment: every overlay renders with `kubectl kustomize`
# and each rendered object validates, strictly (no unknown fields), against the bundled
# Kubernetes schemas of kubernetes-validate; every container runs the image deploy/Dockerfile
# and the flake's `image` build (name:tag, user), with workspace_dir and the projects volume on
# separate paths (check_image_layout.py). Also checks that the config.toml shipped in the base
# is a valid zeroclaw configuration. The images themselves are not built here (no container
# engine, no nixpkgs): the flake's image is evaluated against the nixpkgs stub.
set -euo pipefail
cd "$(dirname "$0")"
k8s_version="${K8S_VERSION:-1.33.0}"
command -v kubectl >/dev/null || { echo "check.sh: kubectl is required (kubectl kustomize)" >&2; exit 1; }
if ! command -v kubernetes-validate >/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check kubernetes-validate
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for overlay in overlays/*/; do
  name="$(basename "$overlay")"
  kubectl kustomize "$overlay" > "$out/$name.yaml"
  kubernetes-validate --strict --quiet -k "$k8s_version" "$out/$name.yaml"
  echo "deploy/kubernetes: $name renders and validates ($(grep -c '^kind:' "$out/$name.yaml") objects, Kubernetes $k8s_version)"
done
# The flake's image (name, tag, user), evaluated offline; nix-instantiate comes with
# packaging/check.sh (Debian package nix-bin). Required on CI.
flake_json=-
if command -v nix-instantiate >/dev/null; then
  flake_json="$out/flake.json"
  nix-instantiate --eval --strict --json ../../nix/tests/eval-flake.nix >"$flake_json"
elif [ "${CI:-}" = true ]; then
  echo "check.sh: nix-instantiate is required on CI (the flake's image)" >&2; exit 1
else
  echo "deploy/kubernetes: not checked: the flake's image (no nix-instantiate)"
fi
python3 check_image_layout.py "$(cd ../.. && pwd)" "$flake_json" "$out"/*.yaml
if [ -n "${ZEROCLAW_BIN:-}" ]; then
  mkdir "$out/config" && cp base/config.toml "$out/config/"
  bin="$ZEROCLAW_BIN"; env -u ZEROCLAW_CONFIG_DIR -u ZEROCLAW_BIN "$bin" config check --config-dir "$out/config" >/dev/null
  echo "deploy/kubernetes: base/config.toml is a valid configuration"
fi
