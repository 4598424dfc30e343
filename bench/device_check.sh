#!/usr/bin/env bash
# The course on an accelerator host with its own JAX and no package index: the course's only check
# on an accelerator and on the newest JAX. The host's Python has JAX (and NumPy, pytest and
# hypothesis); the course is this checkout, and what else it needs comes as wheels fetched
# beforehand, here, into .whl/, which goes to the host with the checkout:
#
#   bash bench/device_wheels.sh        # for a GPU host (Python 3.12): Jupyter's packages
#   bash bench/device_wheels.sh tpu    # for a TPU host (Python 3.11): all the course imports
#
# then, on the host, each run inside a limit of 10 minutes:
#
#   GPU:  bash bench/device_check.sh
#   TPU:  DEVICE_CHECK_STEPS=lessons,compile bash bench/device_check.sh
#         DEVICE_CHECK_STEPS=sgd,tests bash bench/device_check.sh
#
# A TPU takes two runs: each notebook and the tests run in processes of their own, one after
# another on the chip, which admits one program at a time, and all of it takes longer than 10 min.
#
# 1. Says what the machine has (accelerator, Python, JAX) and installs the wheels of .whl/ into a
#    folder of their own on PYTHONPATH (pip --target, --no-deps, --no-index), the course being this
#    checkout: the machine's own packages, JAX first, are never touched, and the script checks that
#    JAX is the same after.
# 2. lessons: every lesson and solution with COURSE_STRICT_CHECKS=1 (any cell that raises unless
#    tagged, or any self-check that does not pass, is a failure), timed by bench/bench_lessons.py,
#    with the slowest cells. On an accelerator each lesson runs again right after on the same
#    machine's CPU backend, and its seconds are shown as a ratio to the CPU's, against the goal of
#    1.3x (DEVICE_CHECK_CPU=0 leaves that out; elsewhere the cells' seconds are held to the 8 s
#    goal). On a GPU each notebook runs in a fresh kernel; on a TPU host, which allows no inet
#    socket and so starts no kernel, each runs in an IPython shell in a new process of its own
#    (--in-process), the backend's start timed apart, with each notebook's XLA compiles and the
#    slowest of them.
# 3. compile: what one small compile costs there against the CPU (bench/bench_compile.py).
# 4. tests: course_lib's in-process tests (what `make compat` runs on other JAX releases), the
#    tables of right and wrong answers among them: on a GPU all of them and the doctests, on all
#    the machine's cores; on a TPU the self-checks' and the core's, in one process, since one
#    program at a time may hold the chip (a test's line each). bench/device_pytest.py keeps a
#    plugin's failing report hook (a package of the host's that warns as it is imported, under the
#    tests' filterwarnings = error) from ending the run, and records each test that ran: the
#    summary compares the tests collected with the tests run, and calls a run cut short CUT.
# 5. sgd: the SGD bench (bench/bench_sgd.py, without its training step): FlatTree's update against
#    optax's and one donated buffer's, on the accelerator. Last, so that a run short of time cuts
#    the bench rather than the tests.
#    Each step has its own limit, DEVICE_CHECK_{LESSONS,SGD,TESTS}_S (500, 200, and 240 s, or 480 s
#    for tests in one process as on a TPU; the compile step 60 s), and none runs past
#    DEVICE_CHECK_CALL_S (580 s) from the start, so that a run ends inside its 10 minutes with the
#    logs of every step. On the TPU v5e (JAX 0.10.2, 2026-12-06), after 33-45 s of installing: the
#    tests, 1,124 of them, 330 s; the SGD bench 161 s; the lessons and solutions, with each
#    lesson's CPU run, 356 s (279-281 s without).
#
# Logs go to $OUT (default build/device-check/): device_check.log, backend.txt, tests.log,
# tests.record, lessons.md, bench_compile.md and bench_sgd.json. Without an accelerator the same
# steps run on the CPU backend (a review of the script, not a device check);
# DEVICE_CHECK_IN_PROCESS=1 runs them the TPU's way there, and with DEVICE_CHECK_WHEELS=none they
# use the Python given as PYTHON with what it already has. DEVICE_CHECK_STEPS
# (lessons,compile,tests,sgd) chooses steps, DEVICE_CHECK_NOTEBOOKS the notebooks,
# DEVICE_CHECK_TREES the bench's trees (abc) and DEVICE_CHECK_TESTS the test files, so
# that a later run can do on a TPU what an earlier one had no time for.
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
    # the run's DEVICE_CHECK_CALL_S are up, whichever comes first. Says so on a line of its own,
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
    # and then running the next notebook): 580 + 5 s is inside the run's 10 minutes.
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
# JAX's versions, in a line of their own, from a process that also does something else: each
# start of a Python that imports JAX costs a second or more.
VERSIONS='import jax, jaxlib; print("jax, jaxlib:", jax.__version__, jaxlib.__version__)'

step "the machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null \
    || echo "no NVIDIA GPU"
"$PYTHON" --version
"$PYTHON" -c "$VERSIONS"'; print("backend:", jax.default_backend(), jax.devices())' 2>&1 \
    | grep -v hugepages | tee "$OUT/backend.txt"
