#!/usr/bin/env bash
# `npm test`: installs what is missing (Debian packages, npm dependencies), then type-checks,
# checks formatting, lints, runs Flux's conformance fixtures and every test file.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
[ -d node_modules/tsx ] || npm ci --no-audit --no-fund
npm run typecheck
npm run format:check
npm run lint
npm run conformance
npm run test:unit
