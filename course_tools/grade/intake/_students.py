"""Finding a class's submissions as they arrive: plain folders, a Canvas or Moodle download, or its
``.zip``.

Layouts, decided per PATH:

- a notebook file: one submission by the student named after its folder (or by the Canvas name);
- a ``.zip``: extracted safely into a scratch folder (see ``_unzip``), then read as a folder;
- a Canvas download: a flat folder of ``lastfirst_[LATE_]userid_submissionid_name`` files;
- a Moodle download: folders (or flat files) named ``Full Name_id_assignsubmission_file_``;
- a folder with notebooks of its own: one student's (notebooks in its subfolders too);
- otherwise a class: one student per subfolder. A subfolder without notebooks is a student too,
  with the status ``empty``, ``archive_only`` or ``no_notebook``.

Students are told apart by key: the LMS id, else the folder name. Two class folders holding the same
folder name (two sections) keep both, keyed ``section/name``. With a roster, students are matched by
id, then by name within a section; enrolled students without a submission get the status
``missing``. Nothing here writes to a submission.
"""

import dataclasses
import tempfile
import unicodedata
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ._lms import LmsFile, canvas_file, moodle_entry
from ._names import folding
from ._submissions import Submission
from ._tables import RosterRow
from ._unzip import ZipRefusedError, extract_zip
from ._usage import UsageError

ARCHIVES = (".zip", ".tar", ".gz", ".tgz", ".bz2", ".xz", ".7z", ".rar")


@dataclass
class Student:
    """One student of the class, whether or not a notebook of theirs was found."""

    key: str
    name: str
    section: str = ""
    email: str = ""
    lms: str = ""
    lms_id: str = ""
    status: str = (
        ""  # "" when notebooks were found, else empty, archive_only, no_notebook or missing
    )
    detail: str = ""
    submitted: str | None = None  # ISO 8601 with offset: the newest file's time
    lms_late: bool = False
    on_roster: bool = False

    def to_json(self) -> dict[str, object]:
        return dataclasses.asdict(self)


@dataclass
class Intake:
    """What was found: the notebooks to grade and every student, keyed by student key."""

    submissions: list[Submission]
    students: dict[str, Student]
    warnings: list[str] = field(default_factory=list)
    scratch: list[tempfile.TemporaryDirectory[str]] = field(default_factory=list)

    def close(self) -> None:
        """Remove the folders zips were extracted into."""
        for holder in self.scratch:
            holder.cleanup()


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _mtime(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, UTC).astimezone()


class _Collector:
    """Students and notebooks of one PATH, before keys are made unique across PATHs."""

    def __init__(self, section: str, shown_root: str, real_root: Path) -> None:
        self.section, self.shown_root, self.real_root = section, shown_root, real_root
        self.students: dict[str, Student] = {}
        self.notebooks: dict[str, list[tuple[Path, str]]] = defaultdict(list)
        self.times: dict[str, list[datetime]] = defaultdict(list)
        self.others: dict[str, list[str]] = defaultdict(list)

    def shown(self, path: Path) -> str:
        return (
            f"{self.shown_root}/{path.relative_to(self.real_root).as_posix()}"
            if path != self.real_root
            else self.shown_root
        )

    def student(self, key: str, name: str, lms: LmsFile | None = None) -> Student:
        if key not in self.students:
            self.students[key] = Student(
                key,
                _nfc(name),
                self.section,
                lms=lms.lms if lms else "",
                lms_id=lms.user_id if lms else "",
            )
        return self.students[key]

    def add_file(self, key: str, path: Path, notebook: str) -> None:
        self.times[key].append(_mtime(path))
        if notebook.endswith(".ipynb"):
            self.notebooks[key].append((path, notebook))
        else:
            self.others[key].append(notebook)

    def finish(self) -> None:
        for key, student in self.students.items():
            if self.times[key]:
                student.submitted = max(self.times[key]).isoformat(timespec="seconds")
            if self.notebooks[key]:
                continue
            others = sorted(self.others[key])
            if not others:
                student.status, student.detail = "empty", "the submission holds no files"
            elif all(o.lower().endswith(ARCHIVES) for o in others):
                student.status, student.detail = (
                    "archive_only",
                    f"only an archive ({', '.join(others)}): submit the .ipynb itself",
                )
            else:
                student.status, student.detail = (
                    "no_notebook",
                    f"no notebook, only: {', '.join(others[:10])}"
                    + (" ..." if len(others) > 10 else ""),
                )


def hidden_part(part: str) -> bool:
    """True for a path part the grader skips: hidden files and folders, caches, checkpoints."""
    return part.startswith(".") or part == "__pycache__" or part.endswith("-checkpoint.ipynb")


