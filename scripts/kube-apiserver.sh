#!/usr/bin/env bash
# A real Kubernetes API server on loopback, for Kubernetes mode's tests and for trying pawl
# against a cluster without one (issue 24). No API server is in Debian or on npm, so this builds
# kube-apiserver and etcd from their Go modules, once, into a cache outside the repository.
#
#   scripts/kube-apiserver.sh build      build what is missing (~10 min of CPU the first time)
#   scripts/kube-apiserver.sh up DIR     build what is missing, start etcd and the API server on
#                                        free loopback ports (a token file, every request
#                                        allowed), apply Flux's CRDs and pawl's, write
#                                        DIR/kubeconfig; returns once the server answers
#   scripts/kube-apiserver.sh up DIR --rbac
#                                        the same, with a real authorizer (--authorization-mode
#                                        RBAC): the kubeconfig's user is in system:masters, any
#                                        other identity (a ServiceAccount's token from `kubectl
#                                        create token`) gets only what RBAC objects grant it
#   scripts/kube-apiserver.sh down DIR   stop both (DIR/*.pid); `up DIR` again restarts them on
#                                        the same ports, token, etcd data and authorizer
#
# PAWL_KUBE_VERSION (default v1.37.2) picks k8s.io/kubernetes; PAWL_KUBE_CACHE the cache folder.
# kube-apiserver's go.mod replaces its staging modules (k8s.io/api, …) with folders of its own
# repository, which a dependency's replace cannot reach: the small module built here requires
# k8s.io/kubernetes and replaces each staging module with its published version (v0.X.Y for
# v1.X.Y), as the Kubernetes project documents for using k8s.io/kubernetes as a library.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
K8S=${PAWL_KUBE_VERSION:-v1.37.2}
CACHE=${PAWL_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pawl/kube-$K8S}
BIN=$CACHE/bin
CRDS=${PAWL_FLUX_CRDS:-$here/../shared/conformance/flux/crds}

