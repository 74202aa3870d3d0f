#!/usr/bin/env bash
# Debian packages pawl's tests and demo use: the CNCF registry, skopeo, htpasswd, sshd, gpg, git,
# kubectl (kustomize, for deploy/kubernetes).
# `install-deps.sh image` adds what building and running the container image needs
# (scripts/build-image.sh, test/ship/image.test.ts): debootstrap, umoci, podman, runc. CI installs
# both; without the second group the image test says it is skipped.
set -euo pipefail
pkgs=(git docker-registry skopeo apache2-utils openssh-server openssh-client gnupg openssl ca-certificates python3 make g++)
# kubectl may come from elsewhere (a cloud SDK's package); Debian's is kubernetes-client.
command -v kubectl >/dev/null || pkgs+=(kubernetes-client)
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
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; else SUDO=; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
