"""A submission: one notebook handed in by one student, and its bytes, read once.

The bytes a run reads are the bytes it hashes (the journal's key), grades and keeps the answers of:
a file that changes while the class is graded cannot give a gradebook whose hash is not the hash of
what was graded.
"""

import hashlib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Submission:
    """One submitted notebook: where it is, whose it is (the student key), and how the gradebook
    names it.

    ``shown`` is the path the gradebook records: for a notebook extracted from a zip, the zip's path
    and the member's, not the scratch folder it was read from.
    """

    path: Path
    student: str
    notebook: str
    shown: str = ""

    @property
    def label(self) -> str:
        return f"{self.student}/{self.notebook}"


@dataclass(frozen=True)
class Snapshot:
    """A submission's bytes as read once: what is hashed, graded and kept; ``unreadable`` says why
    there are none.

    >>> Snapshot(Submission(Path("a.ipynb"), "ann", "a.ipynb"), b"{}").sha256[:12]
    '44136fa355b3'
    """

    submission: Submission
    data: bytes
    unreadable: str = ""

    @property
    def sha256(self) -> str:
        """The SHA-256 of the bytes, in hex (of no bytes for an unreadable file)."""
        return hashlib.sha256(self.data).hexdigest()


def read_once(sub: Submission) -> Snapshot:
    """The submission's bytes now; an unreadable file gives none, and the reason."""
    try:
        return Snapshot(sub, sub.path.read_bytes())
    except OSError as error:
        return Snapshot(sub, b"", str(error.strerror or error))
