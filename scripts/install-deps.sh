#!/usr/bin/env bash
# Debian packages pawl's tests and demo use: the CNCF registry, skopeo, htpasswd, sshd, gpg, git,
# kubectl (for kustomize and deploy/kubernetes), and chromium (the dashboard's browser tests drive
# it with playwright-core; no browser is downloaded), and PostgreSQL (the replica tests start their
# own cluster with initdb/pg_ctl on a free port, as the postgres user; test/helpers/postgres.ts).
# `install-deps.sh image` adds what building and running the container image needs
# (scripts/build-image.sh, test/ship/image.test.ts): debootstrap, umoci, podman, runc. CI installs
# both; without the second group the image test says it is skipped (and fails under CI=true).
set -euo pipefail
pkgs=(git chromium docker-registry skopeo postgresql apache2-utils openssh-server openssh-client gnupg openssl ca-certificates python3 make g++)
for group in "$@"; do
  case "$group" in
    image) pkgs+=(debootstrap umoci podman runc uidmap curl) ;;
    *) echo "install-deps.sh: unknown group $group (known: image)" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# kubectl builds directories with a kustomization file (`kubectl kustomize`); pawl needs kubectl
# 1.21 or later (kustomize v4+). The machines this project runs on have kubectl 1.32 installed;
# where none is on PATH, Debian's kubernetes-client is the fallback, but Debian 12's is 1.20, whose
# kustomize cannot build a directory listed in `resources:` (bases and overlays fail to load).
# Set PAWL_KUBECTL to use another kubectl.
command -v kubectl >/dev/null 2>&1 || missing+=(kubernetes-client)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; else SUDO=; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
