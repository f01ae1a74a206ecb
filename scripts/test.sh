#!/usr/bin/env bash
# The whole test suite, as CI runs it: set up, then each gate in order, stopping at the first red.
# --heavy adds ONNX Runtime Web's C++ WebGPU provider column: about 500 s, 250 of them in the 10 cases where that
# provider never answers and the page waits out its 25 s backstop (docs/findings/onnxruntime-web.md, finding 8),
# which would put the default run past its 15 minutes on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
heavy=0
for arg in "$@"; do
  case $arg in
    --heavy) heavy=1 ;;
    *) echo "scripts/test.sh: unknown argument '$arg' (expected --heavy, or nothing)" >&2; exit 2 ;;
  esac
done
bash scripts/setup.sh
logs=$(mktemp -d)
# Bytecode is cached outside the checkout, in one folder the run's processes share: the tree stays as clean as with
# no bytecode at all, and the hundreds of Python processes below (each column, each subprocess of a test) do not
# compile the suite's modules again each (about 2.7 s a process here).
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX="$logs/pycache"
# A column that mostly waits on its browser (Firefox maps read-backs on a 100 ms tick; ONNX Runtime Web's C++
# provider never answers some cases, each then waits out its 25 s backstop) runs beside the steps that keep the
# cores busy, and a step of one process that leaves a core idle runs beside other such steps: the case check beside
# lint; after the suite's own tests, the Dawn and GL columns, the JS loader's Chromium column, the JSEP column and
# the browser tests (their loaders' 20 s hangs) beside the Chromium column (the two Chromium columns of one package
# took 35 s together against 60 s one after the other, for the same CPU). Its log is shown, and its exit status
# decides, where it stands in the order below. Each step is its own process on its own inputs and none writes what
# another reads, so only the wall time changes; the one shared thing is the machine, and the waits that decide a
# hang (20 s for a loader, 25 s for ONNX Runtime Web) stay far above a case's time with six processes on two cores.
step() { echo "== [$(( SECONDS / 60 ))m$(( SECONDS % 60 ))s] $*"; }   # where the run's minutes go (the log only)
declare -A beside=()
start_beside() {  # start_beside NAME COMMAND...
  local name=$1; shift
  "$@" >"$logs/$name.log" 2>&1 &
  beside[$name]=$!
}
finish_beside() {  # finish_beside NAME: its log, then its exit status
  local name=$1 rc=0
  wait "${beside[$name]}" || rc=$?
  unset "beside[$name]"
  cat "$logs/$name.log"
  return $rc
}
stop_beside() { for pid in "${beside[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap stop_beside EXIT
step "style: ruff check, ruff format --check (pyproject.toml [tool.ruff]) and Biome's lint of the JavaScript (biome.jsonc)"
python3 -m ruff check --quiet .
python3 -m ruff format --check --quiet .
node_modules/.bin/biome lint --error-on-warnings --no-errors-on-unmatched
start_beside cases python3 -m cases --check
step "lint: schema, reachable variants, every variant renders and compiles, bindings agree, portable to @huggingface/jinja"
python3 -m conformance lint specs --device vulkan --require-js
step "cases: golden files match the manifests (ran beside lint)"
finish_beside cases
start_beside firefox python3 -m pytest conformance/ --webgpu=firefox -q -p no:cacheprovider
start_beside js-firefox python3 -m pytest conformance/ --impl js-loader --webgpu=firefox -q -p no:cacheprovider
if (( heavy )); then
  start_beside ort-web python3 -m pytest conformance/ --impl onnxruntime-web --webgpu=chromium -q -p no:cacheprovider \
    --expectations docs/findings/onnxruntime-web-chromium.yaml
fi
step "the plain-install promise, and the column of $(python3 -c 'from conformance.gpu.device import get_device; print(get_device("vulkan").summary["adapter"])' 2>/dev/null) through wgpu:"
echo "   pip install . into a scratch venv, then every case by pytest --pyargs conformance from an empty directory;"
echo "   a new kernel author's path, scaffold to CI gate, with the suite installed from a release tag of a clone"
python3 -m pytest tests/certify/test_wheel.py tests/gate/test_new_user_path.py --run-packaging -q -s -p no:cacheprovider
step "the suite's own tests"
# less the two tests that are the lint and cases steps above (the same commands, the same assertions)
python3 -m pytest tests -q -p no:cacheprovider -n 2 --durations=15 \
  --deselect tests/gate/test_lint.py::test_real_specs_pass \
  --deselect tests/cases/test_golden.py::test_check_passes_on_committed_goldens
step "the reference JavaScript loader's own tests (loader/: npm test, node --test with no GPU: every golden call"
echo "   planned as its golden file says, bad input and tampered packages refused, the render budget, the types by tsc)"
(cd loader && npm test --silent)
start_beside dawn python3 -m pytest conformance/ --webgpu=dawn --device=vulkan -q -p no:cacheprovider
start_beside gl python3 -m pytest conformance/ --device=gl -q -p no:cacheprovider
start_beside jsep python3 -m pytest conformance/ --impl onnxruntime-web-jsep --webgpu=chromium -q -p no:cacheprovider \
  --expectations docs/findings/onnxruntime-web-jsep-chromium.yaml
start_beside js-chromium python3 -m pytest conformance/ --impl js-loader --webgpu=chromium -q -p no:cacheprovider
start_beside js-node python3 -m pytest conformance/ --impl js-loader --webgpu=node -q -p no:cacheprovider
start_beside js-deno python3 -m pytest conformance/ --impl js-loader --webgpu=deno -q -p no:cacheprovider
start_beside browser-tests python3 -m pytest tests/browsers/test_js_loader.py \
  tests/browsers/test_readme_browser_path.py --run-browsers -q -p no:cacheprovider
step "conformance in headless Chromium (SwiftShader: f16 calls asserted rejected)"
python3 -m pytest conformance/ --webgpu=chromium -q -p no:cacheprovider
step "conformance through Dawn (Tint), the same device (ran beside the Chromium column)"
finish_beside dawn
step "conformance on wgpu's OpenGL backend (llvmpipe, no shader-f16; ran beside the Chromium column)"
finish_beside gl
step "the reference JavaScript loader (loader/) in headless Chromium: it plans, renders and dispatches in the page (ran beside the Chromium column)"
finish_beside js-chromium
step "the reference JavaScript loader in Node with Dawn for Node (OpenGL ES on llvmpipe, no shader-f16; ran beside the Chromium column)"
finish_beside js-node
step "the reference JavaScript loader in Deno with wgpu (lavapipe, shader-f16 run; ran beside the Chromium column)"
finish_beside js-deno
step "planted loader bugs and broken loaders fail only their case, in Chromium and Firefox; the README's serve and"
echo "   merge lines as written, with Chromium and Firefox opened at the served URL (ran beside the Chromium columns)"
finish_beside browser-tests
step "ONNX Runtime Web's JSEP provider in headless Chromium (known findings: docs/findings/onnxruntime-web.md; ran beside Chromium)"
finish_beside jsep
step "conformance in headless Firefox ESR at the served page (Gecko's WebGPU on lavapipe: f16 run; ran beside the steps above)"
finish_beside firefox
step "the reference JavaScript loader in headless Firefox ESR (f16 run; ran beside the steps above)"
finish_beside js-firefox
if (( heavy )); then
  step "ONNX Runtime Web's C++ WebGPU provider in headless Chromium (known findings: docs/findings/onnxruntime-web.md; ran beside)"
  finish_beside ort-web
else
  step "ONNX Runtime Web's C++ WebGPU provider: not in the default run (its 10 known hangs cost ~250 s); bash scripts/test.sh --heavy runs it"
fi
step "every gate passed"
