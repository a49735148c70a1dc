#!/usr/bin/env bash
# `npm start`: install what is missing, build everything in release mode, serve the page.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build-web.sh
echo
echo "Spyre Playground is served at the 'Local' address below (Ctrl-C stops it)."
exec npm run web:preview
