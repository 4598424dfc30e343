"""What the course's wheel and sdist carry besides the code: the license, and in the sdist the
citation. One `uv build` (offline: the build backend comes from uv's cache) makes both."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "uv", "build", "--quiet", "--offline", "--out-dir", str(out), "."],
        cwd=ROOT,
        check=True,
        timeout=300,
    )
    return out


def _license() -> str:
    with (ROOT / "pyproject.toml").open("rb") as file:
        project = tomllib.load(file)["project"]
    assert project["license-files"] == ["LICENSE"]
    license: str = project["license"]
    return license


def test_the_license_is_apache_2_in_every_place_that_names_it() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License\n                           Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert _license() == "Apache-2.0"
    citation = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert re.search(r"^license: Apache-2\.0$", citation, re.MULTILINE)
    assert re.search(r"^cff-version: 1\.2\.0$", citation, re.MULTILINE)
    assert "[Apache License 2.0](LICENSE)" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_wheel_carries_the_license(built: Path) -> None:
    (wheel,) = built.glob("pytree_course-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        fields = archive.read(metadata).decode("utf-8").splitlines()
        (license,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert archive.read(license) == (ROOT / "LICENSE").read_bytes()
    assert f"License-Expression: {_license()}" in fields
    assert "License-File: LICENSE" in fields


def test_the_sdist_carries_the_license_and_the_citation(built: Path) -> None:
    (sdist,) = built.glob("pytree_course-*.tar.gz")
    with tarfile.open(sdist) as archive:
        top = archive.getnames()[0].split("/")[0]
        for name in ("LICENSE", "CITATION.cff"):
            member = archive.extractfile(f"{top}/{name}")
            assert member is not None, name
            assert member.read() == (ROOT / name).read_bytes(), name
