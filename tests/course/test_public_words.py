"""Every tracked text file speaks of the course alone: no path into a repository beside this one or
its style file, no issue or pull-request numbers, and no words for the machinery the course was
built with. Pages, comments, tests, notebooks and benchmarks alike; uv.lock and binary files are
left out. What a reference means is said in words instead ("a room of 200 learners", not the
issue that asked for one)."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
THIS_FILE = Path(__file__).resolve().relative_to(ROOT).as_posix()
LEFT_OUT = {"uv.lock", THIS_FILE}
"""The lock (package names and hashes only), and this file, which names what it looks for."""
INTERNAL = {
    "a path into a repository beside this one": [r"\.\./shared\b"],
    "a style or tooling file of another repository": [r"(?<![\w./-])shared/[A-Z][A-Z_]*\.md\b"],
    "an issue or pull-request number": [
        r"issues?\s+#?\d+\b",
        r"pull\s+requests?\s+#?\d+\b",
        r"\bprs?\s+#?\d+\b",
        r"(?:fix(?:es|ed)?|close[sd]?|resolve[sd]?)\s+#\d+\b",
    ],
    "the machinery the course was built with": [
        r"steering\s+repo",
        r"farm-studio",
        r"device\s+tool\b",
        r"issues\s+tool\b",
        r"kinds\.md\b",
        r"(?:helper|development)\s+session\b",
        r"carry=\[",
        r"timeout_s=",
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


def tracked_text_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return [path for path in listed.split("\0") if path and path not in LEFT_OUT]


def findings(path: str, text: str) -> list[str]:
    """Each line of ``text`` that names something internal, with what it names.

    >>> findings("x.md", "See ../shared/STYLE.md.\\nThe issue is the cache.\\n")
    ['x.md:1: a path into a repository beside this one: ../shared']
    >>> findings("x.py", "# goals of issue 36\\n# [link](pitfalls.md#pitfall-3), color #111\\n")
    ['x.py:1: an issue or pull-request number: issue 36']
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
