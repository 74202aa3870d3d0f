#!/bin/sh
# The floor under a pass's Git work (bench/run.bench.ts, issue 27): plain `git` doing what the
# pass does to the remote, and nothing else: no history read for the guard, no lock, no checks.
#   cold URL DIR FROM TO   clone URL into DIR, change every marked image tag FROM to TO (one sed
#                          over the marked files), commit the change, push it to main
#   warm DIR               fetch in that clone (the remote has nothing new)
# Run under /usr/bin/time by the bench, which counts the CPU of every git and sed process here.
set -eu
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0
case "$1" in
  cold)
    url=$2 dir=$3 from=$4 to=$5
    git clone --quiet "$url" "$dir"
    cd "$dir"
    git grep -lzF '"$imagepolicy"' | xargs -0 sed -i "s/:$from # {\"\$imagepolicy\"/:$to # {\"\$imagepolicy\"/"
    git -c user.name=floor -c user.email=floor@example.com commit --quiet --all --message "update images"
    git push --quiet origin HEAD:main
    ;;
  warm)
    git -C "$2" fetch --quiet origin
    ;;
  *)
    echo "usage: git.sh cold URL DIR FROM TO | warm DIR" >&2
    exit 2
    ;;
esac
