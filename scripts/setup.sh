#!/usr/bin/env bash
# Installs what building and testing the playground needs, only where it is missing:
# the wasm32 target, wasm-bindgen-cli at the version Cargo.lock pins, wasm-pack, Debian's
# Chromium and ChromeDriver, and the npm packages of package-lock.json (wasm-opt among them,
# from npm's binaryen). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

WASM_PACK_VERSION=0.15.1
say() { printf '[setup] %s\n' "$*"; }

need_cmd() {
  command -v "$1" >/dev/null 2>&1 || { say "missing '$1': $2"; exit 1; }
}
need_cmd cargo "install Rust with rustup first"
need_cmd rustup "install Rust with rustup first"
need_cmd node "install Node.js 20 or later first"
need_cmd npm "install npm first"
export PATH="$HOME/.cargo/bin:$PATH"

# 1. The WebAssembly target.
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

# Installs a crate's binary at an exact version; tries the crate's own lock file first.
cargo_install() {
  local crate=$1 version=$2
  say "installing $crate $version (this takes several minutes, once)"
  cargo install --locked "$crate" --version "$version" ||
    cargo install "$crate" --version "$version"
}

# 2. wasm-bindgen-cli must match the wasm-bindgen library in Cargo.lock exactly.
BINDGEN_VERSION=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' Cargo.lock)
if [ -z "$BINDGEN_VERSION" ]; then
  say "could not read the wasm-bindgen version from Cargo.lock"
  exit 1
fi
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$BINDGEN_VERSION" ]; then
  cargo_install wasm-bindgen-cli "$BINDGEN_VERSION"
fi

# 3. wasm-pack (it uses the wasm-bindgen on PATH; it cannot download one here).
if [ "$(wasm-pack --version 2>/dev/null | awk '{print $2}')" != "$WASM_PACK_VERSION" ]; then
  cargo_install wasm-pack "$WASM_PACK_VERSION"
fi

# 3b. cargo-fuzz, for the bounded fuzzing step of scripts/test.sh (scripts/fuzz.sh runs it
# on stable Rust with RUSTC_BOOTSTRAP=1).
CARGO_FUZZ_VERSION=0.13.2
if [ "$(cargo fuzz --version 2>/dev/null | awk '{print $2}')" != "$CARGO_FUZZ_VERSION" ]; then
  cargo_install cargo-fuzz "$CARGO_FUZZ_VERSION"
fi

# 4. Chromium and ChromeDriver from Debian, for browser tests.
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
      say "Chromium is missing and installing it needs root: apt-get install chromium chromium-driver"
      exit 1
    fi
  fi
  say "installing Debian's chromium and chromium-driver"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi

# 5. npm packages, exactly as locked; redone only when the lock file changes.
LOCK_HASH=$(sha256sum package-lock.json | awk '{print $1}')
STAMP=node_modules/.package-lock.sha256
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$LOCK_HASH" ]; then
  say "installing npm packages (npm ci)"
  npm ci --no-audit --no-fund
  echo "$LOCK_HASH" >"$STAMP"
fi

# 6. wasm-opt comes with npm's binaryen at the version package.json pins (step 5); a
# node_modules that lost it is reinstalled.
BINARYEN_VERSION=$(node -p 'require("./package.json").devDependencies.binaryen')
if ! node_modules/.bin/wasm-opt --version 2>/dev/null | grep -q "version ${BINARYEN_VERSION%%.*} "; then
  say "installing npm packages (npm ci) for wasm-opt from binaryen $BINARYEN_VERSION"
  npm ci --no-audit --no-fund
  echo "$LOCK_HASH" >"$STAMP"
fi

# 7. ONNX's conformance suite: a local Python environment (.venv/, git-ignored) with a
# pinned onnx, whose package ships the backend node test cases that
# crates/driver/tests/onnx_conformance.rs runs. Made only when missing or out of date.
ONNX_VERSION=1.23.2
NUMPY_VERSION=2.3.5
VENV=.venv
VENV_STAMP="$VENV/.spyre-onnx-$ONNX_VERSION-numpy-$NUMPY_VERSION"
if [ ! -f "$VENV_STAMP" ]; then
  need_cmd python3 "install Python 3.11 or later (with its venv module) first"
  if [ ! -x "$VENV/bin/python" ]; then
    say "creating the Python environment $VENV for ONNX's conformance tests"
    python3 -m venv "$VENV"
  fi
  say "installing onnx $ONNX_VERSION and numpy $NUMPY_VERSION into $VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
    "onnx==$ONNX_VERSION" "numpy==$NUMPY_VERSION"
  touch "$VENV_STAMP"
fi
