#!/usr/bin/env bash
# `make images`: builds a memex service image WITHOUT a container engine (none runs on these
# machines, so deploy/docker/Dockerfile cannot be built here), then runs it.
#
#   scripts/build_image.sh SERVICE CRANE OUT_DIR CACHE_DIR
#
# 1. A Debian bookworm rootfs from debootstrap (Debian's packages; cached under CACHE_DIR/images).
# 2. The service installed into a copy of it from uv.lock (`uv sync --frozen --no-editable
#    --package memex-SERVICE`, as the Dockerfile does), inside a chroot, as root, then the build
#    tools and sources removed.
# 3. The rootfs packed as one layer by crane (go-containerregistry) onto an empty OCI base, its
#    entrypoint, user and environment set, pushed to a registry crane serves on loopback only, and
#    pulled from it to OUT_DIR/memex-SERVICE.tar (`docker load` reads it).
# 4. The check: the image is exported back from the registry into a fresh folder and its own
#    ENTRYPOINT (read from the image config) runs under chroot as uid 10001 until the service's
#    gRPC health says SERVING (embedding: with the model `make models` prepared, bind-mounted).
#
# Needs root (debootstrap, chroot, mounts in a private mount namespace by unshare).
set -euo pipefail

service=$1 crane=$2 out=$3 cache=$4
repo=$(cd "$(dirname "$0")/.." && pwd)
images=$cache/images
rootfs=$images/rootfs-bookworm
py=$repo/.venv/bin/python
mkdir -p "$images" "$out"

if [[ ! -d $rootfs ]]; then
  rm -rf "$rootfs.tmp"
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates,libstdc++6,libgomp1 \
    bookworm "$rootfs.tmp" http://deb.debian.org/debian
  mv "$rootfs.tmp" "$rootfs"
fi

work=$(mktemp -d "$images/build-$service.XXXXXX")
registry_pid=
cleanup() {
  [[ -n $registry_pid ]] && kill "$registry_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Runs a command chrooted in $1 with /proc, /dev, DNS and the build machine's CA bundle (TLS to
# the package registries may pass a proxy that this machine trusts), in a mount namespace of its
# own so no mount outlives it and the bundle never lands in the image.
host_ca=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}
in_root() {
  local root=$1
  shift
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  touch "$root/tmp/build-ca.crt"
  unshare --mount --fork --kill-child bash -c '
    root=$1 ca=$2; shift 2
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount --bind "$ca" "$root/tmp/build-ca.crt"
    exec chroot "$@"' _ "$root" "$host_ca" "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root SSL_CERT_FILE=/tmp/build-ca.crt PIP_CERT=/tmp/build-ca.crt "$@"
  rm -f "$root/tmp/build-ca.crt"
}

echo "== installing memex-$service into a copy of the rootfs"
cp -a "$rootfs" "$work/root"
mkdir -p "$work/root/src"
# Only tracked files: what the Dockerfile's build context holds (.dockerignore drops the rest).
git -C "$repo" ls-files -z pyproject.toml uv.lock protos shared services gateway \
  | tar -C "$repo" --null -T - -cf - | tar -C "$work/root/src" -xf -
in_root "$work/root" /bin/bash -euo pipefail -c "
  useradd --uid 10001 --user-group --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin memex
  python3 -m venv /opt/uv
  /opt/uv/bin/pip install --quiet --disable-pip-version-check uv==0.13.8
  cd /src
  UV_PROJECT_ENVIRONMENT=/app/.venv UV_PYTHON_DOWNLOADS=never UV_CACHE_DIR=/tmp/uv-cache \
    UV_LINK_MODE=copy UV_COMPILE_BYTECODE=1 \
    /opt/uv/bin/uv sync --frozen --no-dev --no-editable --package memex-$service --python /usr/bin/python3
  rm -rf /src /opt/uv /tmp/uv-cache /var/cache/apt/* /var/lib/apt/lists/* /etc/resolv.conf"

echo "== packing the layer and the image"
tar -C "$work/root" --numeric-owner --exclude=./proc/* --exclude=./dev/* -cf "$work/layer.tar" .
port=$("$py" -c 'from memex.testing import free_port; print(free_port())')
"$crane" registry serve --address "127.0.0.1:$port" 2>"$work/registry.log" &
registry_pid=$!
for _ in $(seq 50); do
  "$crane" catalog --insecure "127.0.0.1:$port" >/dev/null 2>&1 && break
  sleep 0.2
done
ref=127.0.0.1:$port/memex/$service:0.1.0
"$crane" append --insecure --oci-empty-base -f "$work/layer.tar" -t "$ref" >/dev/null
"$crane" mutate --insecure "$ref" -t "$ref" \
  --entrypoint=python,-m,memex.$service --user 10001 --workdir /app \
  --env PATH=/app/.venv/bin:/usr/local/bin:/usr/bin:/bin --env PYTHONUNBUFFERED=1 \
  --env HF_HUB_OFFLINE=1 >/dev/null
"$crane" pull --insecure "$ref" "$out/memex-$service.tar"

echo "== running the image's own entrypoint"
entrypoint=$("$crane" config --insecure "$ref" | "$py" -c 'import json,sys; print(" ".join(json.load(sys.stdin)["config"]["Entrypoint"]))')
mkdir "$work/run"
"$crane" export --insecure "$ref" - | tar -C "$work/run" -xf -
grpc_port=$("$py" -c 'from memex.testing import free_port; print(free_port())')
env_args=(PATH=/app/.venv/bin:/usr/bin:/bin HOME=/nonexistent "MEMEX_${service^^}_PORT=$grpc_port")
if [[ $service == embedding ]]; then
  model=$("$py" -c 'from memex.embedding.config import default_model_dir; print(default_model_dir())')
  mkdir -p "$work/run/models/model"
  mount_model="mount --bind $model $work/run/models/model"
  env_args+=(MEMEX_EMBEDDING_MODEL_DIR=/models/model)
else
  mount_model=true
fi
unshare --mount --fork --kill-child bash -c "
  $mount_model
  mount -t proc proc $work/run/proc
  mount --rbind /dev $work/run/dev
  exec chroot --userspec=10001:10001 $work/run /usr/bin/env -i ${env_args[*]} $entrypoint" \
  >"$work/run.log" 2>&1 &
run_pid=$!
if "$py" -c "
import asyncio, sys
from memex.shared.health import wait_until_serving
asyncio.run(wait_until_serving('127.0.0.1:$grpc_port', timeout=120))"; then
  echo "== memex/$service: '$entrypoint' in the image serves (gRPC health SERVING); $out/memex-$service.tar"
  status=0
else
  echo "== memex/$service did not become SERVING; its log:"
  cat "$work/run.log"
  status=1
fi
# unshare ignores SIGTERM while it waits, so the service (its only child) is stopped by its id.
for child in $(pgrep -P "$run_pid"); do kill "$child" 2>/dev/null || true; done
wait "$run_pid" 2>/dev/null || true
ls -l "$out/memex-$service.tar"
exit $status
