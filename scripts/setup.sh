#!/usr/bin/env bash
# Installs what the suite needs on a fresh Debian machine (root, Python 3.11, no GPU):
# a Vulkan driver (Mesa's lavapipe) when none is present, Debian's Chromium (the browser column,
# driven by Playwright; Playwright's own browser download is never used), Debian's Firefox ESR (the Firefox
# column: it opens the served page), the Python packages, and the pinned npm packages of package-lock.json (among
# them the JavaScript runtimes' WebGPU, binaries inside the packages: Dawn for Node's dawn.node in `webgpu`, Deno in
# `@deno/linux-x64-glibc`; none needs an install script, so npm ci runs none and nothing is downloaded later).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
ls /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json >/dev/null 2>&1 || need+=(mesa-vulkan-drivers libvulkan1)
[ -x /usr/bin/chromium ] || need+=(chromium)
[ -x /usr/bin/firefox-esr ] || need+=(firefox-esr)
command -v npm >/dev/null || need+=(nodejs npm)
if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi
log=$(mktemp)
python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore -e ".[test]" >"$log" 2>&1 \
  || { cat "$log" >&2; echo "setup failed: pip install" >&2; exit 1; }
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >"$log" 2>&1 \
  || { cat "$log" >&2; echo "setup failed: npm ci" >&2; exit 1; }
python3 -c "import conformance, wgpu" || { echo "setup failed: the project is not importable" >&2; exit 1; }
# the JavaScript-runtime columns (conformance/impls/js_loader/runtime.py): Dawn for Node's binary (`webgpu` carries every
# platform's), and Deno where npm has it for this platform (an optional package: Linux x86_64 with glibc)
[ -f node_modules/webgpu/dist/linux-x64/dawn.node ] \
  || { echo "setup failed: npm ci left no node_modules/webgpu/dist/linux-x64/dawn.node" >&2; exit 1; }
if [ "$(uname -sm)" = "Linux x86_64" ] && ldd --version 2>&1 | grep -qiE 'glibc|gnu libc'; then
  node_modules/@deno/linux-x64-glibc/deno --version >/dev/null 2>&1 \
    || { echo "setup failed: node_modules/@deno/linux-x64-glibc/deno does not run" >&2; exit 1; }
fi
