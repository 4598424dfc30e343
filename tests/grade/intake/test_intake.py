"""Intake on its own: finding a class's notebooks, and reading each once."""

import hashlib
from pathlib import Path

import pytest

from course_tools.grade.intake import Submission, UsageError, find_submissions, read_once


def test_find_submissions_layouts(tmp_path: Path) -> None:
    for path in [
        "class/ann/01_x.ipynb",
        "class/ann/sub/02_y.ipynb",
        "class/bo/01_x.ipynb",
        "class/.hidden/01_x.ipynb",
        "class/bo/.ipynb_checkpoints/01_x-checkpoint.ipynb",
    ]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("{}")
    subs = find_submissions([str(tmp_path / "class")])
    assert [(s.student, s.notebook) for s in subs] == [
        ("ann", "01_x.ipynb"),
        ("ann", "sub/02_y.ipynb"),
        ("bo", "01_x.ipynb"),
    ]
    one = find_submissions([str(tmp_path / "class" / "ann")])
    assert [(s.student, s.notebook) for s in one] == [
        ("ann", "01_x.ipynb"),
        ("ann", "sub/02_y.ipynb"),
    ]
    with pytest.raises(UsageError):
        find_submissions([str(tmp_path / "missing")])


def test_a_snapshot_is_the_bytes_read_and_their_hash(tmp_path: Path) -> None:
    path = tmp_path / "01_x.ipynb"
    path.write_bytes(b'{"cells": []}')
    snapshot = read_once(Submission(path, "ann", "01_x.ipynb"))
    path.write_bytes(b"changed afterwards")
    assert snapshot.data == b'{"cells": []}'
    assert snapshot.sha256 == hashlib.sha256(b'{"cells": []}').hexdigest()
    assert snapshot.unreadable == ""


def test_an_unreadable_file_is_a_snapshot_with_its_reason(tmp_path: Path) -> None:
    snapshot = read_once(Submission(tmp_path / "gone.ipynb", "ann", "gone.ipynb"))
    assert snapshot.data == b"" and "No such file" in snapshot.unreadable
    assert snapshot.sha256 == hashlib.sha256(b"").hexdigest()