def _visible_files(folder: Path) -> list[Path]:
    try:
        files = sorted(p for p in folder.rglob("*") if p.is_file())
    except OSError as error:
        raise UsageError(f"{folder}: cannot list the folder ({error.strerror})") from None
    return [p for p in files if not any(hidden_part(part) for part in p.relative_to(folder).parts)]


def _canvas(root: Path, col: _Collector, files: list[Path]) -> None:
    latest: dict[tuple[str, str], tuple[int, Path, LmsFile]] = {}
    for path in files:
        parsed = canvas_file(path.name) if path.parent == root else None
        if parsed is None:
            continue
        student = col.student(parsed.user_id, parsed.name, parsed)
        student.lms_late = student.lms_late or parsed.late
        current = latest.get((parsed.user_id, parsed.original))
        if current is None or parsed.version > current[0]:
            latest[(parsed.user_id, parsed.original)] = (parsed.version, path, parsed)
    for (user, original), (_, path, _) in sorted(latest.items()):
        col.add_file(user, path, original)


def _moodle(root: Path, col: _Collector, files: list[Path]) -> None:
    for entry in sorted(root.iterdir()):
        parsed = moodle_entry(entry.name)
        if parsed is None or hidden_part(entry.name):
            continue
        col.student(parsed.user_id, parsed.name, parsed)
        if entry.is_file():
            col.add_file(parsed.user_id, entry, parsed.original or entry.name)
    for path in files:
        top = path.relative_to(root).parts
        parsed = moodle_entry(top[0])
        if parsed is not None and len(top) > 1:
            col.add_file(parsed.user_id, path, "/".join(top[1:]))


def _majority(names: list[str], parse: Callable[[str], LmsFile | None]) -> bool:
    return bool(names) and sum(parse(n) is not None for n in names) * 2 > len(names)


def _folder(root: Path, col: _Collector) -> None:
    files = _visible_files(root)
    top = [p.name for p in sorted(root.iterdir()) if not hidden_part(p.name)]
    if _majority([p.name for p in files if p.parent == root], canvas_file):
        _canvas(root, col, files)
    elif _majority(top, moodle_entry):
        _moodle(root, col, files)
    elif any(p.parent == root and p.suffix == ".ipynb" for p in files):
        col.section = ""
        name = _nfc(root.resolve().name or "student")
        col.student(name, name)
        for path in files:
            if path.suffix == ".ipynb":
                col.add_file(name, path, path.relative_to(root).as_posix())
    else:
        for entry in sorted(root.iterdir()):
            if entry.is_dir() and not hidden_part(entry.name):
                col.student(_nfc(entry.name), entry.name)
        for path in files:
            parts = path.relative_to(root).parts
            if len(parts) > 1:
                col.add_file(_nfc(parts[0]), path, "/".join(parts[1:]))
    col.finish()


def _collect(
    text: str, scratch: list[tempfile.TemporaryDirectory[str]], sections: bool
) -> _Collector:
    root = Path(text)
    section = Path(text.rstrip("/")).name.removesuffix(".zip") if sections else ""
    if not root.exists():
        raise UsageError(f"{text}: no such file or folder")
    if root.is_file() and root.suffix.lower() == ".zip":
        holder = tempfile.TemporaryDirectory(prefix="course-grade-zip-")
        scratch.append(holder)
        target = Path(holder.name) / "x"
        try:
            extract_zip(root, target)
        except ZipRefusedError as refused:
            raise UsageError(f"{text}: the zip was not opened: {refused}") from None
        col = _Collector(section, text, target)
        _folder(target, col)
        return col
    if root.is_file():
        col = _Collector("", str(root.parent), root.parent)
        parsed = canvas_file(root.name)
        if parsed:
            col.student(parsed.user_id, parsed.name, parsed).lms_late = parsed.late
            col.add_file(parsed.user_id, root, parsed.original)
        else:
            name = _nfc(root.resolve().parent.name or "student")
            col.student(name, name)
            col.add_file(name, root, root.name)
        col.finish()
        return col
    if not root.is_dir():
        raise UsageError(f"{text}: not a file or a folder")
    col = _Collector(section, text.rstrip("/") or "/", root)
    _folder(root, col)
    return col


