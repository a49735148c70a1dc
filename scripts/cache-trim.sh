#!/usr/bin/env bash
# Keeps a build cache from filling the disk: a cache directory grown past SPYRE_CACHE_MAX_GB
# (default 30) is removed whole and rebuilt by the next build. Each fresh clone adds its own
# copies of the workspace's crates, so the cache grows with every run that uses it.
set -euo pipefail
DIR=${1:?usage: scripts/cache-trim.sh DIR}
MAX_GB=${SPYRE_CACHE_MAX_GB:-30}
[ -d "$DIR" ] || exit 0
USED_KB=$(du -sk "$DIR" | awk '{print $1}')
if [ "$USED_KB" -gt $((MAX_GB * 1024 * 1024)) ]; then
  echo "[cache] $DIR holds $((USED_KB / 1024 / 1024)) GB, over ${MAX_GB} GB: removing it"
  rm -rf "$DIR"
fi
