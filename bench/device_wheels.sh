#!/usr/bin/env bash
# Fetch, here, the wheels that bench/device_check.sh installs on a GPU machine that has no package
# index. Its image has JAX, pytest, pytest-xdist, hypothesis, matplotlib, optax, Orbax, rich, psutil
# and their kin, but no Jupyter: this takes ipykernel, nbclient, nbformat and ipywidgets with every
# package they need that the image lacks, at the versions of the course's uv.lock, as CPython 3.12
# wheels for x86-64 Linux. They go to .whl/ (git-ignored), which the device call carries.
#
#   bash bench/device_wheels.sh            # then the device tool: run with carry [".whl"]
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
mapfile -t pins < <("$PYTHON" - <<'PY'
import tomllib
from packaging.markers import Marker

ROOTS = ["ipykernel", "nbclient", "nbformat", "ipywidgets", "jupyter-client"]
# What the GPU image already has (the device tool's KINDS.md lists it): never carried.
ON_THE_IMAGE = {
    "attrs", "certifi", "charset-normalizer", "idna", "jinja2", "markupsafe", "numpy",
    "packaging", "pillow", "psutil", "pygments", "python-dateutil", "pyyaml", "requests", "six",
    "typing-extensions", "urllib3", "setuptools", "rich", "markdown-it-py", "mdurl",
}
GPU = {"sys_platform": "linux", "platform_system": "Linux", "implementation_name": "cpython",
       "platform_python_implementation": "CPython", "python_version": "3.12",
       "python_full_version": "3.12.3", "platform_machine": "x86_64", "os_name": "posix"}
packages = {p["name"]: p for p in tomllib.load(open("uv.lock", "rb"))["package"]}
wanted, todo = set(), list(ROOTS)
while todo:
    name = todo.pop()
    if name in wanted or name in ON_THE_IMAGE:
        continue
    wanted.add(name)
    for dep in packages[name].get("dependencies", []):
        marker = dep.get("marker")
        if marker is None or Marker(marker).evaluate({**GPU, "extra": ""}):
            todo.append(dep["name"])
for name in sorted(wanted):
    print(f"{name}=={packages[name]['version']}")
PY
)
platforms=()
for n in 17 27 28 31 34 35; do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
rm -rf .whl && mkdir -p .whl
"$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --python-version 3.12 --implementation cp --platform manylinux2014_x86_64 \
    --platform manylinux1_x86_64 "${platforms[@]}" -d .whl "${pins[@]}"
echo "device_wheels: ${#pins[@]} packages, $(ls .whl | wc -l) wheels, $(du -sh .whl | cut -f1) in .whl/"
