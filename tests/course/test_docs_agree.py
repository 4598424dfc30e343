"""Every number and command of the hand-read pages (README, CONTRIBUTING and docs/*.md) against the
course itself: the counts of lessons, exercises, points and pitfalls and the range of graded
lessons against the lessons, exercise notebooks and the exercise registry; the JAX releases named
against the floor, the lock and the middle releases; each `make` target and variable against the
Makefile; and each option given to `course-grade`, `course-room` or `python -m course_tools...`
against the parser that command builds, caught before it parses anything, so nothing runs."""

from __future__ import annotations

import argparse
import importlib
import json
import re
import tomllib
from collections.abc import Callable, Iterator
from functools import cache

import pytest
from page_support import PAGES, ROOT, Command, code_texts, commands, page_text

from course_lib import JAX_FLOOR
from course_lib.checks import all_exercises
from course_tools.authoring.compat import MIDDLE_RELEASES

GENERATED = ("docs/facilitator.md", "docs/pitfalls.md")
"""Pages `make navigation` writes: their counts come from the lessons by construction."""
WRITTEN = [page for page in PAGES if page not in GENERATED]
NUMBER_WORDS = {
    word: n
    for n, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
}
COUNT = re.compile(
    r"\b(\d+|" + "|".join(NUMBER_WORDS) + r")\s+(lessons|exercises|points|pitfalls"
    r"|exercise\s+notebooks)\b",
    re.IGNORECASE,
)
LESSON_RANGE = re.compile(r"\blessons\s+(\d\d)[–-](\d\d)\b", re.IGNORECASE)
JAX_RELEASE = re.compile(r"\b(?:JAX|jaxlib)(?:\s+and\s+jaxlib)?\s+(\d+\.\d+\.\d+)")
FLOOR_SAID = re.compile(r"\bJAX\b[^.;]{0,30}?\b(?:from|older than|newer than) (\d+\.\d+\.\d+)")
OUTSIDE_OPTIONS = {"--nthreads", "--nworkers"}
"""Options the pages give to another program in prose: a Dask worker's."""
MAKE_VARIABLE_COMMAND = {"COMPAT_FLAGS": "-m course_tools.authoring.compat"}
"""A Makefile variable whose value is options of one of the course's commands."""


def _lessons() -> list[str]:
    return sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _pitfalls() -> list[str]:
    found = []
    for path in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                found += re.findall(r"^### Pitfall (\d+):", "".join(cell["source"]), re.MULTILINE)
    return found


def true_counts() -> dict[str, int]:
    """What a page may say there are, counted from the course."""
    exercises = all_exercises()
    return {
        "lessons": len(_lessons()),
        "exercises": len(exercises),
        "points": round(sum(e.points for e in exercises)),
        "pitfalls": len(_pitfalls()),
        "exercise notebooks": len(list((ROOT / "exercises").glob("[0-9][0-9]_*.ipynb"))),
    }


def _said(number: str) -> int:
    return int(number) if number.isdigit() else NUMBER_WORDS[number.lower()]


def _flat(page: str) -> str:
    return " ".join(page_text(page).split())


def test_the_counts_the_pages_give_are_the_courses() -> None:
    """A count of two or more lessons, exercises, points or pitfalls is the whole course's
    (fewer is a page speaking of one: "one exercise", "0 points")."""
    truth = true_counts()
    wrong = [
        f"{page}: {said} {noun} (the course has {truth[' '.join(noun.lower().split())]})"
        for page in WRITTEN
        for said, noun in COUNT.findall(_flat(page))
        if _said(said) >= 2 and _said(said) != truth[" ".join(noun.lower().split())]
    ]
    assert not wrong, "\n".join(wrong)


def test_the_pages_count_the_course() -> None:
    """The claims above are there to be checked: the front door and the learners' page count."""
    said = {
        (page, " ".join(noun.lower().split()))
        for page in WRITTEN
        for _, noun in COUNT.findall(_flat(page))
    }
    assert {
        ("README.md", "lessons"),
        ("docs/learner.md", "exercises"),
        ("docs/learner.md", "points"),
    } <= said


