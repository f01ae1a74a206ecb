#!/usr/bin/env bash
# Installs what the suite needs on a fresh Debian machine (root, Python 3.11, no GPU):
# a Vulkan driver (Mesa's lavapipe) when none is present, Debian's Chromium (the browser column,
# driven by Playwright; Playwright's own browser download is never used), Debian's Firefox ESR (the Firefox
# column: it opens the served page), the Python packages, and the pinned npm packages of package-lock.json.
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
