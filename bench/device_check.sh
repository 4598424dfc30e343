#!/usr/bin/env bash
# The course on a device machine with its own JAX and no package index of ours: the course's only
# check on an accelerator and on the newest JAX. On a GPU one call of the device tool; on a TPU,
# where each notebook and the tests run in processes of their own, one after another on the chip,
# two calls, each inside the tool's 10 minutes:
#
#   here:   bash bench/device_wheels.sh                  # a GPU machine's wheels, into .whl/
#           bash bench/device_wheels.sh tpu              # a TPU machine's (Python 3.11)
#   device: run  command="bash bench/device_check.sh"  carry=[".whl"]  timeout_s=590
#   TPU:    run  command="DEVICE_CHECK_STEPS=lessons,compile bash bench/device_check.sh"  (as above)
#           run  command="DEVICE_CHECK_STEPS=sgd,tests bash bench/device_check.sh"
#
# 1. Says what the machine has (accelerator, Python, JAX) and installs the wheels of .whl/ into a
#    folder of their own on PYTHONPATH (pip --target, --no-deps, --no-index), the course being this
#    checkout: the machine's own packages, JAX first, are never touched, and the script checks that
#    JAX is the same after.
# 2. lessons: every lesson and solution with COURSE_STRICT_CHECKS=1 (any cell that raises unless
#    tagged, or any self-check that does not pass, is a failure), timed by bench/bench_lessons.py:
#    the cells' seconds against the 8 s goal, and the slowest. On a GPU each runs in a fresh
#    kernel; on a TPU, whose machine allows no inet socket and so starts no kernel, each runs in
#    an IPython shell in a new process of its own (--in-process), the backend's start timed apart,
#    with each notebook's XLA compiles and the slowest of them. With DEVICE_CHECK_CPU=1 the same
#    again on the machine's CPU backend, for comparison.
# 3. compile: what one small compile costs there against the CPU (bench/bench_compile.py).
# 4. tests: course_lib's in-process tests (what `make compat` runs on other JAX releases), the
#    tables of right and wrong answers among them: on a GPU all of them and the doctests, on all
#    the machine's cores; on a TPU the self-checks' and the core's, in one process, since one
#    program at a time may hold the chip (a test's line each, so a cut run says what passed).
# 5. sgd: the SGD bench (bench/bench_sgd.py, without its training step): FlatTree's update against
#    optax's and one donated buffer's, on the accelerator. Last, so that a call short of time
#    cuts the bench rather than the tests.
#    Each step has its own limit, DEVICE_CHECK_{LESSONS,SGD,TESTS}_S (450, 200, and 240 s, or 480 s
#    for tests in one process as on a TPU; the compile step 60 s), and none runs past
#    DEVICE_CHECK_CALL_S (580 s) from the start, so that a call ends inside its ten minutes with
#    the logs of every step. On the TPU v5e (JAX 0.10.2) the lessons and solutions took 279-281 s
#    (a new process each, whose backend starts in 5.6–8.5 s), the SGD bench 161 s and the 1,121
#    tests 330 s, after 33-45 s of installing.
#
# Logs go to $OUT (the device tool's folder that comes back): device_check.log, backend.txt,
# tests.log, lessons-BACKEND.md (lessons-tpu.md, and lessons-cpu.md), bench_compile.md and
# bench_sgd.json. Elsewhere, OUT defaults to build/device-check/. Without an accelerator the same
# steps run on the CPU backend (a review of the script, not a device check);
# DEVICE_CHECK_IN_PROCESS=1 runs them the TPU's way there, and with DEVICE_CHECK_WHEELS=none they
# use the Python given as PYTHON with what it already has. DEVICE_CHECK_STEPS
# (lessons,compile,tests,sgd) chooses steps, DEVICE_CHECK_NOTEBOOKS the notebooks,
# DEVICE_CHECK_TREES the bench's trees (abc) and DEVICE_CHECK_TESTS the test files, so
# that a later call can run on a TPU what an earlier one had no time for.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/device-check}
PYTHON=${PYTHON:-python3}
# What to run and for how long, refused before anything starts when it is not understood.
steps=",${DEVICE_CHECK_STEPS:-lessons,compile,tests,sgd},"  # commas around, to match ,name,
IFS=, read -ra asked <<<"${steps:1:-1}"
for name in "${asked[@]}"; do
    case $name in
        lessons | compile | sgd | tests) ;;
        *)
            echo "device_check: DEVICE_CHECK_STEPS has '$name'; the steps are lessons, compile," \
                "tests and sgd, separated by commas only"
            exit 2
            ;;
    esac
