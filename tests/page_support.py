"""The course's hand-read pages as the docs tests read them (tests/course/test_readme.py,
tests/course/test_docs_agree.py): which pages there are, their text, and the commands they show in
code, inline or in blocks, each split into the words a shell would see."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = (
    "README.md",
    "CONTRIBUTING.md",
    *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")),
)
"""Every page a reader meets: README, CONTRIBUTING and the website's pages."""

_FENCE = re.compile(r"^ *(```|~~~)")
_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_SEPARATOR = re.compile(r"&&|\|\||[;|&]")


def page_text(page: str) -> str:
    """The text of ``page``, a path from the repository's top folder."""
    return (ROOT / page).read_text(encoding="utf-8")


def code_texts(markdown: str) -> list[str]:
    """What a Markdown text shows as code: each inline span (a line break in it read as a space),
    each line of a fenced block, and each line of an indented block; a line ending in ``\\`` is
    joined to the next.

    >>> code_texts("Run `make lab`.\\n```sh\\nmake test \\\\\\n  -n\\n```\\n\\n    dask worker\\n")
    ['make test -n', 'dask worker', 'make lab']
    """
    texts: list[str] = []
    prose: list[str] = []
    fenced = False
    after_blank = True
    for line in markdown.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif fenced:
            texts.append(line.strip())
        elif after_blank and line.startswith("    ") and not line.lstrip().startswith(("-", "*")):
            texts.append(line.strip())
            continue  # an indented block goes on while its lines stay indented
        else:
            prose.append(line)
        after_blank = not line.strip()
    texts += [" ".join(span.split()) for _, span in _SPAN.findall("\n".join(prose))]
    joined: list[str] = []
    for text in texts:
        if joined and joined[-1].endswith("\\"):
            joined[-1] = joined[-1][:-1].rstrip() + " " + text
        else:
            joined.append(text)
    return [text for text in joined if text]


@dataclass(frozen=True, kw_only=True)
class Command:
    """One command of a page: its program (a path's last part: ``course-grade``, or ``python -m
    X`` as ``-m X``) and the words after it, up to a comment."""

    program: str
    words: tuple[str, ...]

    def flags(self) -> list[str]:
        """The long options named, without their ``=value``.

        >>> Command(program="course-grade", words=("a/", "--jobs", "2", "--out=g")).flags()
        ['--jobs', '--out']
        """
        return [w.split("=")[0] for w in self.words if re.fullmatch(r"--[a-z][\w-]*(=.*)?", w)]


def commands(text: str) -> list[Command]:
    """The commands of one code text, as a POSIX shell splits them (``&&``, ``;``, pipes and
    ``&`` between them), leaving out the variables set in front of each.

    >>> commands("COURSE_ROOM=off .venv/bin/python -m course_tools.grade x --quiet &")
    [Command(program='-m course_tools.grade', words=('x', '--quiet'))]
    >>> commands("make compat COMPAT_JAX='0.7.1 0.9.0'  # two releases")
    [Command(program='make', words=('compat', 'COMPAT_JAX=0.7.1 0.9.0'))]
    """
    found = []
    for part in _SEPARATOR.split(text):
        try:
            words = shlex.split(part, comments=True)
        except ValueError:  # an unclosed quote: prose, or an example cut short
            words = part.split("#")[0].split()
        while words and re.fullmatch(r"[A-Za-z_]\w*=.*", words[0]):
            words = words[1:]
        if not words:
            continue
        program, rest = words[0].rsplit("/", 1)[-1], words[1:]
        if re.fullmatch(r"python3?(\.\d+)?", program) and rest[:1] == ["-m"] and len(rest) > 1:
            program, rest = f"-m {rest[1]}", rest[2:]
        found.append(Command(program=program, words=tuple(rest)))
    return found
