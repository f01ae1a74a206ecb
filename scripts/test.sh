#!/usr/bin/env bash
# The whole test suite, as CI runs it: set up, then each gate in order, stopping at the first red.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PYTHONDONTWRITEBYTECODE=1
echo "== lint: schema, reachable variants, every variant renders and compiles, bindings agree, portable to @huggingface/jinja"
python3 -m conformance lint specs --device vulkan --require-js
echo "== cases: golden files match the manifests"
python3 -m cases --check
echo "== the plain-install promise: pip install . into a scratch venv, then --pyargs conformance from an empty directory"
python3 -m pytest tests/certify/test_wheel.py --run-packaging -q -p no:cacheprovider
echo "== the suite's own tests"
python3 -m pytest tests -q -p no:cacheprovider -n 2
echo "== conformance on $(python3 -c 'from conformance.gpu.device import get_device; print(get_device("vulkan").summary["adapter"])' 2>/dev/null)"
python3 -m pytest conformance/ --device=vulkan -q -p no:cacheprovider
echo "== conformance through Dawn (Tint), the same device"
python3 -m pytest conformance/ --webgpu=dawn --device=vulkan -q -p no:cacheprovider
echo "== conformance in headless Chromium (SwiftShader: f16 calls asserted rejected)"
python3 -m pytest conformance/ --webgpu=chromium -q -p no:cacheprovider
echo "== ONNX Runtime Web's C++ WebGPU provider in headless Chromium (known findings: docs/findings/onnxruntime-web.md)"
python3 -m pytest conformance/ --impl onnxruntime-web --webgpu=chromium -q -p no:cacheprovider \
  --expectations docs/findings/onnxruntime-web-chromium.yaml
echo "== ONNX Runtime Web's JSEP provider in headless Chromium (known findings: docs/findings/onnxruntime-web.md)"
python3 -m pytest conformance/ --impl onnxruntime-web-jsep --webgpu=chromium -q -p no:cacheprovider \
  --expectations docs/findings/onnxruntime-web-jsep-chromium.yaml
echo "== conformance in headless Firefox ESR at the served page (Gecko's WebGPU on lavapipe: f16 run)"
python3 -m pytest conformance/ --webgpu=firefox -q -p no:cacheprovider
echo "== conformance on wgpu's OpenGL backend (llvmpipe, no shader-f16)"
python3 -m pytest conformance/ --device=gl -q -p no:cacheprovider
