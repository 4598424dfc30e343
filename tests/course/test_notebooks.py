"""What nbval cannot see: every committed notebook was executed top to bottom, its outputs carry
no machine paths, every picture has a text alternative, and no notebook or library file uses JAX
APIs that were removed."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from site_support import says_what_it_shows

from course_tools.authoring.site import image_alt

ROOT = Path(__file__).resolve().parents[2]
EXECUTED = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted(
    (ROOT / "solutions").glob("*.ipynb")
)
ALL_NOTEBOOKS = EXECUTED + sorted((ROOT / "exercises").glob("*.ipynb"))
LESSON_STEMS = [
    "00_start_here",
    "01_what_is_a_pytree",
    "02_mapping_and_sgd",
    "03_registering_classes",
    "04_static_fields",
    "05_recompilation",
    "06_optimizer_state",
    "07_devices_and_abstract_trees",
    "08_trees_through_transformations",
    "09_working_by_key_path",
]
REMOVED_API = re.compile(
    r"jax\.tree_(map|leaves|flatten|unflatten|structure|multimap)\b|\btree_multi" r"map\b"
)
MACHINE_PATH = re.compile(r"(/root|/tmp|/home)/")


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in paths]


def _code_cells(path: Path) -> list[nbformat.NotebookNode]:
    notebook = nbformat.read(path, as_version=4)
    return [cell for cell in notebook.cells if cell.cell_type == "code" and cell.source.strip()]


def test_every_lesson_is_there() -> None:
    assert sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb")) == LESSON_STEMS


@pytest.mark.parametrize("path", EXECUTED, ids=_ids(EXECUTED))
def test_notebook_was_executed_top_to_bottom(path: Path) -> None:
    counts = [cell.execution_count for cell in _code_cells(path)]
    assert None not in counts, (
        f"{path.name}: code cells without an execution count; run `make notebooks`"
    )
    assert counts == list(range(1, len(counts) + 1)), (
        f"{path.name}: cells were not run once, in order"
    )


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=_ids(ALL_NOTEBOOKS))
def test_notebook_is_valid_and_has_the_course_kernel(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata.kernelspec.name == "python3"


@pytest.mark.parametrize("path", EXECUTED, ids=_ids(EXECUTED))
def test_outputs_carry_no_machine_paths(path: Path) -> None:
    for index, cell in enumerate(_code_cells(path)):
        text = json.dumps(cell.get("outputs", []))
        assert not MACHINE_PATH.search(text), (
            f"{path.name} cell {index}: output shows a machine path"
        )


def _sources() -> list[tuple[str, str]]:
    found = [
        (str(p.relative_to(ROOT)), p.read_text()) for p in sorted(ROOT.glob("course_lib/**/*.py"))
    ]
    found += [(str(p.relative_to(ROOT)), p.read_text()) for p in sorted(ROOT.glob("bench/*.py"))]
    for path in ALL_NOTEBOOKS:
        for index, cell in enumerate(_code_cells(path)):
            found.append((f"{path.relative_to(ROOT)} cell {index}", cell.source))
    return found


def test_no_removed_jax_apis_in_code() -> None:
    # Markdown may name the old APIs on purpose (a lesson saying what replaced them); code may not.
    offenders = [where for where, text in _sources() if REMOVED_API.search(text)]
    assert not offenders, f"removed JAX APIs (use jax.tree.*) in: {offenders}"


def test_removed_api_pattern_catches_the_old_names() -> None:
    old = "jax." + "tree_"  # spelled in two parts so this file does not itself use the old names
    assert REMOVED_API.search(old + "map(f, x)") and REMOVED_API.search(
        "tree_" + "multimap(f, a, b)"
    )
    assert not REMOVED_API.search("jax.tree.map(f, x)") and not REMOVED_API.search(
        "jax.tree_util.keystr(p)"
    )


def _pictures(path: Path) -> list[tuple[int, str | None]]:
    """(cell index, its text alternative) for each code cell of ``path`` that shows a picture."""
    notebook = nbformat.read(path, as_version=4)
    return [
        (index, image_alt(cell))
        for index, cell in enumerate(notebook.cells)
        if any(
            mime.startswith("image/")
            for output in cell.get("outputs", [])
            for mime in output.get("data", {})
        )
    ]


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=_ids(ALL_NOTEBOOKS))
def test_every_picturesays_what_it_shows(path: Path) -> None:
    """WCAG 1.1.1: each picture's alt text (`course_tools.authoring.site.image_alt`: its cell's
    ``mystnb.image.alt``, or the ``alt`` `course_lib.viz` writes into the output) says what it
    shows; the site puts it on the ``<img>``."""
    missing = [index for index, alt in _pictures(path) if not says_what_it_shows(alt)]
    assert not missing, (
        f"{path.name}: cells {missing} show a picture without a text alternative: give the cell "
        "`mystnb: {image: {alt: ...}}` metadata that says what the picture shows"
    )


def test_the_alt_check_refuses_what_says_nothing() -> None:
    assert not says_what_it_shows(None)
    assert not says_what_it_shows("<Figure size 400x250 with 1 Axes>")
    assert not says_what_it_shows("../_images/3f2a9c.png")
    assert not says_what_it_shows("a plot")
    assert says_what_it_shows("Line plot of y = x² for x from -2 to 2: a parabola.")


def test_lesson_07_runs_when_an_accelerator_is_jaxs_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Lesson 07 keeps its arrays on the CPU's devices; with a GPU or TPU as JAX's default backend,
    jax.devices() and jax.local_devices() name the accelerator's instead, and an Orbax restore
    without a target, which looks the saved device up there, stopped cell 142 on a TPU with
    "Topology mismatch". Here the CPU's first device is hidden from both, as an accelerator's
    default would hide it, and every cell must still run."""
    import jax

    from course_tools.authoring.execute import execute_in_process

    devices, local_devices = jax.devices, jax.local_devices
    monkeypatch.setattr(
        jax, "devices", lambda backend=None: devices(backend) if backend else devices()[1:]
    )
    monkeypatch.setattr(
        jax,
        "local_devices",
        lambda process_index=None, backend=None, host_id=None: (
            local_devices(process_index, backend) if backend else local_devices(process_index)[1:]
        ),
    )
    monkeypatch.setenv("MPLBACKEND", "Agg")
    for name in ("XLA_FLAGS", "JAX_PLATFORMS"):  # the notebook's setup cell sets both
        monkeypatch.setenv(name, os.environ.get(name, ""))  # and the test ends as it began
    with jax.numpy_rank_promotion("allow"):  # a learner's kernel, not these tests' strict JAX
        execute_in_process(ROOT / "notebooks" / "07_devices_and_abstract_trees.ipynb")


def test_lesson_07_keeps_jax_on_the_cpu_from_its_setup_cell() -> None:
    """Lesson 07's devices are simulated CPU devices: run before JAX is imported, as in a fresh
    kernel, its hidden cell after the course's setup cell leaves JAX with the CPU backend alone (no
    GPU or TPU started, a TPU chip left free) and 8 CPU devices, whatever the environment asked
    for before."""
    cells = nbformat.read(ROOT / "notebooks" / "07_devices_and_abstract_trees.ipynb", 4).cells
    code = [cell for cell in cells if cell.cell_type == "code"]
    assert code[0].metadata.get("course", {}).get("setup"), "the course's setup cell comes first"
    first = code[1]
    assert first.metadata.get("jupyter", {}).get("source_hidden"), "then lesson 07's hidden cell"
    setup = "\n".join(
        line for line in first.source.splitlines() if not line.startswith(("%", "%%"))
    )
    probe = setup + "\nimport jax\nprint(jax.config.jax_platforms, jax.device_count())"
    env = {"PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cuda,cpu", "XLA_FLAGS": ""}
    said = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env
    )
    assert said.stdout.split() == ["cpu", "8"], said.stderr
