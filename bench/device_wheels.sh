#!/usr/bin/env bash
# Fetch, here, the wheels that bench/device_check.sh installs on an accelerator host that has its
# own JAX and no package index, at the versions of the course's uv.lock, for x86-64 Linux. They go
# to .whl/ (git-ignored), which goes to the host with the checkout.
#
#   bash bench/device_wheels.sh            # a GPU machine: CPython 3.12 wheels of Jupyter's packages
#   bash bench/device_wheels.sh tpu        # a TPU machine: CPython 3.11 wheels of all the course needs
#
# The GPU image has JAX, pytest, pytest-xdist, hypothesis, matplotlib, optax, Orbax, rich, psutil
# and their kin, but no Jupyter: its wheels are ipykernel, nbclient, nbformat and ipywidgets with
# every package they need that the image lacks. The TPU host (Python 3.11, no inet socket) has JAX,
# jaxlib, libtpu, NumPy, SciPy, pytest, pytest-benchmark and hypothesis, and nothing else the course
# uses: its wheels are the course's own dependencies that the lessons and in-process tests import
# (no Jupyter kernel can start there), IPython for the lessons, and all they need beside those.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
MACHINE=${1:-gpu}
case "$MACHINE" in
    gpu) python_version=3.12 ;;
    tpu) python_version=3.11 ;;
    *) echo "device_wheels: the machine is gpu or tpu, not '$MACHINE'" >&2; exit 2 ;;
esac
mapfile -t pins < <(MACHINE=$MACHINE PYTHON_VERSION=$python_version "$PYTHON" - <<'PY'
import os
import tomllib
from importlib.metadata import distributions
from packaging.markers import Marker

ROOTS = {
    "gpu": ["ipykernel", "nbclient", "nbformat", "ipywidgets", "jupyter-client"],
    # No kernel starts there (no inet socket): the lessons run in an IPython shell instead.
    "tpu": [
        "ipython", "nbformat", "ipywidgets", "matplotlib", "optax", "orbax-checkpoint", "rich",
        "psutil", "traitlets",
    ],
}
# Never fetched: what each host already has (the TPU's JAX and test runner stay the machine's), and
# on the TPU, to keep the wheels small, what no import there needs.
NOT_FETCHED = {
    "gpu": {
        "attrs", "certifi", "charset-normalizer", "idna", "jinja2", "markupsafe", "numpy",
        "packaging", "pillow", "psutil", "pygments", "python-dateutil", "pyyaml", "requests",
        "six", "typing-extensions", "urllib3", "setuptools", "rich", "markdown-it-py", "mdurl",
    },
    "tpu": {
        "jax", "jaxlib", "libtpu", "numpy", "scipy", "ml-dtypes", "opt-einsum", "pytest",
        "pluggy", "iniconfig", "hypothesis", "sortedcontainers", "setuptools",
        # Orbax imports uvloop only where it is installed; the widgets' two are JupyterLab's and
        # Notebook's front ends.
        "uvloop", "widgetsnbextension", "jupyterlab-widgets",
    },
}
installed = {d.metadata["Name"].lower().replace("_", "-"): d.version for d in distributions()}
machine, version = os.environ["MACHINE"], os.environ["PYTHON_VERSION"]
environment = {
    "sys_platform": "linux", "platform_system": "Linux", "implementation_name": "cpython",
    "platform_python_implementation": "CPython", "python_version": version,
    "python_full_version": f"{version}.3", "platform_machine": "x86_64", "os_name": "posix",
}
# A package the lock holds at several versions (one per range of Python) is taken at the version
# installed here, the one the lock chose for the course's Python 3.11 (contourpy, for the TPU).
packages = {}
for entry in tomllib.load(open("uv.lock", "rb"))["package"]:
    here = installed.get(entry["name"])
    if entry["name"] not in packages or entry["version"] == here:
        packages[entry["name"]] = entry
wanted, todo = set(), list(ROOTS[machine])
while todo:
    name = todo.pop()
    if name in wanted or name in NOT_FETCHED[machine]:
        continue
    wanted.add(name)
    for dep in packages[name].get("dependencies", []):
        marker = dep.get("marker")
        if marker is None or Marker(marker).evaluate({**environment, "extra": ""}):
            todo.append(dep["name"])
for name in sorted(wanted):
    print(f"{name}=={packages[name]['version']}")
PY
)
platforms=()
for n in 17 27 28 31 34 35; do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
rm -rf .whl && mkdir -p .whl
"$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --python-version "$python_version" --implementation cp --platform manylinux2014_x86_64 \
    --platform manylinux1_x86_64 "${platforms[@]}" -d .whl "${pins[@]}"
echo "device_wheels ($MACHINE): ${#pins[@]} packages, $(ls .whl | wc -l) wheels, $(du -sh .whl | cut -f1) in .whl/"
