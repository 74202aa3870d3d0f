#!/usr/bin/env bash
# A real Gitea on loopback, for the pull-request tests (issue 25): pawl opens, updates and closes
# real pull requests through its API and pushes real branches over its Git HTTP. Gitea is not in
# Debian or on npm, so this builds it from its Go module, once, into a cache outside the repository.
#
#   scripts/gitea.sh build      build what is missing (~8 min of CPU the first time)
#   scripts/gitea.sh up DIR     build what is missing, start Gitea on a free loopback port with
#                               SQLite in DIR, create an admin user and an API token, write
#                               DIR/gitea.json ({"url","user","password","token"}); returns once
#                               the server answers
#   scripts/gitea.sh down DIR   stop it (DIR/gitea.pid)
#
# PAWL_GITEA_VERSION (default v1.26.0) picks code.gitea.io/gitea; PAWL_GITEA_CACHE the cache
# folder. Gitea's go.mod has replace directives, which a dependency's go.mod cannot pass on: the
# small module built here requires code.gitea.io/gitea and repeats them. (Gitea v1.27 declares its
# module as gitea.dev, which cannot be required under code.gitea.io, hence v1.26.)
set -euo pipefail
V=${PAWL_GITEA_VERSION:-v1.26.0}
CACHE=${PAWL_GITEA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pawl/gitea-$V}
BIN=$CACHE/bin
# Built without `bindata` (which needs Gitea's frontend toolchain), Gitea reads its locales and
# templates from STATIC_ROOT_PATH: the module's own source in the module cache.
GOMODCACHE=${GOMODCACHE:-$(dirname "$CACHE")/gomod}
STATIC=$GOMODCACHE/code.gitea.io/gitea@$V

build() {
  if [ -x "$BIN/gitea" ] && [ -d "$STATIC/options/locale" ]; then return 0; fi
  # Go is on this machine kind at /usr/local/go, not always on a non-login shell's PATH.
  command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
  command -v go >/dev/null || { echo "gitea.sh: Go 1.26 or later is needed to build Gitea" >&2; exit 1; }
  # SQLite is linked in through cgo (mattn/go-sqlite3), so a C compiler is needed too.
  export GOMODCACHE GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=1
  local src=$CACHE/src
  mkdir -p "$src" "$BIN"
  echo "gitea.sh: building Gitea $V into $BIN (once)" >&2
  local gomod
  gomod=$(cd "$src" && go mod download -json "code.gitea.io/gitea@$V" | sed -nE 's/^\s*"GoMod": "(.*)",?$/\1/p')
  {
    echo "module pawl.test/gitea"
    echo
    echo "go 1.26.2"
    echo
    echo "require code.gitea.io/gitea $V"
    echo
    grep -E '^replace ' "$gomod" | sed 's#//.*##'
  } >"$src/go.mod"
  cat >"$src/tools.go" <<'GO'
//go:build tools

package tools

import _ "code.gitea.io/gitea"
GO
  (cd "$src" && go mod tidy && go build -trimpath -tags 'sqlite sqlite_unlock_notify' -ldflags=-s \
    -o "$BIN/gitea.tmp" code.gitea.io/gitea)
  mv "$BIN/gitea.tmp" "$BIN/gitea"
}

free_port() {
  node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

up() {
  local dir=$1
  build
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  # free_port lets its port go before Gitea binds it: two instances started at once (test files
  # run in parallel) could pick the same one, and the readiness check would then be answered by
  # the other instance. Held from choosing the port until this instance answers on it.
  mkdir -p "$CACHE"
  exec 9>"$CACHE/up.lock"
  flock 9
  local port
  if [ -f "$dir/port" ]; then port=$(cat "$dir/port"); else port=$(free_port); echo "$port" >"$dir/port"; fi
  # Gitea refuses to run as root unless told; CI and this machine kind run the tests as root.
  cat >"$dir/app.ini" <<EOF
APP_NAME = pawl-test
RUN_MODE = prod
I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true
WORK_PATH = $dir
[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = $port
ROOT_URL = http://127.0.0.1:$port/
STATIC_ROOT_PATH = $STATIC
APP_DATA_PATH = $dir/data
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false
[database]
DB_TYPE = sqlite3
PATH = $dir/data/gitea.db
[repository]
ROOT = $dir/repos
[security]
INSTALL_LOCK = true
[service]
DISABLE_REGISTRATION = true
[mailer]
ENABLED = false
[log]
MODE = file
LEVEL = warn
ROOT_PATH = $dir/log
[cron]
ENABLED = false
[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false
[queue]
TYPE = level
EOF
  local gitea=("$BIN/gitea" --work-path "$dir" --config "$dir/app.ini")
  local user=pawl-admin password
  if [ ! -f "$dir/gitea.json" ]; then
    "${gitea[@]}" migrate >"$dir/migrate.log" 2>&1 || { echo "gitea.sh: gitea migrate failed ($dir/migrate.log)" >&2; exit 1; }
  fi
  "${gitea[@]}" web >"$dir/gitea.log" 2>&1 9>&- &
  echo $! >"$dir/gitea.pid"
  local pid
  pid=$(cat "$dir/gitea.pid")
  local ok=
  for _ in $(seq 300); do
    if curl -sf -o /dev/null "http://127.0.0.1:$port/api/v1/version"; then ok=1; break; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  # A Gitea that could not bind exits: answered but gone means another process holds the port.
  kill -0 "$pid" 2>/dev/null || ok=
  [ -n "$ok" ] || { echo "gitea.sh: Gitea did not start ($dir/gitea.log)" >&2; down "$dir"; exit 1; }
  exec 9>&-
  if [ ! -f "$dir/gitea.json" ]; then
    password=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
    local token
    token=$("${gitea[@]}" admin user create --admin --username "$user" --password "$password" \
      --email "$user@example.test" --must-change-password=false --access-token \
      --access-token-name pawl-test --access-token-scopes all 2>"$dir/admin.log" \
      | awk '/^Access token was successfully created/ { print $NF }')
    [ -n "$token" ] || { echo "gitea.sh: could not create the admin user and token ($dir/admin.log)" >&2; down "$dir"; exit 1; }
    printf '{"url":"http://127.0.0.1:%s","user":"%s","password":"%s","token":"%s"}\n' \
      "$port" "$user" "$password" "$token" >"$dir/gitea.json.tmp"
    mv "$dir/gitea.json.tmp" "$dir/gitea.json"
  fi
  echo "$dir/gitea.json"
}

down() {
  local dir=$1
  if [ -f "$dir/gitea.pid" ]; then
    local pid
    pid=$(cat "$dir/gitea.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/gitea.pid"
  fi
}

case "${1:-}" in
  build) build ;;
  up) [ $# -eq 2 ] || { echo "usage: $0 up DIR" >&2; exit 2; }; up "$2" ;;
  down) [ $# -eq 2 ] || { echo "usage: $0 down DIR" >&2; exit 2; }; down "$2" ;;
  *) echo "usage: $0 build | up DIR | down DIR" >&2; exit 2 ;;
esac
