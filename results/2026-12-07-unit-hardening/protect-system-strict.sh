#!/bin/bash
# Runs "$@" as ProtectSystem=strict + RuntimeDirectory=rxsteer would: every mount read-only
# but /proc, /sys, /dev and /run/rxsteer (and a private /tmp).
set -e
mkdir -p /run/rxsteer
exec unshare -m --propagation private bash -c '
set -e
for mp in $(awk "{print \$5}" /proc/self/mountinfo | sort -u); do
  case "$mp" in /proc*|/sys*|/dev*) continue;; esac
  mount -o remount,bind,ro "$mp" 2>/dev/null || true
done
mount -t tmpfs tmpfs /tmp
mount --bind /run/rxsteer /run/rxsteer
mount -o remount,bind,rw /run/rxsteer
touch /etc/rxsteer-probe 2>/dev/null && { echo "NOT read-only: /etc"; rm -f /etc/rxsteer-probe; exit 9; }
touch /run/rxsteer/.probe && rm /run/rxsteer/.probe
exec "$@"' bash "$@"
