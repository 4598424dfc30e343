"""Writing a file so that readers see either the old contents or the new, never half of either."""

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str], binary: bool = False) -> Iterator[IO]:
    """Open a temporary file beside ``path``; when the block ends without error, move it into place.

    The data is flushed to disk before the rename. An existing file keeps its permission bits and
    a new one gets the usual ``0o666 & ~umask``. On an error the temporary file is removed and
    ``path`` is left as it was.

    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "grades.csv"
    >>> with atomic_file(target) as handle:
    ...     _ = handle.write("student,points\\n")
    >>> target.read_text()
    'student,points\\n'
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    handle, temporary = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"
    )
    try:
        opened = (
            os.fdopen(handle, "wb")
            if binary
            else os.fdopen(handle, "w", encoding="utf-8", newline="")
        )
        with opened as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Replace ``path`` with ``text`` (written as given: no newline translation) in one step."""
    with atomic_file(path) as file:
        file.write(text)
