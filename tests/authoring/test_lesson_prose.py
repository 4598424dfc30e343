"""Lessons read lean: no paragraph of prose runs over six source lines, and what differs between JAX
releases is said in one quiet form, an aside the reader may skip.

The aside is a Markdown blockquote that opens with ``**Release note.**``. A blockquote renders alike
in JupyterLab, Colab, VS Code and on the website (a MyST directive such as ``{note}`` would show as
its source in a notebook front end). Lists and tables are not paragraphs: a summary's bullets may
name the release a feature came with.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from course_tools.authoring import navigation

ROOT = Path(__file__).resolve().parents[2]
LESSONS = {path.name[:2]: path for path in navigation.lesson_paths(ROOT)}
MAX_LINES = 6
RELEASE_NOTE = "> **Release note.** "
JAX_RELEASE = re.compile(r"\b0\.(?:[7-9]|1\d)(?:\.\d+)?\b")
"""A JAX release number as the lessons write it: ``0.7``, ``0.8.3``, ``0.10.2``."""
_NOT_PROSE = re.compile(r"\s*(?:[-*+] |\d+\. |\||#|```|<!--|\$\$)")


def paragraphs(markdown: str) -> list[str]:
    """The blocks of a markdown cell that are paragraphs of prose or asides (blockquotes), fenced
    code, lists, tables, headings and comments left out.

    >>> paragraphs("# Title\\n\\nOne\\ntwo.\\n\\n- a list\\n\\n> An aside.\\n\\n```\\nx = 1\\n```")
    ['One\\ntwo.', '> An aside.']
    """
    unfenced = re.sub(r"```.*?```", "", markdown, flags=re.DOTALL)
    blocks = (block.strip("\n") for block in re.split(r"\n\s*\n", unfenced))
    return [block for block in blocks if block.strip() and not _NOT_PROSE.match(block)]


def long_paragraphs(nb: nbformat.NotebookNode) -> list[str]:
    """Each paragraph over `MAX_LINES` source lines, as ``"cell 5, 8 lines: 'The loop ...'"``."""
    return [
        f"cell {index}, {len(block.splitlines())} lines: {block[:60]!r}"
        for index, cell in enumerate(nb.cells)
        if cell.cell_type == "markdown"
        for block in paragraphs(cell.source)
        if len(block.splitlines()) > MAX_LINES
    ]


def release_notes_out_of_form(nb: nbformat.NotebookNode) -> list[str]:
    """Each paragraph that names a JAX release but is not a release note, and each release note
    that is not one blockquote opening with `RELEASE_NOTE`."""
    problems = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        for block in paragraphs(cell.source):
            note = block.startswith(RELEASE_NOTE)
            if JAX_RELEASE.search(block) and not note:
                problems.append(f"cell {index}, names a release in the main text: {block[:70]!r}")
            elif note and not all(line.startswith(">") for line in block.splitlines()):
                problems.append(f"cell {index}, a release note that leaves its blockquote")
            elif block.startswith(">") and not note and "release" in block.lower():
                problems.append(
                    f"cell {index}, an aside on releases in another form: {block[:70]!r}"
                )
    return problems


@pytest.mark.parametrize("lesson", sorted(LESSONS))
def test_no_paragraph_runs_over_six_lines(lesson: str) -> None:
    nb = nbformat.read(LESSONS[lesson], as_version=4)
    found = long_paragraphs(nb)
    assert not found, f"lesson {lesson}: split these paragraphs:\n  " + "\n  ".join(found)


@pytest.mark.parametrize("lesson", sorted(LESSONS))
def test_release_notes_are_asides_in_one_form(lesson: str) -> None:
    nb = nbformat.read(LESSONS[lesson], as_version=4)
    found = release_notes_out_of_form(nb)
    assert not found, (
        f"lesson {lesson}: say what differs by release in an aside of its own, a blockquote that "
        f"opens with {RELEASE_NOTE.strip()!r}:\n  " + "\n  ".join(found)
    )


def test_the_rules_catch_what_they_are_for() -> None:
    long = nbformat.v4.new_markdown_cell("\n".join(f"line {i}" for i in range(7)))
    in_flow = nbformat.v4.new_markdown_cell("On JAX 0.9.2 the message names the key path.")
    other_form = nbformat.v4.new_markdown_cell("> Older releases print less.")
    summary = nbformat.v4.new_markdown_cell("- `vmap` names key paths from JAX 0.9.2 on.")
    nb = nbformat.v4.new_notebook(cells=[long, in_flow, other_form, summary])
    assert long_paragraphs(nb) == [
        "cell 0, 7 lines: 'line 0\\nline 1\\nline 2\\nline 3\\nline 4\\nline 5\\nline 6'"
    ]
    assert [problem.split(",")[0] for problem in release_notes_out_of_form(nb)] == [
        "cell 1",
        "cell 2",
    ]
    fixed = nbformat.v4.new_markdown_cell(
        "The message names the key path.\n\n> **Release note.** That is JAX 0.9.2 and later."
    )
    assert release_notes_out_of_form(nbformat.v4.new_notebook(cells=[fixed])) == []
