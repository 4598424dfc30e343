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
    "a path into a repository beside this one": re.compile(r"\.\./shared\b"),
    "a style or tooling file of another repository": re.compile(
        r"(?<![\w./-])shared/[A-Z][A-Z_]*\.md\b"
    ),
    "an issue or pull-request number": re.compile(
        r"\b(?:issues?|pull\s+requests?|PRs?)\s+#?\d+\b"
        r"|\b(?:fix(?:es|ed)?|close[sd]?|resolve[sd]?)\s+#\d+\b",
        re.IGNORECASE,
    ),
    "the machinery the course was built with": re.compile(
        r"steering\s+repo|farm-studio|\bdevice\s+tool\b|\bissues\s+tool\b|\bKINDS\.md\b"
        r"|\b(?:helper|development)\s+session\b|\bcarry=\[|\btimeout_s=",
        re.IGNORECASE,
    ),
}


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
    for number, line in enumerate(text.splitlines(), start=1):
        for what, pattern in INTERNAL.items():
            match = pattern.search(line)
            if match:
                found.append(f"{path}:{number}: {what}: {match.group(0)}")
    return found


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
