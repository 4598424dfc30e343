"""Which middle JAX release CI runs beside the floor (course_tools/authoring/compat.py): the same
for a commit whatever the clone, and each of them for some commits."""

import subprocess
from pathlib import Path

from course_tools.authoring.compat import MIDDLE_RELEASES, middle_release


def _git(folder: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args]
    return subprocess.run(command, cwd=folder, check=True, capture_output=True, text=True).stdout


def test_each_middle_release_has_its_commits_and_a_commit_keeps_its_release(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    chosen: dict[str, str] = {}
    for i in range(40):
        _git(repo, "commit", "-q", "--allow-empty", "-m", f"commit {i}")
        chosen[_git(repo, "rev-parse", "HEAD").strip()] = middle_release(repo)[0]
        if set(chosen.values()) == set(MIDDLE_RELEASES):
            break
    assert set(chosen.values()) == set(MIDDLE_RELEASES)
    # A shallow clone of the last commit, which cannot count its history, chooses the same.
    head = _git(repo, "rev-parse", "HEAD").strip()
    shallow = tmp_path / "shallow"
    _git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow))
    assert middle_release(shallow)[0] == chosen[head]