build() {
  if [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/etcd" ]; then return 0; fi
  # Go is on this machine kind at /usr/local/go, not always on a non-login shell's PATH.
  command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
  command -v go >/dev/null || { echo "kube-apiserver.sh: Go 1.26 or later is needed to build the API server" >&2; exit 1; }
  export GOMODCACHE=${GOMODCACHE:-$(dirname "$CACHE")/gomod} GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
  local src=$CACHE/src staging=v0.${K8S#v1.}
  mkdir -p "$src/etcd" "$BIN"
  echo "kube-apiserver.sh: building kube-apiserver $K8S and etcd into $BIN (once)" >&2
  local gomod
  gomod=$(cd "$src" && go mod download -json "k8s.io/kubernetes@$K8S" | sed -nE 's/^\s*"GoMod": "(.*)",?$/\1/p')
  {
    echo "module pawl.test/kube"
    echo
    echo "go 1.26"
    echo
    echo "require k8s.io/kubernetes $K8S"
    echo
    echo "replace ("
    sed -nE 's#^\s*(k8s\.io/[a-z0-9-]+) => \./staging/.*#\t\1 => \1 '"$staging"'#p' "$gomod"
    echo ")"
  } >"$src/go.mod"
  cat >"$src/tools.go" <<'GO'
//go:build tools

package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
GO
  cat >"$src/etcd/main.go" <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  (cd "$src" && go mod tidy && go build -trimpath -ldflags=-s -o "$BIN/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver \
    && go build -trimpath -ldflags=-s -o "$BIN/etcd.tmp" ./etcd)
  mv "$BIN/kube-apiserver.tmp" "$BIN/kube-apiserver"
  mv "$BIN/etcd.tmp" "$BIN/etcd"
}

free_port() {
  node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

wait_for() { # PIDFILE URL SECONDS [curl args]: until the URL answers 2xx, or the process ends
  local pid url=$2 limit=$3
  pid=$(cat "$1")
  shift 3
  for _ in $(seq "$((limit * 5))"); do
    if curl -sfk -o /dev/null "$@" "$url"; then return 0; fi
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}

up() {
  local dir=$1 authz=AlwaysAllow
  build
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ "${2:-}" = --rbac ]; then echo RBAC >"$dir/authorization-mode"; fi
  [ -f "$dir/authorization-mode" ] && authz=$(cat "$dir/authorization-mode")
  # Up again on a DIR that was up before is a restart: the same etcd data, token, ports and
  # certificate, as a real API server keeps its address across a restart.
  local token
  if [ -f "$dir/tokens.csv" ]; then
    token=$(cut -d, -f1 "$dir/tokens.csv")
  else
    token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    echo "$token,pawl-test,pawl-test,system:masters" >"$dir/tokens.csv"
  fi
  [ -f "$dir/sa.key" ] || openssl genrsa -out "$dir/sa.key" 2048 2>/dev/null
  openssl rsa -in "$dir/sa.key" -pubout -out "$dir/sa.pub" 2>/dev/null
  local client peer api
  if [ -f "$dir/ports" ]; then
    read -r client peer api <"$dir/ports"
  else
    client=$(free_port)
    peer=$(free_port)
    api=$(free_port)
    echo "$client $peer $api" >"$dir/ports"
  fi
  "$BIN/etcd" --name pawl-test --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "pawl-test=http://127.0.0.1:$peer" >"$dir/etcd.log" 2>&1 &
  echo $! >"$dir/etcd.pid"
  wait_for "$dir/etcd.pid" "http://127.0.0.1:$client/health" 30 || { echo "kube-apiserver.sh: etcd did not start ($dir/etcd.log)" >&2; down "$dir"; exit 1; }
  "$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$client" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --endpoint-reconciler-type none --secure-port "$api" --cert-dir "$dir/certs" \
    --token-auth-file "$dir/tokens.csv" --authorization-mode "$authz" \
    --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$dir/sa.pub" \
    --service-account-signing-key-file "$dir/sa.key" --service-cluster-ip-range 10.0.0.0/24 \
    --disable-admission-plugins ServiceAccount --enable-priority-and-fairness=false >"$dir/apiserver.log" 2>&1 &
  echo $! >"$dir/apiserver.pid"
  wait_for "$dir/apiserver.pid" "https://127.0.0.1:$api/readyz" 120 -H "Authorization: Bearer $token" \
    || { echo "kube-apiserver.sh: the API server did not become ready ($dir/apiserver.log)" >&2; down "$dir"; exit 1; }
  cat >"$dir/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: pawl-test
    cluster:
      server: https://127.0.0.1:$api
      certificate-authority: $dir/certs/apiserver.crt
contexts:
  - name: pawl-test
    context: { cluster: pawl-test, user: pawl-test }
current-context: pawl-test
users:
  - name: pawl-test
    user: { token: $token }
EOF
  local crds=("$CRDS")
  [ -d "$here/deploy/kubernetes/crds" ] && crds+=("$here/deploy/kubernetes/crds")
  for c in "${crds[@]}"; do
    KUBECONFIG=$dir/kubeconfig kubectl apply --server-side -f "$c" >/dev/null
  done
  KUBECONFIG=$dir/kubeconfig kubectl wait --for=condition=Established crd --all --timeout=60s >/dev/null
  echo "$dir/kubeconfig"
}

down() {
  local dir=$1
  for p in apiserver etcd; do
    if [ -f "$dir/$p.pid" ]; then
      kill "$(cat "$dir/$p.pid")" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$(cat "$dir/$p.pid")" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$(cat "$dir/$p.pid")" 2>/dev/null || true
      rm -f "$dir/$p.pid"
    fi
  done
}

case "${1:-}" in
  build) build ;;
  up)
    { [ $# -eq 2 ] || { [ $# -eq 3 ] && [ "$3" = --rbac ]; }; } || { echo "usage: $0 up DIR [--rbac]" >&2; exit 2; }
    up "$2" "${3:-}" ;;
  down) [ $# -eq 2 ] || { echo "usage: $0 down DIR" >&2; exit 2; }; down "$2" ;;
  *) echo "usage: $0 build | up DIR [--rbac] | down DIR" >&2; exit 2 ;;
esac