before=$(sed -n 's/^jax, jaxlib: //p' "$OUT/backend.txt")
[ -n "$before" ] || { echo "device_check: $PYTHON cannot import JAX"; exit 2; }
backend=$(sed -n 's/^backend: \([a-z]*\).*/\1/p' "$OUT/backend.txt")
# A TPU chip admits one program at a time and its machine no kernel: one process, no kernels.
in_process=${DEVICE_CHECK_IN_PROCESS:-$([ "$backend" = tpu ] && echo 1 || echo 0)}
echo "the steps below run on the $backend backend$([ "$in_process" = 1 ] && echo ', in one process each, no kernels')"

step "install the Jupyter wheels and the course, beside the machine's packages"
if [ "${DEVICE_CHECK_WHEELS:-carried}" != none ]; then
    ls .whl/*.whl >/dev/null 2>&1 || { echo "device_check: no .whl/: run bench/device_wheels.sh first and bring .whl/ along"; exit 2; }
    site=${TMPDIR:-/tmp}/course-device-site
    rm -rf "$site"
    PIP_CONFIG_FILE=/dev/null "$PYTHON" -m pip install --isolated --quiet --no-index --no-deps --no-cache-dir \
        --target "$site" .whl/*.whl || { echo "device_check: the wheels did not install"; exit 2; }
    # The course itself is this checkout, on the path (no build: no setuptools from an index).
    export PYTHONPATH="$site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
export JUPYTER_PLATFORM_DIRS=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
needs=$([ "$in_process" = 1 ] && echo IPython, nbformat, optax, orbax.checkpoint || echo ipykernel, nbclient)
imported=$("$PYTHON" -c "import course_lib, course_tools, $needs; $VERSIONS
print('course_lib from', course_lib.__file__)" 2>&1) \
    || { echo "$imported"; echo "device_check: the course does not import"; exit 2; }
grep '^course_lib from' <<<"$imported"
after=$(sed -n 's/^jax, jaxlib: //p' <<<"$imported")
if [ "$after" != "$before" ]; then
    echo "device_check: JAX changed from $before to $after"
    exit 2
fi
echo "JAX unchanged: $after"

if [[ $steps == *,lessons,* ]]; then
    # On an accelerator each lesson runs again on the machine's CPU backend, for its ratio.
    against_cpu=${DEVICE_CHECK_CPU:-$([ "$backend" != cpu ] && echo 1 || echo 0)}
    step "every lesson and solution, strict checks, timed ($backend$(
        [ "$against_cpu" = 1 ] && echo ', each lesson against the CPU backend'))"
    how=()
    [ "$in_process" = 1 ] && how+=(--in-process --compiles 5)
    [ "$against_cpu" = 1 ] && how+=(--against-cpu)
    # shellcheck disable=SC2086
    timed "${DEVICE_CHECK_LESSONS_S:-500}" \
        env COURSE_STRICT_CHECKS=1 "$PYTHON" bench/bench_lessons.py "${how[@]}" \
        ${DEVICE_CHECK_NOTEBOOKS:-} 2>&1 | grep -v hugepages | tee "$OUT/lessons.md" || status=1
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
    # bench/device_pytest.py keeps a plugin's failing report hook from ending the run, and
    # records the tests collected and each one that ran; a test module that cannot be imported is
    # an error, not the end of the run.
    record="$OUT/tests.record"
    : >"$record"
    # shellcheck disable=SC2086
    timed "$tests_s" env PYTHONPATH="$PWD/bench${PYTHONPATH:+:$PYTHONPATH}" \
        DEVICE_CHECK_TESTS_RECORD="$record" "$PYTHON" -m pytest -p no:cacheprovider \
        -p no:benchmark -p device_pytest --continue-on-collection-errors -rfE "${how[@]}" \
        -m "not browser" $tests >"$OUT/tests.log" 2>&1 || status=1
    # pytest's short summary and its last line (not the tests whose names say "failed")
    said="^(FAILED|ERROR) |^=+ .*(passed|failed|error)|^INTERNALERROR> [A-Za-z.]+: |^device_check: "
    grep -E "$said" "$OUT/tests.log" | tail -n 25
    # The tests collected against the tests run: a run cut short says so, whatever pytest said.
    collected=$(sed -n 's/^collected //p' "$record" | head -n 1)
    ran=$(grep -c '^ran ' "$record")
    outcomes=$(for outcome in passed failed skipped; do
        printf '%s %s, ' "$(grep -c "^ran $outcome " "$record")" "$outcome"
    done)
    if [ -n "$collected" ] && [ "$ran" -ge "$collected" ]; then
        echo "tests: all $collected collected ran: ${outcomes%, }"
    else
        echo "tests: CUT: $ran of ${collected:-an unknown number of} tests collected ran" \
            "(${outcomes%, })"
        status=1
    fi
fi
# The bench last: where a run's time runs short, it is the bench that is cut, not the tests.
if [[ $steps == *,sgd,* ]]; then
    step "the SGD bench ($backend)"
    timed "${DEVICE_CHECK_SGD_S:-200}" "$PYTHON" bench/bench_sgd.py --skip-train \
        --budget 0.2 --min-calls 5 --trees "${DEVICE_CHECK_TREES:-abc}" \
        --json "$OUT/bench_sgd.json" 2>&1 | grep -v hugepages || status=1
fi
finish
