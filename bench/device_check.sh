#!/usr/bin/env bash
# The course on a GPU machine with its own (newer) JAX and no package index: the course's only
# check on the newest JAX. One call of the device tool, well inside its 10 minutes:
#
#   here:   bash bench/device_wheels.sh                  # the Jupyter wheels, into .whl/
#   device: run  command="bash bench/device_check.sh"  carry=[".whl"]  timeout_s=590
#
# 1. Says what the machine has (GPU, Python, JAX) and installs the wheels of .whl/ and the course
#    into a folder of their own on PYTHONPATH (pip --target, --no-deps, --no-index): the machine's
#    own packages, JAX first, are never touched, and the script checks that JAX is the same after.
# 2. Runs course_lib's in-process tests and doctests (what `make compat` runs on other JAX
#    releases), on all the machine's cores.
# 3. Runs every lesson and solution from a fresh kernel each, with COURSE_STRICT_CHECKS=1 (any cell
#    that raises unless tagged, or any self-check that does not pass, is a failure), timed by
#    bench/bench_lessons.py on the GPU: the cells' seconds against the 8 s goal, and the slowest.
#    With DEVICE_CHECK_CPU=1 the same again on the machine's CPU backend, for comparison.
#
# Logs go to $OUT (the device tool's folder that comes back): device_check.log, tests.log,
# lessons-BACKEND.md (lessons-gpu.md, and lessons-cpu.md). Elsewhere, OUT defaults to build/device-check/. Without a
# GPU the same steps run on the CPU backend (a review of the script, not a GPU check), and with
# DEVICE_CHECK_WHEELS=none they use the Python given as PYTHON with what it already has.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/device-check}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT"
exec > >(tee "$OUT/device_check.log") 2>&1
status=0
step() { printf '\n== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }
jax_version() { "$PYTHON" -c 'import jax, jaxlib; print(jax.__version__, jaxlib.__version__)'; }

step "the machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null \
    || echo "no NVIDIA GPU: the steps below run on the CPU backend"
"$PYTHON" --version
before=$(jax_version) || { echo "device_check: $PYTHON cannot import JAX"; exit 2; }
echo "jax, jaxlib: $before"
"$PYTHON" -c 'import jax; print("backend:", jax.default_backend(), jax.devices())'

step "install the Jupyter wheels and the course, beside the machine's packages"
if [ "${DEVICE_CHECK_WHEELS:-carried}" != none ]; then
    ls .whl/*.whl >/dev/null 2>&1 || { echo "device_check: no .whl/: run bench/device_wheels.sh here first and carry .whl"; exit 2; }
    site=${TMPDIR:-/tmp}/course-device-site
    rm -rf "$site"
    "$PYTHON" -m pip install --quiet --no-index --no-deps --no-compile --no-cache-dir \
        --target "$site" .whl/*.whl || { echo "device_check: the wheels did not install"; exit 2; }
    # The course itself is this checkout, on the path (no build: no setuptools from an index).
    export PYTHONPATH="$site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
export JUPYTER_PLATFORM_DIRS=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
"$PYTHON" -c 'import course_lib, course_tools, ipykernel, nbclient; print("course_lib from", course_lib.__file__)' \
    || { echo "device_check: the course does not import"; exit 2; }
after=$(jax_version)
if [ "$after" != "$before" ]; then
    echo "device_check: JAX changed from $before to $after"
    exit 2
fi
echo "JAX unchanged: $after"

step "course_lib's in-process tests and doctests"
# pytest-benchmark, on that image, warns under xdist; the tests turn warnings into errors.
tests=$(find tests/core tests/viz tests/checks -name 'test_*.py' | sort)
# shellcheck disable=SC2086
"$PYTHON" -m pytest -p no:cacheprovider -p no:benchmark -q -n "$(nproc)" --dist loadfile \
    -m "not browser" --doctest-modules course_lib $tests tests/test_layers.py \
    >"$OUT/tests.log" 2>&1 || status=1
tail -n 15 "$OUT/tests.log"

run_lessons() {  # $1: the backend, as JAX names it
    step "every lesson and solution, strict checks, timed ($1)"
    COURSE_STRICT_CHECKS=1 "$PYTHON" bench/bench_lessons.py | tee "$OUT/lessons-$1.md" || status=1
}
run_lessons "$("$PYTHON" -c 'import jax; print(jax.default_backend())')"
if [ "${DEVICE_CHECK_CPU:-0}" = 1 ]; then
    JAX_PLATFORMS=cpu run_lessons cpu
fi

step "done: $([ $status = 0 ] && echo 'everything passed' || echo 'FAILURES above')"
exit $status
