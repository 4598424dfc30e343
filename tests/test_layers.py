"""The floor plan, read from the code's own imports: the two packages, the layers of course_lib,
the wings of the grader, no import circle, no private name taken across modules.

The import graph is built from every ``import`` statement in course_lib and course_tools, those
inside functions included, so an import moved into a function to dodge a circle is still seen.
"""

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("course_lib", "course_tools")
HEAVY = {"matplotlib", "ipywidgets", "nbformat", "nbclient"}
# What course_tools may take from course_lib besides its public packages: the helpers whose one
# home is the lower package (atomic file writes, which save_tree uses too; shortening a text for a
# message, which the checks use too; how a lesson cell declares the error it shows, which the
# lessons' setup cell registers and the notebook runner checks).
SHARED_HELPERS = {"course_lib._atomic", "course_lib._leaves", "course_lib._shown_errors"}
PUBLIC_COURSE_LIB = {"course_lib", "course_lib.checks", "course_lib.viz"}
# The grader's wings, each importing only the wings listed before it (or none: sandbox and intake
# know nothing of each other), then the command line on top. The base modules of course_tools come
# first of all.
GRADE = "course_tools.grade"
WING_ALLOWED = {
    "intake": set(),
    "sandbox": set(),
    "book": {"intake"},
    "grading": {"intake", "sandbox", "book"},
    "top": {"intake", "sandbox", "book", "grading"},
}
# The launcher runs as a script before `site` and before any confinement: standard library only,
# and no import of the package around it.
LAUNCHER = "course_tools/grade/sandbox/_launcher.py"


@dataclass(frozen=True)
class Import:
    importer: str  # dotted module name
    module: str  # the module imported from, as resolved
    name: str | None  # the name taken from it (None for `import module`)
    line: int
    inside_function: bool


def module_names() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = module_names()


