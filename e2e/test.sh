#!/usr/bin/env bash
# Runs every check CI runs, on a fresh Debian machine or a developer's: installs what is missing, provisions the
# real substrate (a Kubernetes 1.36 control plane and Keycloak, cached outside the checkout: see
# docs/substrate.md), then formatting, lints, all tests (unit, integration, end-to-end, each end-to-end test on a
# real control plane of its own unless it needs the API emulator's fault hooks; the real Keystone, Prometheus and
# kubectl), the generated-manifest check and the kustomize build.
#
# The suite runs from a copy of the repository's files (tracked and untracked, not ignored) under
# target/isolated/, with nothing beside it: a test that reads a file outside the repository fails here as it
# would in a user's clone. The copy also lets a developer keep editing while the suite runs. The copy builds
# into target/isolated-build and reuses the installed tools of target/tools.
#
# Usage: e2e/test.sh            (from the repository root; CI's .ci/run calls exactly this)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if [ -z "${E2E_ISOLATED_FROM:-}" ]; then
  copy="$root/target/isolated/platform-operator"
  staging="$root/target/isolated/staging"
  printf '\n==> copying the repository to %s\n' "$copy"
  rm -rf "$staging"
  mkdir -p "$staging" "$copy"
  if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard \
      | while IFS= read -r -d '' file; do [ -e "$file" ] && printf '%s\0' "$file"; done \
      | tar --null -T - -cf - | tar -xf - -C "$staging"
  else
    tar --exclude=./target -cf - . | tar -xf - -C "$staging"
  fi
  # Only files whose content changed are replaced, and they get a fresh mtime: cargo decides freshness by
  # mtime, so a copy that kept the originals' mtimes could look older than a build made from an earlier copy.
  (cd "$staging" && find . -type f -print0) | while IFS= read -r -d '' file; do
    if ! cmp -s "$staging/$file" "$copy/$file"; then
      mkdir -p "$(dirname "$copy/$file")"
      cp "$staging/$file" "$copy/$file"
    fi
  done
  (cd "$copy" && find . -type f -print0) | while IFS= read -r -d '' file; do
    [ -e "$staging/$file" ] || rm -f "$copy/$file"
  done
  rm -rf "$staging"
  mkdir -p "$root/target/tools"
  E2E_ISOLATED_FROM="$root" E2E_TOOLS_DIR="$root/target/tools" CARGO_TARGET_DIR="$root/target/isolated-build" \
    exec "$copy/e2e/test.sh"
fi

tools="${E2E_TOOLS_DIR:-$root/target/tools}"
build="${CARGO_TARGET_DIR:-$root/target}"
mkdir -p "$tools"

step() { printf '\n==> %s\n' "$*"; }
need_root_for_apt() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "error: $1 is missing and installing it needs root (apt-get install $2); install it and re-run" >&2
    exit 1
  fi
}

step "prerequisites"
command -v cargo >/dev/null || { echo "error: cargo not found; install Rust with rustup" >&2; exit 1; }
if ! cargo nextest --version >/dev/null 2>&1; then
  echo "cargo-nextest missing: installing it from crates.io"
  cargo install --locked cargo-nextest
fi
# Debian packages the tests use, installed in one go when missing: promtool (alert rules), buildah (builds and runs
# the manager's image without a daemon), Chromium with its chromedriver and NSS's certutil (the served tests meet
# apps in a real browser that trusts the test CA).
missing=()
command -v promtool >/dev/null || missing+=(prometheus)
command -v buildah >/dev/null || missing+=(buildah)
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
command -v certutil >/dev/null || missing+=(libnss3-tools)
if [ "${#missing[@]}" -gt 0 ]; then
  need_root_for_apt "${missing[*]}" "${missing[*]}"
  echo "installing Debian packages: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The Python kubernetes client (a second real client for the API emulator's conformance suite).
