"""The committed generated parts of the course are current.

exercises/ must be exactly what `make exercises` writes from solutions/, and every numbered
notebook must end with the navigation cell `make navigation` writes. Both pass trivially while
the folders are empty; after that they fail as soon as someone edits a solution or a lesson's
title without regenerating.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from course_tools.authoring import exercises, navigation

ROOT = Path(__file__).resolve().parents[2]


def test_exercises_match_solutions(capsys: pytest.CaptureFixture[str]) -> None:
    status = exercises.main(["--check", "--root", str(ROOT)])
    captured = capsys.readouterr()
    assert status == 0, captured.out + captured.err


def test_navigation_cells_are_current(capsys: pytest.CaptureFixture[str]) -> None:
    status = navigation.main(["--check", "--root", str(ROOT)])
    captured = capsys.readouterr()
    assert status == 0, captured.out + captured.err
