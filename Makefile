# The course's two commands are `make lab` and `make test`; everything else is for authors.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The learner's environment (`make lab`), and the whole course's (every other target).
LAB_STAMP := $(VENV)/.installed-lab
STAMP := $(VENV)/.installed
NOTEBOOKS := $(sort $(wildcard notebooks/*.ipynb))
SOLUTIONS := $(sort $(wildcard solutions/*.ipynb))
# One place that says how every notebook is checked.
NBVAL := --nbval --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout 120

.PHONY: lab test no-tests lint lock compat notebooks exercises navigation site bench clean student-release

# Two environments from the one uv.lock, in one venv. `make lab` installs the learner's: the course
# and what its notebooks use (pyproject.toml's dependencies, Jupyter among them), no extra. Every
# other target adds the test, site and room extras for authors and CI. Each stamp is remade when
# older than pyproject.toml or uv.lock, bringing the venv to the lock in place (`make clean` starts
# over): `uv sync --locked` refuses a lock that no longer matches pyproject.toml (`make lock`
# updates it), and --inexact removes nothing, so `make lab` after `make test` keeps the extras,
# and uv itself stays in the venv. uv is fetched into the venv first, at a fixed version, because
# it installs in seconds; --compile-bytecode matters where PYTHONDONTWRITEBYTECODE is set (import
# jax drops from ~1.7 s to ~0.5 s). For the same reason course_lib and course_tools are compiled
# here and before `make test`: the grader's kernels import course_lib.checks afresh for every
# exercise they probe, and cannot write bytecode themselves.
UV_VERSION := 0.13.9
UV := $(BIN)/python -m uv
SYNC := $(UV) sync --quiet --locked --inexact --compile-bytecode --python $(BIN)/python
AUTHOR_EXTRAS := --extra test --extra site --extra room
COMPILE_OURS := $(BIN)/python -m compileall -q course_lib course_tools
$(LAB_STAMP): pyproject.toml uv.lock
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "pytree-course needs Python 3.11 or newer; found " + sys.version.split()[0])'
	@echo ">> installing the course and Jupyter into $(VENV)/ from uv.lock"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); exit 1; }
	@$(UV) --version 2>/dev/null | grep -qx 'uv $(UV_VERSION)' || \
	  $(BIN)/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	$(SYNC)
	$(COMPILE_OURS)
	@touch $(LAB_STAMP)
	@echo ">> the learner's environment is ready"

$(STAMP): $(LAB_STAMP)
	@echo ">> adding the test, site and room extras to $(VENV)/"
	$(SYNC) $(AUTHOR_EXTRAS)
	@touch $(STAMP)
	@echo ">> environment ready"

# Resolve uv.lock again after a change to pyproject.toml's dependencies (needs the package index),
# and write Binder's configuration (binder/) from it.
lock:
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(UV) --version >/dev/null 2>&1 || $(BIN)/python -m pip install --quiet uv==$(UV_VERSION)
	$(UV) lock
	@$(MAKE) --no-print-directory $(STAMP)
	$(BIN)/python -m course_tools.authoring.binder

# LAB_ARGS lets tests start this very server on a chosen port and token without a browser.
LAB_ARGS ?=
# Jupyter refuses to run as root unless told; containers and CI machines often are root.
AS_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)
lab: $(LAB_STAMP)
	@echo ">> opening the course in JupyterLab (Ctrl-C here stops it)"
	$(BIN)/jupyter lab --ServerApp.root_dir="$(CURDIR)" $(AS_ROOT) $(LAB_ARGS) notebooks/00_start_here.ipynb

# The unit stage is one pytest run in two processes, each taking a whole file at a time (a file's
# fixtures are built once) in the order given here (--no-loadscope-reorder: xdist would otherwise
# sort the files by their number of tests). Tests that start kernels, graders, servers or Dask
# clusters come first, the longest first: they spend part of their time waiting on kernels and
# messages, and the tests that only run JAX in their own process (self-checks, the core, viz,
# doctests) fill those waits and even out the finish. The test processes share one JAX compilation
# cache (conftest.py) and, where JAX has only its CPU backend, compile without XLA's costly
# optimisation (tests/fast_compiles.py); what they start compiles as a learner's kernel does.
# Tests mirror the packages: tests/core, viz and checks (course_lib), tests/grade/{intake,sandbox,
# grading,book} and tests/authoring (course_tools), tests/course (the notebooks and files as a whole).
ALL_TESTS := $(sort $(shell find tests -name 'test_*.py' -not -path 'tests/browser/*' 2>/dev/null))
# The kernel tests' files, the longest first (a long file last would run alone).
KERNEL_TESTS_LONGEST_FIRST := tests/grade/grading/test_grade_cluster.py tests/grade/test_grade.py \
  tests/grade/test_grade_class.py tests/grade/test_gradescope.py \
  tests/grade/grading/test_grade_judging.py tests/grade/sandbox/test_sandbox.py \
  tests/grade/test_canary.py tests/grade/sandbox/test_forked.py tests/authoring/test_site.py \
  tests/course/test_lone_notebook.py
KERNEL_TESTS := $(KERNEL_TESTS_LONGEST_FIRST) $(filter-out $(KERNEL_TESTS_LONGEST_FIRST), \
  $(sort $(wildcard tests/grade/test_*.py tests/grade/sandbox/test_*.py) \
  tests/authoring/test_execute.py tests/authoring/test_exercises_generator.py \
  tests/authoring/test_navigation.py tests/authoring/test_authoring_files.py \
  tests/authoring/test_student_release.py \
  tests/room/test_room_server.py \
  tests/course/test_lab.py tests/course/test_code_health.py tests/course/test_distribution.py))
IN_PROCESS_TESTS := $(filter-out $(KERNEL_TESTS),$(ALL_TESTS))

# One stage of `make test`, also on its own: ruff's lint rules (code and notebook cells) and
# its formatter, then mypy on course_lib, course_tools and tests; all three are configured in pyproject.toml.
LINT := $(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy
lint: $(STAMP)
	@echo ">> 1/5 lint, format and types"
	$(LINT)

# What CI runs, all at once: lint, format and type checks (one core for about 20 s, beside the
# others rather than before them: two cores were idle for one while it ran alone); the unit and
# property tests, doctests, the notebook checks (executed, in sync, no removed APIs),
# the generator and the grader; beside them every lesson and solution under strict nbval, with
# DeprecationWarnings as errors in their kernels (the next JAX release must not be the one that
# tells us), started at once rather than after the unit tests, so that its kernels fill the cores
# the unit tests leave idle while they wait on kernels and graders; the course in a real browser,
# two Chromiums sharing the tests, those that need JupyterLab all in one of them, with one server
# (skipped, with a message, when Chromium is missing); and the course on the oldest JAX it supports
# (its lessons, unit tests and doctests) and on one middle release (0.8.3 or 0.9.2 as the commit's
# hash says, see course_tools/authoring/compat.py; its lessons). The solutions run on the lock's
# JAX (nbval and the grader's tests); on the floor, course_lib's tests run every exercise's
# reference and right answers (and the wrong answers that a release may judge differently: see
# COMPAT_FLOOR_PYTEST).
# The processor is busy throughout, so the stages' own times overlap. The unit tests are the
# longest stage and can use two cores at most, so the two stages that only run the course on
# other JAX releases (4a, 4b) run at a lower priority (FILLER): they take the cycles the others
# leave, and run on both cores once those finish, instead of sharing the cores from the start and
# leaving the unit tests to finish alone (before: 12:56 from a fresh clone, the last 150 s on the
# unit tests alone). nbval keeps the normal priority: its lessons time things and print how they
# compare, and a starved kernel is a noisier clock. The background stages' logs
# are in build/ and shown at the end, then each stage's wall time and processor seconds
# (build/stage-times.txt, written by .ci/stage, which reaps and counts the processes a stage's
# command leaves behind, such as Chromium's renderers), and the processor seconds of the whole
# run, counted by the machine (.ci/cpu-total: every process, make's own included).
STAGES := build/stage-times.txt
FILLER := nice -n 5
# A student copy (make student-release) has no tests/: they grade the solutions it leaves out.
test: $(if $(wildcard tests),$(STAMP),no-tests)
	@rm -f $(STAGES)
	@.ci/cpu-total start
	@$(COMPILE_OURS)
	@mkdir -p build
	@echo ">> 2/5 unit tests, doctests, exercises and grader; meanwhile 1/5 lint, format and types,"
	@echo "   3/5 notebooks under strict nbval, 4/5 the course on the oldest and a middle JAX, 5/5 in"
	@echo "   JupyterLab and Chromium"
	@.ci/stage "1 lint, format and types" sh -c "$(LINT)" > build/lint.log 2>&1 & lint=$$!; \
	PYTHONWARNINGS=error::DeprecationWarning .ci/stage "3 notebooks under strict nbval" \
	  $(BIN)/python -m pytest -p no:cacheprovider $(NBVAL) -n 2 --dist loadfile $(NOTEBOOKS) \
	  $(SOLUTIONS) > build/nbval.log 2>&1 & nbval=$$!; \
	.ci/stage "4a the course on the oldest JAX" \
	  $(FILLER) $(COMPAT) --lessons-only $(COMPAT_FLOOR_PYTEST) > build/compat-floor.log 2>&1 & floor=$$!; \
	.ci/stage "4b the course on a middle JAX release" \
	  $(FILLER) $(COMPAT) --middle --lessons-only > build/compat-middle.log 2>&1 & middle=$$!; \
	.ci/stage "5 the course in JupyterLab and Chromium" \
	  $(BIN)/python -m pytest -p no:cacheprovider -n 2 --dist loadgroup -m browser tests/browser \
	  > build/browser.log 2>&1 & browser=$$!; \
	.ci/stage "2 unit tests, doctests, exercises and grader" \
	  $(BIN)/python -m pytest -p no:cacheprovider -n 2 --dist loadfile --no-loadscope-reorder \
	  -m "not browser" --durations=15 $(KERNEL_TESTS) \
	  --doctest-modules course_lib course_tools $(IN_PROCESS_TESTS); unit=$$?; \
	wait $$lint; lint=$$?; wait $$nbval; nbval=$$?; wait $$browser; browser=$$?; \
	wait $$floor; floor=$$?; wait $$middle; middle=$$?; \
	echo ">> 1/5 lint, format and types (build/lint.log)"; cat build/lint.log; \
	echo ">> 3/5 notebooks under strict nbval (build/nbval.log)"; cat build/nbval.log; \
	echo ">> 5/5 the course in JupyterLab and Chromium (build/browser.log)"; cat build/browser.log; \
	echo ">> 4/5 the course on the oldest JAX (build/compat-floor.log)"; cat build/compat-floor.log; \
	echo ">> 4/5 the course on a middle JAX release (build/compat-middle.log)"; \
	cat build/compat-middle.log; \
	echo ">> stage times"; cat $(STAGES); .ci/cpu-total; \
	[ $$lint -eq 0 ] && [ $$unit -eq 0 ] && [ $$nbval -eq 0 ] && [ $$browser -eq 0 ] && \
	  [ $$floor -eq 0 ] && [ $$middle -eq 0 ]

# Every lesson, every solution and course_lib's tests and doctests on other JAX releases (default:
# the course's floor, course_lib.JAX_FLOOR), each in build/compat/jax-VERSION/: uv.lock with only
# jax and jaxlib replaced, reused while the lock is unchanged. Outputs are not compared; cells must
# not raise unless tagged, and every self-check must pass. More releases: make compat
# COMPAT_JAX="0.7.1 0.9.0"; the middle release whose turn it is: COMPAT_FLAGS=--middle.
# course_tools (grader, authoring), the room's client and the committed files are tested on the
# course's own lock only: that is the only JAX they run on.
COMPAT_JAX ?=
COMPAT_FLAGS ?=
COMPAT_TESTS := $(filter-out tests/checks/test_room_client.py, \
  $(filter tests/core/% tests/viz/% tests/checks/%, $(IN_PROCESS_TESTS)))
COMPAT := $(BIN)/python -m course_tools.authoring.compat
COMPAT_PYTEST := -- -n 2 --dist loadfile -m "not browser" --doctest-modules course_lib $(COMPAT_TESTS)
# CI's floor leaves out the tests that swap JAX's wording for made-up text (tests/checks/
# jax_wording.py): they show that a hint does not read JAX's words, which no release changes, and
# the probes behind those hints run on the floor all the same. Every exercise's reference and right
# answers run there, and the tables of wrong answers of the lessons whose checks lean on what a
# release changes: 03 (jacobian's vmap hands unflatten object() placeholders before JAX 0.8), 04
# (jax.tree.static from 0.9.1), 05 (compile counts, cache-miss explanations), 07 (shardings,
# Orbax) and 08 (cond's branches, inner jaxprs); the floor has found problems in 04, 05 and 08.
# The wrong answers of 01, 02, 06 and 09 (102 tests: tree arithmetic, key paths and
# optax's updates, optax being the lock's on every release), with the test that judges the wrong
# answer linked to each mistake their checks name, run on the lock's JAX only, and so do
# tests that have found nothing on the floor: tests/checks/test_judging.py (partial credit and
# trivial answers: the same probes as the right and wrong answers, judged by NumPy; about 65
# processor-seconds there) and tests/viz/ but its sharding pictures (the drawings and widgets, about
# 35; lessons 01 and 02 use both on the floor, where every cell must run).
FLOOR_LOCK_ONLY := tests/checks/test_judging.py $(filter-out tests/viz/test_viz_sharding.py, \
  $(filter tests/viz/%, $(COMPAT_TESTS)))
FLOOR_SAME_WRONG_ANSWERS := (lesson01 or lesson02 or lesson06 or lesson09) and \
  (test_check_incorrect_gives_the_targeted_hint or test_each_mistake_named_is_a_tested_wrong_answer)
COMPAT_FLOOR_PYTEST := $(filter-out $(FLOOR_LOCK_ONLY),$(COMPAT_PYTEST)) \
  -k "not test_hint_survives_jax_wording and not ($(FLOOR_SAME_WRONG_ANSWERS))"
# CI's middle release runs every lesson; the unit tests and doctests run on the floor and the lock
# (make compat COMPAT_FLAGS=--middle runs them, and the solutions, on the middle release too).
compat: $(STAMP)
	$(COMPAT) $(foreach v,$(COMPAT_JAX),--jax $(v)) $(COMPAT_FLAGS) $(COMPAT_PYTEST)

# Re-execute every lesson and solution in place, one kernel per notebook, with a cell timeout,
# printing each notebook's time. Then regenerate exercises/: they copy the solutions' metadata.
notebooks: $(STAMP)
	$(BIN)/python -m course_tools.authoring.execute $(NOTEBOOKS) $(SOLUTIONS)
	$(BIN)/python -m course_tools.authoring.exercises

# Write exercises/NN_stem.ipynb from solutions/NN_stem.ipynb: answers between ### BEGIN SOLUTION
# and ### END SOLUTION become `raise NotImplementedError(...)`, outputs go, a banner comes first.
exercises: $(STAMP)
	$(BIN)/python -m course_tools.authoring.exercises

# Rewrite what is generated from the lessons' titles (each first `# ` heading), outcome lines and
# pitfall headings: the navigation cell (previous · contents · next) at the end of every lesson,
# solution and exercise notebook, lesson 00's contents, README's lesson table, the pitfall index
# in docs/pitfalls.md and the facilitator's guide in docs/facilitator.md.
navigation: $(STAMP)
	$(BIN)/python -m course_tools.authoring.navigation

# The course as a static website in build/site/html/ (open index.html, or serve the folder): every
# lesson and exercise notebook with its committed outputs, nothing executed, Sphinx warnings as
# errors, internal links checked. The first run fetches require.js, the widget manager and MathJax
# with npm into build/site-vendor/, so that the pages load nothing from outside the site.
site: $(STAMP)
	$(BIN)/python -m course_tools.authoring.site

# A student copy of the course in DEST (a new or empty folder): everything but solutions/, its
# Colab and Binder links opening REPOSITORY (a GitHub URL) when given.
DEST ?=
REPOSITORY ?=
student-release: $(LAB_STAMP)
	@test -n "$(DEST)" || { echo "give the folder to write: make student-release DEST=path [REPOSITORY=https://github.com/OWNER/REPO]" >&2; exit 2; }
	$(BIN)/python -m course_tools.authoring.student_release "$(DEST)" $(if $(REPOSITORY),--repository "$(REPOSITORY)")

bench: $(STAMP)
	$(BIN)/python bench/bench_sgd.py

no-tests:
	@echo "make test: this copy of the course has no tests/ (a student copy leaves them out, with" \
	  "the solutions they grade); run them in the course's own repository" >&2
	@exit 2

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