bash e2e/kube-emulator/tests/python/setup-venv.sh
export E2E_PYTHON="$tools/python-venv/bin/python"
# A real OpenStack Keystone for the KeystoneApplicationCredential tests (PyPI; pinned; a no-op when current).
e2e/keystone/install.sh "$tools/keystone-venv"
# The real substrate: etcd, kube-apiserver and kube-controller-manager built from their Go modules, kubectl and
# Gateway API's CRDs, Keycloak from Maven Central (a first run builds for about 5 minutes; later runs reuse the
# cache outside the checkout).
substrate_cache=$(e2e/substrate/provision.sh --without-networking | tail -n 1)
# Envoy Gateway and cert-manager (8 minutes of Go build on a fresh machine) build while cargo does: the release
# build's single-unit link-time optimisation leaves a core idle for part of its run. Waited on before the tests.
networking_log="$build/provision-networking.log"
mkdir -p "$build"
# A session of its own, so a failing step stops the whole build (go and its compilers) with it.
setsid e2e/substrate/provision.sh --networking-only >"$networking_log" 2>&1 &
networking_provision=$!
trap 'kill -- -"$networking_provision" 2>/dev/null || true' EXIT
if ! command -v kubectl >/dev/null; then
  echo "kubectl not on PATH: using the provisioned kubectl $("$substrate_cache/kubectl/kubectl" version --client | head -n 1)"
  export PATH="$substrate_cache/kubectl:$PATH"
fi

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

step "one k8s-openapi in the dependency graph"
versions=$(cargo tree --workspace -e normal,dev -i k8s-openapi --prefix none 2>/dev/null | grep -E '^k8s-openapi v' | sort -u)
if [ "$(printf '%s\n' "$versions" | wc -l)" -ne 1 ]; then
  echo "error: more than one k8s-openapi version:"; printf '%s\n' "$versions"; exit 1
fi

step "build the binaries the end-to-end tests run (manager, sandbox, emulators, substrate)"
cargo build --workspace --bins

step "the manager's container image (release build, OCI archive in target/image)"
export E2E_IMAGE_ARCHIVE="$build/image/platform-operator.tar"
e2e/image.sh "$E2E_IMAGE_ARCHIVE"

step "tests"
if ! wait "$networking_provision"; then
  cat "$networking_log" >&2
  echo "error: provisioning Envoy Gateway, cert-manager and Envoy failed (above)" >&2
  exit 1
fi
tail -n 3 "$networking_log" | grep -v '^/' || true
# Every API emulator and every private real control plane writes its authorization decisions here, for the RBAC
# coverage check below.
export E2E_AUTHZ_LOG_DIR="$build/authz-decisions"
rm -rf "$E2E_AUTHZ_LOG_DIR"
# One substrate for the run (its etcd, a shared control plane, both Keycloaks); each end-to-end test starts a
# private control plane on it (E2E_CONTROL_PLANE=real), and the Keycloak client's `real` tests use the Keycloaks.
"$build/debug/substrate" run --keycloak both --networking -- env E2E_CONTROL_PLANE=real cargo nextest run --workspace --no-fail-fast

step "the API emulator's conformance suite on the emulator (the run above held the same assertions to kube-apiserver)"
# Selected from the whole workspace, so the test binary is the one built above (building the package alone would
# resolve its dependencies' features differently and rebuild half the stack).
cargo nextest run --workspace -E 'binary_id(kube-emulator::api_conformance)' --no-fail-fast

step "every grant of the shipped RBAC was needed by the suite"
cargo run --quiet -p e2e --bin rbac-coverage -- --log-dir "$E2E_AUTHZ_LOG_DIR" --output "$build/rbac-coverage.json" \
  | tail -n 3

step "kustomize builds"
for dir in manifests/default manifests/samples manifests/overlays/*/; do
  kubectl kustomize "$dir" >/dev/null
  echo "$dir builds"
done

step "all checks passed"
