"""What an LMS download's file names say: whose file it is, under which id, and whether it was late.

Canvas ("Download submissions") writes one flat folder of files named
``lastfirst_[LATE_]userid_submissionid_originalname``; a file uploaded again under the same name
gets ``-1``, ``-2``... before its extension. Moodle ("Download all submissions") writes one folder
per participant, ``Full Name_participantid_assignsubmission_file_``, holding the original files (or,
with "download in folders" off, flat files ``Full
Name_participantid_assignsubmission_file_original``).
"""

import re
from dataclasses import dataclass

_CANVAS = re.compile(
    r"^(?P<name>[^_]+)_(?:(?P<late>LATE)_)?(?P<user>\d+)_(?P<submission>\d+)_(?P<original>.+)$"
)
_MOODLE = re.compile(
    r"^(?P<name>.+?)_(?P<participant>\d+)_assignsubmission_(?P<plugin>[a-z]+)_?(?P<original>.*)$"
)
_AGAIN = re.compile(r"^(?P<stem>.+)-(?P<n>\d+)(?P<ext>\.[^.]+)$")


@dataclass(frozen=True)
class LmsFile:
    """The parts of one LMS file (or Moodle folder) name."""

    lms: str
    user_id: str
    name: str
    original: str
    late: bool = False
    version: int = 0


def canvas_file(filename: str) -> LmsFile | None:
    """The Canvas parts of ``filename``, or None when it is not named the Canvas way.

    >>> canvas_file("smithalice_LATE_1234_98765_01_what_is_a_pytree-2.ipynb")
    ... # doctest: +NORMALIZE_WHITESPACE
    LmsFile(lms='canvas', user_id='1234', name='smithalice', original='01_what_is_a_pytree.ipynb',
            late=True, version=2)
    """
    match = _CANVAS.match(filename)
    if not match:
        return None
    original, version = match["original"], 0
    again = _AGAIN.match(original)
    if again:
        original, version = again["stem"] + again["ext"], int(again["n"])
    return LmsFile("canvas", match["user"], match["name"], original, bool(match["late"]), version)


def moodle_entry(filename: str) -> LmsFile | None:
    """The Moodle parts of a folder or file name, or None when it is not named the Moodle way.

    >>> moodle_entry("Jürgen Schmidt_4021_assignsubmission_file_")
    LmsFile(lms='moodle', user_id='4021', name='Jürgen Schmidt', original='', late=False, version=0)
    """
    match = _MOODLE.match(filename)
    if not match:
        return None
    return LmsFile("moodle", match["participant"], match["name"], match["original"])
