"""Opening an LMS download ``.zip`` safely: no path leaves the target folder, sizes are capped.

Members keep their modification times (an LMS stores the submission time there). A zip with a
member that would land outside the folder (``../x``, ``/etc/x``, ``C:x``), a link, or more than
:data:`MAX_MEMBERS` members or :data:`MAX_TOTAL_BYTES` uncompressed is refused whole, with the
reason: the instructor unpacks it by hand after looking, or asks the LMS for a fresh download.
"""

import os
import shutil
import stat
import time
import zipfile
from pathlib import Path, PurePosixPath

MAX_MEMBERS = 20_000
MAX_TOTAL_BYTES = 4 * 2**30
MAX_MEMBER_BYTES = 64 * 2**20


class ZipRefusedError(Exception):
    """The archive is not extracted; the message says why."""


def _member_path(name: str) -> PurePosixPath:
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or (path.parts and ":" in path.parts[0]):
        raise ZipRefusedError(
            f"member {name!r} would be written outside the folder it is extracted to"
        )
    return path


def extract_zip(archive: Path, target: Path) -> None:
    """Extract ``archive`` into the empty folder ``target``, member times kept, or raise
    :class:`ZipRefusedError`.

    >>> import tempfile, pathlib
    >>> base = pathlib.Path(tempfile.mkdtemp())
    >>> with zipfile.ZipFile(base / "a.zip", "w") as z:
    ...     z.writestr("../evil.txt", "x")
    >>> try:
    ...     extract_zip(base / "a.zip", base / "out")
    ... except ZipRefusedError as refused:
    ...     print(refused)
    member '../evil.txt' would be written outside the folder it is extracted to
    """
    try:
        with zipfile.ZipFile(archive) as zf:
            members = zf.infolist()
            if len(members) > MAX_MEMBERS:
                raise ZipRefusedError(
                    f"it has {len(members)} members, more than the {MAX_MEMBERS} the grader unpacks"
                )
            total = sum(m.file_size for m in members)
            if total > MAX_TOTAL_BYTES:
                raise ZipRefusedError(
                    f"it unpacks to {total / 2**30:.1f} GiB, more than "
                    f"{MAX_TOTAL_BYTES / 2**30:.0f} GiB"
                )
            planned = []
            for member in members:
                relative = _member_path(member.filename)
                if stat.S_ISLNK(member.external_attr >> 16):
                    raise ZipRefusedError(f"member {member.filename!r} is a symbolic link")
                if member.file_size > MAX_MEMBER_BYTES and not member.is_dir():
                    raise ZipRefusedError(
                        f"member {member.filename!r} is {member.file_size / 2**20:.0f} MiB, more "
                        f"than {MAX_MEMBER_BYTES // 2**20} MiB"
                    )
                planned.append((member, relative))
            target.mkdir(parents=True, exist_ok=True)
            for member, relative in planned:
                if not relative.parts:
                    continue
                dest = target.joinpath(*relative.parts)
                if member.is_dir():
                    dest.mkdir(parents=True, exist_ok=True)
                    continue
                dest.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(member) as source, open(dest, "xb") as sink:
                    # zipfile stops a member that unpacks to more than its declared size (a bad CRC
                    # or size).
                    shutil.copyfileobj(source, sink, 2**20)
                stamp = time.mktime((*member.date_time, 0, 0, -1))
                os.utime(dest, (stamp, stamp))
    except zipfile.BadZipFile as error:
        raise ZipRefusedError(f"it is not a readable zip file ({error})") from None
    except (OSError, EOFError) as error:
        raise ZipRefusedError(
            f"it could not be extracted ({getattr(error, 'strerror', None) or error})"
        ) from None
