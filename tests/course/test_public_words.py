"""Every tracked text file speaks of the course alone: no path into a repository beside this one or
its style file, no issue or pull-request numbers, and no words for the machinery the course was
built with. Pages, comments, tests, notebooks and benchmarks alike; uv.lock and binary files are
left out. What a reference means is said in words instead ("a room of 200 learners", not the
issue that asked for one)."""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LEFT_OUT = {"uv.lock"}
"""The lock: package names and hashes only. This file is read like every other one: its patterns
are written so that none of them spells, in one piece, what it looks for (see `INTERNAL`)."""
PATH = "a path into a repository beside this one"
STYLE_FILE = "a style or tooling file of another repository"
NUMBER = "an issue or pull-request number"
MACHINERY = "the machinery the course was built with"
INTERNAL = {
    PATH: [r"\.\./shared\b"],
    STYLE_FILE: [r"(?<![\w./-])shared/[A-Z][A-Z_]*\.md\b"],
    NUMBER: [
        r"issues?\s+#?\d+\b",
        r"pull\s+requests?\s+#?\d+\b",
        r"\bprs?\s+#?\d+\b",
        r"(?:fix(?:es|ed)?|close[sd]?|resolve[sd]?)\s+#\d+\b",
    ],
    # Each name's first letter stands in a character class ("[f]arm" matches "farm", and the text
    # "[f]arm" does not), so that this file, which the test reads too, passes its own test.
    MACHINERY: [
        r"[s]teering\s+repo",
        r"[f]arm-studio",
        r"[d]evice\s+tool\b",
        r"[i]ssues\s+tool\b",
        r"[k]inds\.md\b",
        r"(?:[h]elper|[d]evelopment)\s+[s]ession\b",
        r"[c]arry=\[",
        r"[t]imeout_s=",
    ],
}
"""What each kind of reference looks like. Each pattern is searched on its own, in the lowercased
text (the style file's name, in capitals, in the text as it is): one literal to look for makes a
pattern quick, where one alternation of them all is several times slower."""
_PATTERNS = [
    (what, re.compile(pattern), "[A-Z]" not in pattern)
    for what, patterns in INTERNAL.items()
    for pattern in patterns
]


CAUGHT = [
    (PATH, ("see ../", "shared/notes")),
    (STYLE_FILE, ("read shared/", "STYLE.md")),
    (NUMBER, ("issue ", "36")),
    (NUMBER, ("pull request ", "#12")),
    (NUMBER, ("PR ", "7")),
    (NUMBER, ("fixes ", "#3")),
    (MACHINERY, ("steer", "ing repo")),
    (MACHINERY, ("farm", "-studio")),
    (MACHINERY, ("device", " tool")),
    (MACHINERY, ("issues", " tool")),
    (MACHINERY, ("KINDS", ".md")),
    (MACHINERY, ("helper", " session")),
    (MACHINERY, ("development", " session")),
    (MACHINERY, ("carry", "=[")),
    (MACHINERY, ("timeout", "_s=")),
]
"""One reference of each shape `INTERNAL` looks for, in pieces that the tests join, so that this
file never holds one whole."""


def tracked_text_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return [path for path in listed.split("\0") if path and path not in LEFT_OUT]


def findings(path: str, text: str) -> list[str]:
    """Each line of ``text`` that names something internal, with what it names.

    >>> findings("x.md", "The issue is the cache; see [it](pitfalls.md#pitfall-3), color #111.")
    []
    >>> text = "See ../%s/STYLE.md.\\n# goals of issue %d\\n" % ("shared", 36)
    >>> for finding in findings("x.md", text):
    ...     print(finding.rsplit(": ", 1)[0])  # the text found, here, is left out
    x.md:1: a path into a repository beside this one
    x.md:2: an issue or pull-request number
    """
    found = []
    lowered = text.lower()
    for what, pattern, on_lowered in _PATTERNS:
        for match in pattern.finditer(lowered if on_lowered else text):
            line = text.count("\n", 0, match.start()) + 1
            found.append((line, f"{path}:{line}: {what}: {' '.join(match.group(0).split())}"))
    return [finding for _, finding in sorted(found)]


def test_tracked_files_speak_of_the_course_alone() -> None:
    found = []
    for path in tracked_text_files():
        try:
            data = (ROOT / path).read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            continue  # deleted in the work tree but not yet in git's index; a submodule
        if b"\0" in data[:8192]:
            continue  # binary
        found += findings(path, data.decode("utf-8", errors="replace"))
    assert not found, "\n".join(found)


@pytest.mark.parametrize(("what", "pieces"), CAUGHT)
def test_findings_catch(what: str, pieces: tuple[str, ...]) -> None:
    text = f"An ordinary line.\nSo {''.join(pieces)} here.\n"
    assert [finding.rsplit(": ", 1)[0] for finding in findings("x.md", text)] == [f"x.md:2: {what}"]


def test_findings_every_pattern_catches_an_example() -> None:
    texts = ["".join(pieces) for _, pieces in CAUGHT]
    unused = [
        pattern.pattern
        for _, pattern, on_lowered in _PATTERNS
        if not any(pattern.search(text.lower() if on_lowered else text) for text in texts)
    ]
    assert not unused, f"patterns with no example in CAUGHT: {unused}"