def test_the_ranges_of_graded_lessons_are_the_courses() -> None:
    graded = sorted({e.id.split(".")[0] for e in all_exercises()})
    wrong = [
        f"{page}: lessons {first}–{last} (the graded lessons are {graded[0]}–{graded[-1]})"
        for page in WRITTEN
        for first, last in LESSON_RANGE.findall(_flat(page))
        if (first, last) != (graded[0], graded[-1])
    ]
    assert not wrong, "\n".join(wrong)


@cache
def locked_jax() -> str:
    lock = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
    (version,) = [p["version"] for p in lock["package"] if p["name"] == "jax"]
    return str(version)


def test_the_jax_releases_named_are_the_courses() -> None:
    """A JAX release named is the floor, the lock's or a middle release, and one that JAX runs
    "from", or is "older" or "newer than", is the floor."""
    known = {JAX_FLOOR, locked_jax(), *MIDDLE_RELEASES}
    wrong = [
        f"{page}: JAX {version}, none of {sorted(known)}"
        for page in PAGES
        for version in JAX_RELEASE.findall(_flat(page))
        if version not in known
    ] + [
        f"{page}: JAX ... {version} said of the floor, which is {JAX_FLOOR}"
        for page in PAGES
        for version in FLOOR_SAID.findall(_flat(page))
        if version != JAX_FLOOR
    ]
    assert not wrong, "\n".join(wrong)


def test_the_grading_time_quoted_is_the_benchmarks() -> None:
    """The graders' page quotes the class size, jobs and wall time of the port-race benchmark's
    quiet run as bench/README.md records them."""
    quoted = re.search(
        r"(\d+) notebooks of lesson \d\d \(half solved, half blank\) took ([\d.]+) s with "
        r"`--jobs (\d+)`: the quiet run of `\.venv/bin/python bench/stress_kernel_ports\.py`",
        _flat("docs/grader.md"),
    )
    recorded = " ".join(page_text("bench/README.md").split())
    size = re.search(r"(\d+) submissions with `--jobs (\d+)`", recorded)
    quiet = re.search(r"\| quiet \| ([\d.]+) \|", recorded)
    assert quoted and size and quiet
    assert (quoted[1], quoted[2], quoted[3]) == (size[1], quiet[1], size[2])


# --- commands ---