def _imports(name: str, path: Path) -> Iterator[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    nested = {
        id(node)
        for fn in ast.walk(tree)
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        for node in ast.walk(fn)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(name, alias.name, None, node.lineno, id(node) in nested)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                yield Import(name, module, alias.name, node.lineno, id(node) in nested)


IMPORTS = [i for name, path in MODULES.items() for i in _imports(name, path)]


def target(imported: Import) -> str | None:
    """The project module an import reaches (a submodule when the name is one), if any."""
    if imported.name is not None and f"{imported.module}.{imported.name}" in MODULES:
        return f"{imported.module}.{imported.name}"
    module = imported.module
    while module and module not in MODULES:
        module = module.rpartition(".")[0]
    return module or None


def edges() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for imported in IMPORTS:
        reached = target(imported)
        # A package's __init__ is imported on the way to any of its modules: not an arrow back up.
        if (
            reached
            and reached != imported.importer
            and not imported.importer.startswith(reached + ".")
        ):
            graph[imported.importer].add(reached)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def wing(module: str) -> str | None:
    """The grader wing of a module of course_tools.grade; ``top`` for the command line."""
    if not module.startswith(GRADE):
        return None
    rest = module[len(GRADE) + 1 :].split(".")[0]
    return rest if rest in WING_ALLOWED and rest != "top" else "top"


def test_no_import_circle_in_the_project() -> None:
    assert circles(edges()) == []


def test_the_circle_check_sees_a_circle() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_course_lib_never_imports_course_tools() -> None:
    wrong = [
        i for i in IMPORTS if i.importer.startswith("course_lib") and "course_tools" in i.module
    ]
    assert wrong == []


def test_course_tools_uses_course_lib_through_its_public_names() -> None:
    wrong = [
        f"{i.importer}:{i.line} {i.module}"
        for i in IMPORTS
        if i.importer.startswith("course_tools")
        and (i.module == "course_lib" or i.module.startswith("course_lib."))
        and i.module not in PUBLIC_COURSE_LIB | SHARED_HELPERS
    ]
    assert wrong == []


def test_course_lib_layers_point_down() -> None:
    """The core imports neither pictures nor checks; pictures do not import checks."""
    wrong = []
    for i in IMPORTS:
        reached = target(i)
        if not (reached and i.importer.startswith("course_lib")):
            continue
        core = not i.importer.startswith(("course_lib.viz", "course_lib.checks"))
        if (
            core
            and i.importer != "course_lib"
            and reached.startswith(("course_lib.viz", "course_lib.checks"))
        ):
            wrong.append(f"{i.importer} -> {reached}")
        if i.importer.startswith("course_lib.viz") and reached.startswith("course_lib.checks"):
            wrong.append(f"{i.importer} -> {reached}")
    assert wrong == []


def test_grader_wings_import_one_way() -> None:
    wrong = []
    for i in IMPORTS:
        reached = target(i)
        if not reached or not reached.startswith("course_tools"):
            continue
        here, there = wing(i.importer), wing(reached)
        if i.importer.startswith("course_tools.authoring") and there is not None:
            wrong.append(f"authoring imports the grader: {i.importer} -> {reached}")
        if here is not None and reached.startswith("course_tools.authoring"):
            wrong.append(f"the grader imports authoring: {i.importer} -> {reached}")
        if here is None or there is None or here == there:
            continue
        if there not in WING_ALLOWED[here]:
            wrong.append(f"{here} -> {there}: {i.importer}:{i.line} imports {reached}")
    assert wrong == []


ROOM = "course_tools.room"


def test_the_room_stands_apart_from_the_grader_and_authoring() -> None:
    """The room (``course-room``) takes the exercises from ``course_lib.checks`` and nothing from
    the other tools; no other tool imports it."""
    wrong = []
    for i in IMPORTS:
        reached = target(i) or ""
        inside = i.importer.startswith(ROOM)
        if inside and reached.startswith("course_tools") and not reached.startswith(ROOM):
            wrong.append(f"the room imports {reached}: {i.importer}:{i.line}")
        if not inside and reached.startswith(ROOM):
            wrong.append(f"{i.importer}:{i.line} imports the room")
    assert wrong == []


def test_the_learners_side_of_the_room_sends_with_the_standard_library_only() -> None:
    sending = [i for i in IMPORTS if i.importer == "course_lib.checks._room"]
    assert sending, "course_lib.checks._room was not found"
    outside = [i.module for i in sending if i.module.split(".")[0] not in sys.stdlib_module_names]
    assert outside == []


def test_base_modules_of_course_tools_import_no_tool() -> None:
    bases = {"course_tools._notebook_files", "course_tools._course"}
    wrong = [
        f"{i.importer} -> {target(i)}"
        for i in IMPORTS
        if i.importer in bases and (target(i) or "").startswith("course_tools")
    ]
    assert wrong == []


def test_no_private_name_is_imported_across_modules() -> None:
    """``from module import _name`` is taken only where ``_name`` is itself a module (equinox keeps
    its modules private and imports them by name); never a private function, class or constant."""
    wrong = [
        f"{i.importer}:{i.line} takes {i.name} from {i.module}"
        for i in IMPORTS
        if i.name
        and i.name.startswith("_")
        and not i.name.startswith("__")
        and f"{i.module}.{i.name}" not in MODULES
        and (i.module.startswith(PACKAGES))
    ]
    assert wrong == []


def test_the_launcher_imports_the_standard_library_only() -> None:
    tree = ast.parse((ROOT / LAUNCHER).read_text(encoding="utf-8"))
    names = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and not node.level
    }
    assert names - {"__future__"} <= sys.stdlib_module_names
    assert not any(isinstance(n, ast.ImportFrom) and n.level for n in ast.walk(tree))


# One fresh interpreter: what is loaded after `import course_lib` (and a core call), then after
# importing nbformat too, which shows that the check would notice a heavy import.
PROBE = """
import json, sys
def top_level():
    return sorted({name.split(".")[0] for name in sys.modules})
import course_lib
course_lib.tree_summary({"w": [1.0]})
after_core = top_level()
import nbformat
print(json.dumps([after_core, top_level()]))
"""


def test_import_course_lib_loads_no_heavy_layers_and_no_tools() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=120
    )
    after_core, after_nbformat = (
        set(names) for names in json.loads(result.stdout.splitlines()[-1])
    )
    assert {"course_lib", "jax", "numpy"} <= after_core
    assert not after_core & HEAVY, f"import course_lib pulled in {sorted(after_core & HEAVY)}"
    assert "course_tools" not in after_core
    assert "nbformat" in after_nbformat


def test_only_the_command_line_prints_errors_and_exits() -> None:
    """The wings return values or raise; ``_cli.py`` prints ``course-grade: error`` and picks the
    exit status. The launcher is a script of its own, in the kernel's process: it writes to the
    kernel's stderr and exits with its child's status."""
    wrong = []
    for name, path in MODULES.items():
        if not name.startswith(GRADE) or path.name in ("_cli.py", "__main__.py", "_launcher.py"):
            continue
        source = path.read_text(encoding="utf-8")
        if "course-grade: " in source:
            wrong.append(f"{name} writes a course-grade message")
        if "sys.exit(" in source:
            wrong.append(f"{name} exits")
    assert wrong == []
