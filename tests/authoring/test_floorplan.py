"""The floor plan in CONTRIBUTING.md lists every package, each by its own docstring."""

import shutil
from pathlib import Path

from course_tools.authoring.floorplan import PACKAGES, floorplan_table

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_of_the_project_is_on_the_plan() -> None:
    found = {
        str(init.parent.relative_to(ROOT))
        for top in ("course_lib", "course_tools")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert found == set(PACKAGES)


def test_a_rewritten_docstring_shows_in_the_plan(tmp_path: Path) -> None:
    for package in PACKAGES:
        (tmp_path / package).mkdir(parents=True)
        shutil.copy(ROOT / package / "__init__.py", tmp_path / package / "__init__.py")
    wing = tmp_path / "course_tools" / "grade" / "book" / "__init__.py"
    wing.write_text('"""The ledger | of grades, written once.\n\nMore."""\n')
    rows = floorplan_table(tmp_path).splitlines()
    assert "| `course_tools/grade/book/` | The ledger / of grades, written once. |" in rows
    assert len(rows) == 2 + len(PACKAGES)
