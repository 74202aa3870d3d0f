#!/usr/bin/env bash
# Debian packages pawl's tests and demo use: the CNCF registry, skopeo, htpasswd, sshd, gpg, git,
# and chromium (the dashboard's browser tests drive it with playwright-core; no browser is downloaded).
set -euo pipefail
pkgs=(git chromium docker-registry skopeo apache2-utils openssh-server openssh-client gnupg openssl ca-certificates python3 make g++)
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