done
for var in DEVICE_CHECK_CALL_S DEVICE_CHECK_LESSONS_S DEVICE_CHECK_SGD_S DEVICE_CHECK_TESTS_S; do
    if [ -n "${!var:-}" ] && ! [[ ${!var} =~ ^[1-9][0-9]*$ ]]; then
        echo "device_check: $var=${!var}: give a whole number of seconds, 1 or more"
        exit 2
    fi
done
mkdir -p "$OUT"
exec > >(tee "$OUT/device_check.log") 2>&1
status=0
started=$(date +%s)
timed() {  # $1: a step's own limit in seconds, then its command, stopped at that limit or when
    # the call's DEVICE_CHECK_CALL_S are up, whichever comes first. Says so on a line of its own,
    # whatever the command left unfinished on its last one.
    local left=$((${DEVICE_CHECK_CALL_S:-580} - ($(date +%s) - started)))
    local seconds=$((left < $1 ? left : $1)) began rc
    shift
    if [ "$seconds" -lt 1 ]; then
        printf '\ndevice_check: no time left for this step\n' >&2
        return 124
    fi
    began=$(date +%s)
    # A command that outlives the TERM by 5 s is killed (nbclient, say, shutting its kernel down
    # and then running the next notebook): 580 + 5 s is inside the device tool's 590.
    timeout -k 5 "$seconds" "$@"
    rc=$?
    if [ $rc = 124 ] || { [ $rc = 137 ] && [ $(($(date +%s) - began)) -ge "$seconds" ]; }; then
        printf '\ndevice_check: stopped after %s s, all the time this step had\n' "$seconds" >&2
    fi
    return $rc
}
step() { printf '\n== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }
finish() {
    step "done: $([ $status = 0 ] && echo 'everything passed' || echo 'FAILURES above')"
    exit $status
}
jax_version() { "$PYTHON" -c 'import jax, jaxlib; print(jax.__version__, jaxlib.__version__)'; }

step "the machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null \
    || echo "no NVIDIA GPU"
"$PYTHON" --version
before=$(jax_version) || { echo "device_check: $PYTHON cannot import JAX"; exit 2; }
echo "jax, jaxlib: $before"
"$PYTHON" -c 'import jax; print("backend:", jax.default_backend(), jax.devices())' 2>&1 \
    | grep -v hugepages | tee "$OUT/backend.txt"
backend=$(sed -n 's/^backend: \([a-z]*\).*/\1/p' "$OUT/backend.txt")
# A TPU chip admits one program at a time and its machine no kernel: one process, no kernels.
in_process=${DEVICE_CHECK_IN_PROCESS:-$([ "$backend" = tpu ] && echo 1 || echo 0)}
echo "the steps below run on the $backend backend$([ "$in_process" = 1 ] && echo ', in one process each, no kernels')"

step "install the Jupyter wheels and the course, beside the machine's packages"
if [ "${DEVICE_CHECK_WHEELS:-carried}" != none ]; then
    ls .whl/*.whl >/dev/null 2>&1 || { echo "device_check: no .whl/: run bench/device_wheels.sh here first and carry .whl"; exit 2; }
    site=${TMPDIR:-/tmp}/course-device-site
    rm -rf "$site"
    PIP_CONFIG_FILE=/dev/null "$PYTHON" -m pip install --isolated --quiet --no-index --no-deps --no-cache-dir \
        --target "$site" .whl/*.whl || { echo "device_check: the wheels did not install"; exit 2; }
    # The course itself is this checkout, on the path (no build: no setuptools from an index).
    export PYTHONPATH="$site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
export JUPYTER_PLATFORM_DIRS=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
needs=$([ "$in_process" = 1 ] && echo IPython, nbformat, optax, orbax.checkpoint || echo ipykernel, nbclient)
"$PYTHON" -c "import course_lib, course_tools, $needs; print('course_lib from', course_lib.__file__)" \
    || { echo "device_check: the course does not import"; exit 2; }
after=$(jax_version)
if [ "$after" != "$before" ]; then
    echo "device_check: JAX changed from $before to $after"
    exit 2
fi
echo "JAX unchanged: $after"

run_lessons() {  # $1: the backend, as JAX names it
    step "every lesson and solution, strict checks, timed ($1)"
    how=()
    [ "$in_process" = 1 ] && how=(--in-process --compiles 5)
    # shellcheck disable=SC2086
    timed "${DEVICE_CHECK_LESSONS_S:-450}" \
        env COURSE_STRICT_CHECKS=1 "$PYTHON" bench/bench_lessons.py "${how[@]}" \
        ${DEVICE_CHECK_NOTEBOOKS:-} 2>&1 | grep -v hugepages | tee "$OUT/lessons-$1.md" || status=1
}
if [[ $steps == *,lessons,* ]]; then
    run_lessons "$backend"
    if [ "${DEVICE_CHECK_CPU:-0}" = 1 ]; then
        JAX_PLATFORMS=cpu run_lessons cpu
    fi
fi

if [[ $steps == *,compile,* ]]; then
    step "what a small compile costs ($backend, against the CPU)"
    timed 60 "$PYTHON" bench/bench_compile.py 2>&1 | grep -v hugepages \
        | tee "$OUT/bench_compile.md" || status=1
fi
if [[ $steps == *,tests,* ]]; then
    step "course_lib's in-process tests and doctests"
    if [ "$in_process" = 1 ]; then
        # One process, which holds the chip: the self-checks' tests (the tables of right and wrong
        # answers, judging, the kit and the guard) and course_lib's core. Those an accelerator's
        # arithmetic or devices have broken come first.
        default_tests=$(echo tests/checks/test_checks_lesson0{6,7,8}.py \
            tests/checks/test_judging.py tests/checks/test_guard.py tests/checks/test_kit.py \
            tests/checks/test_checks_lesson0{1,2,3,4,5,9}.py tests/core/test_*.py)
        tests=${DEVICE_CHECK_TESTS:-$default_tests}
        how=(-v --durations=10)
        tests_s=${DEVICE_CHECK_TESTS_S:-480}
    else
        # pytest-benchmark, on the GPU image, warns under xdist; the tests turn warnings into
        # errors.
        tests="--doctest-modules course_lib tests/test_layers.py
            $(find tests/core tests/viz tests/checks -name 'test_*.py' | sort)"
        how=(-q -n "$(nproc)" --dist loadfile)
        tests_s=${DEVICE_CHECK_TESTS_S:-240}
    fi
    # shellcheck disable=SC2086
    timed "$tests_s" "$PYTHON" -m pytest -p no:cacheprovider -p no:benchmark \
        -rfE "${how[@]}" -m "not browser" $tests >"$OUT/tests.log" 2>&1 || status=1
    # pytest's short summary and its last line (not the tests whose names say "failed")
    grep -E "^(FAILED|ERROR) |^=+ .*(passed|failed|error)|^device_check: " "$OUT/tests.log" \
        | tail -n 25
    echo "tests logged: $(grep -c ' PASSED' "$OUT/tests.log") passed," \
        "$(grep -c ' FAILED' "$OUT/tests.log") failed"
fi
# The bench last: where a call's time runs short, it is the bench that is cut, not the tests.
if [[ $steps == *,sgd,* ]]; then
    step "the SGD bench ($backend)"
    timed "${DEVICE_CHECK_SGD_S:-200}" "$PYTHON" bench/bench_sgd.py --skip-train \
        --budget 0.2 --min-calls 5 --trees "${DEVICE_CHECK_TREES:-abc}" \
        --json "$OUT/bench_sgd.json" 2>&1 | grep -v hugepages || status=1
fi
finish
