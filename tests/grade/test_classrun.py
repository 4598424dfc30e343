"""The class run on its own, with a batch that grades nothing: each notebook is read once, and the
bytes read are the bytes hashed, graded and kept, whatever happens to the file meanwhile."""

import hashlib
import json
from pathlib import Path

import pytest

from course_tools.grade import _classrun
from course_tools.grade._classrun import (
    ClassRun,
    RunInterruptedError,
    finish_run,
    plan_run,
)
from course_tools.grade.book import ExerciseResult, Journal, Record, SubmissionResult
from course_tools.grade.grading import OnResult, SchedulerError, Settings
from course_tools.grade.intake import Snapshot, Submission, find_class, read_once
from course_tools.grade.sandbox import SandboxLevel

ROOT = Path(__file__).resolve().parents[2]
SOLVED = ROOT / "solutions" / "02_mapping_and_sgd.ipynb"
BLANK = ROOT / "exercises" / SOLVED.name
SETTINGS = Settings(sandbox=SandboxLevel.probe(enabled=False), seed=5)


class FakeBatch:
    """Records the bytes it is given; a full score for every notebook, or ``fail`` raised."""

    stopped = "nothing was running"

    def __init__(self, before: object = None, fail: BaseException | None = None) -> None:
        self.before, self.fail = before, fail
        self.seen: list[bytes] = []

    def where(self) -> str:
        return "nowhere"

    def canary(self, lessons: list[str]) -> dict[str, SubmissionResult]:
        raise AssertionError("these tests run without the canary")

    def grade(self, snapshots: list[Snapshot], on_result: OnResult) -> list[SubmissionResult]:
        if callable(self.before):
            self.before()
        results = []
        for snapshot in snapshots:
            self.seen.append(snapshot.data)
            sub = snapshot.submission
            result = SubmissionResult(
                sub.student, sub.notebook, str(sub.path), "02", "graded", "",
                [ExerciseResult("02.sgd_step", "sgd_step", "passed", 2, 2, "")],
            )  # fmt: skip
            on_result(snapshot, result)
            results.append(result)
            if self.fail is not None:
                raise self.fail
        return results


def class_run(tmp_path: Path) -> tuple[ClassRun, Path]:
    notebook = tmp_path / "class" / "ann" / SOLVED.name
    notebook.parent.mkdir(parents=True)
    notebook.write_bytes(SOLVED.read_bytes())
    intake = find_class([str(tmp_path / "class")])
    out = tmp_path / "out"
    out.mkdir()
    journal = Journal(out, SETTINGS.recorded(), resume=False)
    run = ClassRun(
        out=out, intake=intake, chosen=intake.submissions, record=Record(), journal=journal
    )
    return run, notebook


def test_a_notebook_changed_during_the_run_is_recorded_as_it_was_graded(tmp_path: Path) -> None:
    run, notebook = class_run(tmp_path)
    todo = plan_run(run)
    batch = FakeBatch(before=lambda: notebook.write_bytes(BLANK.read_bytes()))
    finish_run(run, todo, batch, SETTINGS, canary=False)
    book = json.loads((run.out / "gradebook.json").read_text())
    (graded,) = book["submissions"]
    assert batch.seen == [SOLVED.read_bytes()]
    assert graded["sha256"] == hashlib.sha256(SOLVED.read_bytes()).hexdigest()
    assert "jax.tree.map" in graded["answers"]["02.sgd_step"]  # the solution's, not the stub's


def test_each_notebook_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run takes each notebook's bytes through ``read_once``, the intake's one reader, once:
    the snapshot it plans with is the one it grades and keeps."""
    run, notebook = class_run(tmp_path)
    reads: list[Path] = []

    def counted(sub: Submission) -> Snapshot:
        reads.append(sub.path)
        return read_once(sub)

    monkeypatch.setattr(_classrun, "read_once", counted)
    finish_run(run, plan_run(run), FakeBatch(), SETTINGS, canary=False)
    assert reads == [notebook]


def test_an_interruption_keeps_the_journal_for_resume(tmp_path: Path) -> None:
    run, _ = class_run(tmp_path)
    with pytest.raises(RunInterruptedError, match=r"1 finished notebook\(s\) are kept .*--resume"):
        finish_run(run, plan_run(run), FakeBatch(fail=KeyboardInterrupt()), SETTINGS, canary=False)
    assert (run.out / "journal.jsonl").exists() and not (run.out / "gradebook.json").exists()


def test_a_scheduler_lost_midway_says_where_the_graded_notebooks_are(tmp_path: Path) -> None:
    run, _ = class_run(tmp_path)
    with pytest.raises(SchedulerError, match=r"gone; the notebooks graded so far are kept in .*"):
        finish_run(
            run, plan_run(run), FakeBatch(fail=SchedulerError("gone")), SETTINGS, canary=False
        )
