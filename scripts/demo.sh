#!/usr/bin/env bash
# The demo: installs what is missing (Debian packages, npm dependencies), then runs pawl's main
# job end to end on loopback (scripts/demo.ts).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
[ -d node_modules/tsx ] || npm ci --no-audit --no-fund
exec node --import tsx scripts/demo.ts
