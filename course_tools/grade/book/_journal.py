"""What a run keeps between runs: the journal of finished notebooks, and the gradebook as the
record.

The journal (``journal.jsonl`` in the output folder) gets one line per notebook the moment it is
graded, flushed to disk, after a first line holding the grader's settings. An interrupted run
leaves it behind; ``--resume`` reads it and grades only the notebooks it lacks (a notebook whose
bytes changed since is graded again). A run that finishes removes it.

``gradebook.json`` is the record of earlier runs into the same folder: a run keeps every notebook
row and student it does not grade again, provided the record was written with the same settings.
"""

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..intake import UsageError
from ._results import SubmissionResult

JOURNAL = "journal.jsonl"


@dataclass
class Graded:
    """One graded notebook as the record keeps it: the result, its answers, and the bytes it came
    from."""

    result: SubmissionResult
    sha256: str
    answers: dict[str, str] = field(default_factory=dict)
    outside_errors: list[str] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str]:
        return self.result.student, self.result.notebook

    def to_json(self) -> dict[str, Any]:
        return {
            **self.result.to_json(),
            "sha256": self.sha256,
            "answers": self.answers,
            "outside_errors": self.outside_errors,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Graded":
        return cls(
            SubmissionResult.from_json(data),
            str(data.get("sha256", "")),
            dict(data.get("answers", {})),
            list(data.get("outside_errors", [])),
        )


def settings_differences(old: dict[str, Any], new: dict[str, Any]) -> str:
    """The settings that differ, as the refusal to mix two runs says them.

    >>> settings_differences({"seed": 0, "memory_mb": 2048}, {"seed": 1, "memory_mb": 2048})
    'seed 0 then, 1 now'
    """
    keys = sorted(set(old) | set(new))
    return ", ".join(
        f"{k} {old.get(k)!r} then, {new.get(k)!r} now" for k in keys if old.get(k) != new.get(k)
    )


def _results(lines: list[str]) -> dict[tuple[str, str], Graded]:
    """The finished notebooks in a journal's result lines, by (student, notebook)."""
    results: dict[tuple[str, str], Graded] = {}
    for line in lines:
        try:
            graded = Graded.from_json(json.loads(line))
        except (json.JSONDecodeError, TypeError, KeyError, AttributeError):
            continue  # the line being written when the run stopped
        results[graded.key] = graded
    return results


class Journal:
    """The journal of one run in ``out``: ``Journal(out, settings, resume)`` checks, reads and opens
    it."""

    def __init__(self, out: Path, settings: dict[str, Any], resume: bool) -> None:
        self.path = out / JOURNAL
        self.settings = settings
        self.finished: dict[tuple[str, str], Graded] = {}
        self._file: IO[str] | None = None
        if self.path.exists() and not resume:
            raise UsageError(
                f"{self.path} is left from an interrupted run: pass --resume to grade only what "
                "it lacks, "
                "or delete it to grade everything again"
            )
        if self.path.exists():
            self._read()

    def _read(self) -> None:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as error:
            raise UsageError(
                f"{self.path} cannot be read ({error}); delete it to grade everything again"
            ) from None
        try:
            head = json.loads(lines[0]) if lines else {}
        except json.JSONDecodeError:
            head = {}
        if head.get("grader") != self.settings:
            raise UsageError(
                f"{self.path} was written with other settings "
                f"({settings_differences(head.get('grader') or {}, self.settings)}): "
                "resume with the same options, or delete it to grade everything again"
            )
        self.finished = _results(lines[1:])

    def kept(self) -> int:
        """How many finished notebooks the journal on disk holds: what ``--resume`` will reuse.

        Read back from the file, so that a result written just as the run was interrupted is
        counted, and one that was not is not.
        """
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return 0
        return len(_results(lines[1:]))

    def done(self, student: str, notebook: str, sha256: str) -> Graded | None:
        """The journaled result for this notebook, if its bytes are the ones graded."""
        graded = self.finished.get((student, notebook))
        return graded if graded is not None and graded.sha256 == sha256 else None

    def append(self, graded: Graded) -> None:
        """Add one finished notebook, on disk before this returns."""
        if self._file is None:
            fresh = not self.path.exists()
            self._file = open(self.path, "a", encoding="utf-8")
            if fresh:
                self._write({"journal": 1, "grader": self.settings})
            else:
                self._file.write("\n")  # ends a line cut short by the interruption
        self._write(graded.to_json())

    def _write(self, data: dict[str, Any]) -> None:
        assert self._file is not None
        self._file.write(json.dumps(data, ensure_ascii=False, sort_keys=True) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def remove(self) -> None:
        """The run finished and its gradebook is written: the journal is no longer needed."""
        self.close()
        self.path.unlink(missing_ok=True)


@dataclass
class Record:
    """An earlier gradebook in the output folder: its notebooks, students and feedback files."""

    graded: dict[tuple[str, str], Graded] = field(default_factory=dict)
    students: dict[str, dict[str, Any]] = field(default_factory=dict)
    feedback: set[str] = field(default_factory=set)


def read_record(out: Path, settings: dict[str, Any]) -> Record:
    """The record in ``out/gradebook.json``; an empty one when there is none.

    Raises :class:`UsageError` when it cannot be read or was graded with other settings (mixing
    grades from two seeds or limits in one gradebook would be unfair).
    """
    path = out / "gradebook.json"
    if not path.exists():
        return Record()
    try:
        book = json.loads(path.read_text(encoding="utf-8"))
        grader = book["grader"]
        graded = [Graded.from_json(s) for s in book["submissions"]]
        students = {s["key"]: s for s in book.get("students", [])}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as error:
        raise UsageError(
            f"{path} exists but is not a gradebook this grader wrote ({type(error).__name__}): "
            "grade into another --out folder"
        ) from None
    if grader != settings:
        raise UsageError(
            f"{path} was graded with other settings ({settings_differences(grader, settings)}); "
            "a re-run keeps its rows, so the settings must match: use the same options, or grade "
            "into another --out folder"
        )
    feedback = {f for s in students.values() for f in s.get("feedback", [])}
    return Record({g.key: g for g in graded}, students, feedback)