def find_class(paths: list[str], roster: list[RosterRow] | None = None) -> Intake:
    """Every student and notebook under ``paths``, matched to ``roster`` when one is given.

    Raises :class:`UsageError` for a path that does not exist, a zip that is refused, or no notebook
    at all.
    """
    holders: list[tempfile.TemporaryDirectory[str]] = []
    sections = len(paths) > 1
    try:
        collectors = [_collect(text, holders, sections) for text in paths]
    except BaseException:
        for holder in holders:
            holder.cleanup()
        raise
    sectioned: dict[str, set[str]] = defaultdict(set)
    for col in collectors:
        for key in col.students:
            sectioned[key].add(col.section)
    students: dict[str, Student] = {}
    subs: dict[Path, Submission] = {}
    for col in collectors:
        for key, student in col.students.items():
            # The same folder name in two sections' folders: two students, kept apart by section.
            unique = f"{col.section}/{key}" if col.section and len(sectioned[key]) > 1 else key
            if unique not in students:
                students[unique] = dataclasses.replace(student, key=unique)
            elif col.notebooks[key]:
                students[unique].status, students[unique].detail = "", ""
            for path, notebook in col.notebooks[key]:
                subs.setdefault(path.resolve(), Submission(path, unique, notebook, col.shown(path)))
    intake = Intake(_unique_notebooks(list(subs.values())), students, scratch=holders)
    if roster is not None:
        _apply_roster(intake, roster)
    if not intake.submissions:
        intake.close()
        raise UsageError(f"no notebooks (*.ipynb) found in: {' '.join(paths)}")
    return intake


def find_submissions(paths: list[str]) -> list[Submission]:
    """Every submission under ``paths``, sorted by student and notebook (the layouts are
    :func:`find_class`'s).

    A file is one submission by the student named after its folder. A folder with notebooks of its
    own is one student's (notebooks in its subfolders too); a folder with only subfolders is a
    class, one student per subfolder. Hidden files and folders (``.ipynb_checkpoints``) are skipped.
    A ``.zip`` needs :func:`find_class`, which keeps its extracted files.
    """
    intake = find_class(paths)
    if intake.scratch:
        intake.close()
        raise UsageError(
            "a .zip download needs find_class (its notebooks live in a scratch folder while graded)"
        )
    return intake.submissions


def _unique_notebooks(subs: list[Submission]) -> list[Submission]:
    subs.sort(key=lambda s: (s.student, s.notebook, str(s.path)))
    seen: dict[tuple[str, str], int] = defaultdict(int)
    out = []
    for sub in subs:
        seen[(sub.student, sub.notebook)] += 1
        n = seen[(sub.student, sub.notebook)]
        out.append(sub if n == 1 else dataclasses.replace(sub, notebook=f"{sub.notebook} ({n})"))
    return out


def _compact(text: str) -> str:
    return "".join(ch for ch in folding(text) if ch.isalnum())


def same_person(student: Student, name: str) -> bool:
    """Whether ``name`` (from a roster) is this student's: equal names, or Canvas's ``lastfirst`` of
    it.

    >>> same_person(Student("1001", "smithalice", lms="canvas"), "Alice Smith")
    True
    """
    if folding(student.name) == folding(name):
        return True
    words = name.split()
    variants = {_compact("".join(words[k:] + words[:k])) for k in range(1, len(words))}
    return student.lms == "canvas" and _compact(student.name) in variants


def _apply_roster(intake: Intake, roster: list[RosterRow]) -> None:
    by_id: dict[str, Student] = {}
    for student in intake.students.values():
        by_id.setdefault(student.lms_id or student.key, student)
        by_id.setdefault(student.key, student)
    taken: set[str] = set()
    renamed: dict[str, str] = {}
    enrolled: dict[str, Student] = {}
    for row in roster:
        match = by_id.get(row.id)
        if match is None or match.key in taken:
            same = [
                s
                for s in intake.students.values()
                if s.key not in taken
                and same_person(s, row.name)
                and (not s.section or not row.section or s.section == row.section)
            ]
            match = same[0] if len(same) == 1 else None
        if match is None:
            enrolled[row.id] = Student(
                row.id,
                row.name,
                row.section,
                row.email,
                status="missing",
                detail="no submission was found",
                on_roster=True,
            )
            continue
        taken.add(match.key)
        renamed[match.key] = row.id
        enrolled[row.id] = dataclasses.replace(
            match,
            key=row.id,
            name=row.name,
            section=row.section or match.section,
            email=row.email,
            on_roster=True,
        )
    for key, student in intake.students.items():
        if key not in taken:
            unique = key if key not in enrolled else f"{key} (not on roster)"
            renamed[key] = unique
            enrolled[unique] = dataclasses.replace(student, key=unique)
            intake.warnings.append(
                f"{student.name} ({key}) is not on the roster; graded under {unique!r}"
            )
    intake.students = dict(sorted(enrolled.items()))
    intake.submissions = _unique_notebooks(
        [
            dataclasses.replace(s, student=renamed.get(s.student, s.student))
            for s in intake.submissions
        ]
    )


def apply_times(intake: Intake, times: dict[str, str]) -> None:
    """Take each student's submission time from an LMS's list (by key or LMS id), where it has
    one."""
    for student in intake.students.values():
        when = times.get(student.key) or times.get(student.lms_id)
        if when:
            student.submitted = when