@cache
def course_commands() -> dict[str, str]:
    """The course's commands as a page writes them, each to the ``module:function`` that runs it:
    pyproject.toml's console scripts, and each module of `course_tools` that runs with ``python
    -m`` (a package's ``__main__.py``, or a module that parses its arguments when run as a script).
    """
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    found = dict(pyproject["project"]["scripts"])
    for path in sorted((ROOT / "course_tools").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        text = path.read_text(encoding="utf-8")
        if path.name == "__main__.py":
            found[f"-m {module.removesuffix('.__main__')}"] = (
                f"{module.removesuffix('.__main__')}:main"
            )
        elif 'if __name__ == "__main__"' in text and "argparse" in text:
            found[f"-m {module}"] = f"{module}:main"
    return found


class _Parsing(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def parser_of(main: Callable[[list[str]], object]) -> argparse.ArgumentParser:
    """The parser a command's ``main`` builds, caught as it starts to parse: nothing else runs."""

    def caught(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        raise _Parsing(self)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "parse_args", caught)
        patch.setattr(argparse.ArgumentParser, "parse_known_args", caught)
        try:
            main([])
        except _Parsing as parsing:
            return parsing.parser
    raise AssertionError(f"{main.__module__}.{main.__name__} never parsed its arguments")


def options(parser: argparse.ArgumentParser) -> set[str]:
    """Every long option ``parser`` and its subcommands' parsers accept."""
    found = set()
    for action in parser._actions:
        found |= {o for o in action.option_strings if o.startswith("--")}
        if isinstance(action.choices, dict):  # subcommands: name -> parser
            for sub in action.choices.values():
                if isinstance(sub, argparse.ArgumentParser):
                    found |= options(sub)
    return found


def defaults(parser: argparse.ArgumentParser) -> dict[str, object]:
    """The default of every long option of ``parser`` and its subcommands' parsers."""
    found: dict[str, object] = {}
    for action in parser._actions:
        found |= {o: action.default for o in action.option_strings if o.startswith("--")}
        if isinstance(action.choices, dict):
            for sub in action.choices.values():
                if isinstance(sub, argparse.ArgumentParser):
                    found |= defaults(sub)
    return found


@cache
def parser_for(program: str) -> argparse.ArgumentParser:
    module, function = course_commands()[program].split(":")
    return parser_of(getattr(importlib.import_module(module), function))


@cache
def accepted(program: str) -> frozenset[str]:
    """The long options the course's command ``program`` accepts."""
    return frozenset(options(parser_for(program)))


def page_commands(page: str) -> Iterator[Command]:
    for text in code_texts(page_text(page)):
        yield from commands(text)


@cache
def makefile() -> tuple[frozenset[str], str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([A-Za-z][\w.-]*)\s*:(?!=)", text, re.MULTILINE))
    return frozenset(targets), text


@pytest.mark.parametrize("page", PAGES)
def test_each_make_target_and_variable_exists(page: str) -> None:
    targets, text = makefile()
    wrong = []
    for command in page_commands(page):
        if command.program != "make":
            continue
        for word in command.words:
            if word.startswith("-"):
                continue
            variable, is_setting, value = word.partition("=")
            if not is_setting:
                if word not in targets:
                    wrong.append(f"make {word}: the Makefile has no target {word}")
            elif not re.search(rf"\$[({{]{variable}[)}}]", text):
                wrong.append(f"make {word}: the Makefile uses no variable {variable}")
            elif variable in MAKE_VARIABLE_COMMAND:
                program = MAKE_VARIABLE_COMMAND[variable]
                given = Command(program=program, words=tuple(value.split()))
                wrong += [
                    f"make {word}: {program} takes no {flag}"
                    for flag in given.flags()
                    if flag not in accepted(program)
                ]
    assert not wrong, f"{page}:\n  " + "\n  ".join(wrong)


@pytest.mark.parametrize("page", PAGES)
def test_each_option_of_the_courses_commands_is_accepted(page: str) -> None:
    """Each command of the course named exists, and the options given to it are its own; an option
    named alone in prose (`--jobs N`) is one of the course's commands', or another program's said
    here."""
    everyone = frozenset(OUTSIDE_OPTIONS).union(*(accepted(p) for p in course_commands()))
    wrong = []
    for command in page_commands(page):
        if command.program in course_commands():
            wrong += [
                f"{command.program} {flag}: not one of its options"
                for flag in command.flags()
                if flag not in accepted(command.program)
            ]
        elif command.program.startswith("-m course_tools") or (
            command.program.startswith("course-") and command.words  # not a name: `course-contents`
        ):
            wrong.append(f"{command.program}: not a command of the course")
        elif command.program.startswith("--"):
            alone = Command(program="", words=(command.program, *command.words))
            wrong += [
                f"{flag}: no command of the course takes it"
                for flag in alone.flags()
                if flag not in everyone
            ]
    assert not wrong, f"{page}:\n  " + "\n  ".join(wrong)


def test_the_pages_name_commands_to_check() -> None:
    """The tests above read what they should: the pages give make targets and variables, options
    of course-grade and course-room, and `python -m course_tools...` commands."""
    programs = {c.program for page in PAGES for c in page_commands(page)}
    assert {"make", "course-grade", "course-room", "-m course_tools.grade"} <= programs
    assert any(p.startswith("-m course_tools.authoring.") for p in programs)
    assert set(course_commands()) >= {"course-grade", "course-room", "-m course_tools.grade"}


NUMBER = r"(\d+(?:\.\d+)?)\b(?! times)"  # "default 10 times the cell limit" is a rule
DEFAULT_SAID = re.compile(
    rf"`(--[a-z][\w-]*)[^`]*` (?:\([^()]*?\bdefault:? {NUMBER}|defaults to {NUMBER})"
)


@pytest.mark.parametrize("page", PAGES)
def test_each_default_the_pages_give_is_the_options(page: str) -> None:
    """ "`--timeout S` (per cell, default 30)" and "`--port` defaults to 8765": the number is the
    default of that option in a command of the course that has it."""
    wrong = []
    for flag, said, also in DEFAULT_SAID.findall(_flat(page)):
        number = float(said or also)
        actual = [
            defaults(parser_for(p))[flag]
            for p in course_commands()
            if flag in defaults(parser_for(p))
        ]
        if not any(isinstance(a, int | float) and a == number for a in actual):
            wrong.append(f"{flag}: default {said or also} (the options' defaults: {actual})")
    assert not wrong, f"{page}:\n  " + "\n  ".join(wrong)
