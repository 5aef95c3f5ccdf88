#!/usr/bin/env bash
# Builds the manager's container image without a container daemon or registry access, as CI does: a release
# build of the manager on a minimal root filesystem assembled from scratch with Debian's buildah (the same
# layout as the Containerfile's distroless stage: the binary, the C runtime it links, CA certificates, an
# /etc/passwd with the nonroot user 65532, no shell), written as an OCI archive.
#
# Usage: e2e/image.sh [OUT]        (default OUT: target/image/platform-operator.tar)
# Then:  skopeo copy oci-archive:OUT docker://registry.example.com/platform-operator:TAG   (or buildah push)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${1:-$root/target/image/platform-operator.tar}
name=platform-operator:latest
work=$root/target/image
mkdir -p "$work" "$(dirname "$out")"

if ! command -v buildah >/dev/null; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "buildah missing: installing Debian's buildah package"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends buildah >/dev/null
  else
    echo "error: buildah is missing; install it (apt-get install buildah) and re-run" >&2
    exit 1
  fi
fi

echo "==> release build of the manager"
# The controllers package alone, so the e2e crate's test-hooks feature stays out of the shipped binary.
cargo build --release --locked -p controllers --bin manager
binary=${CARGO_TARGET_DIR:-$root/target}/release/manager

# Without root, run the rest inside a user namespace of buildah's, where mounting the image works.
if [ "$(id -u)" -ne 0 ]; then
  exec buildah unshare "$0" "$@"
fi
# Image state lives under target/, not in /var/lib/containers: vfs needs no kernel overlay support.
b() { buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs "$@"; }

echo "==> assembling the image from scratch"
container=$(b from scratch)
cleanup() { b rm "$container" >/dev/null 2>&1 || true; }
trap cleanup EXIT
rootfs=$(b mount "$container")
install -m 0755 "$binary" "$rootfs/manager"
# The shared libraries the binary links (glibc, libgcc), at the paths the dynamic loader looks for them.
for library in $(ldd "$binary" | grep -o '/[^ ]*'); do
  cp --parents -L "$library" "$rootfs/"
done
mkdir -p "$rootfs/etc/ssl/certs" "$rootfs/home/nonroot" "$rootfs/tmp"
cp -L /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$rootfs/etc/group"
printf 'hosts: files dns\n' >"$rootfs/etc/nsswitch.conf"
chown 65532:65532 "$rootfs/home/nonroot"
chmod 1777 "$rootfs/tmp"
b umount "$container" >/dev/null

b config \
  --user 65532:65532 \
  --workingdir / \
  --entrypoint '["/manager"]' \
  --cmd '' \
  --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
  --label org.opencontainers.image.title=platform-operator \
  --label org.opencontainers.image.description="NebariApp, KeystoneApplicationCredential and ManagedRancherProject controllers" \
  --label org.opencontainers.image.licenses=Apache-2.0 \
  "$container"
b commit --quiet --rm "$container" "$name" >/dev/null
trap - EXIT
rm -f "$out"
b push --quiet "$name" "oci-archive:$out:$name"
b rmi "$name" >/dev/null 2>&1 || true
echo "==> wrote $out ($(du -h "$out" | cut -f1), manager binary $(du -h "$binary" | cut -f1))"
