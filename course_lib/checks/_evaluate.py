"""Calling a learner's function on cases (in its process) and judging the results (anywhere).

:func:`probe_all` is the half that must run where the learner's function lives; it returns plain
:class:`Outcome` records. :func:`judge_outcomes` is the half that can run anywhere: the self-check
runs it in the kernel, the grader in its own process against references it computed itself.
"""

import os
import re
import traceback
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from .._leaves import shorten
from . import _wire
from ._guard import is_learner_file, is_the_learners_function, standing_in, stops_here, watch
from ._kit import SOURCE_LOCATION, returned_none
from ._plain import NotPlainError
from ._registry import get_exercise
from ._spec import (
    Case,
    Exercise,
    Mistake,
    Outcome,
    Status,
    Verdict,
    part_names,
    round_points,
)

_MESSAGE_LIMIT = 400


def _short(text: str, limit: int = _MESSAGE_LIMIT) -> str:
    text = " ".join(text.split()) if "\n" not in text.strip() else text.strip()
    return shorten(text, limit)


def _exception_text(error: BaseException) -> str:
    try:
        text = str(error)
    except Exception:  # noqa: BLE001 (a learner's exception may fail to print)
        text = ""
    return _short(text)


def _where(error: BaseException) -> str:
    """`` (line 3 of count_params)``: the innermost frame of the learner's own code, never of code
    Python generated (a dataclass's ``__setattr__``, whose file is ``<string>``)."""
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        filename = frame.filename
        if filename == "<string>":
            continue
        if filename.startswith("<") or is_learner_file(filename):
            return f" (line {frame.lineno} of {frame.name})"
    return ""


def ensure_plain(value: Any) -> Any:
    """``value`` after grading's JSON round trip (``NotPlainError`` if it cannot make it)."""
    try:
        return _wire.loads(_wire.dumps(value))
    except _wire.WireError as error:
        raise NotPlainError(str(error)) from None


def _guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    def guarded(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return guarded


is_the_learners_function(_guarded(len).__code__)


@stops_here
def probe_case(
    exercise: Exercise, fn: Callable[..., Any], case: Case, packages: Sequence[str] = ()
) -> Outcome:
    """Run ``exercise.probe`` on ``fn`` for one case, recording forbidden calls (``_guard``).

    ``packages`` are forbidden packages on top of the exercise's own ``forbidden_modules``.
    """
    with watch(exercise.forbidden, (*exercise.forbidden_modules, *packages)) as seen:
        outcome = _run_probe(exercise, _guarded(fn), case)
    return replace(outcome, flags=tuple(seen.flags))


def _run_probe(exercise: Exercise, fn: Callable[..., Any], case: Case) -> Outcome:
    try:
        value = exercise.probe(fn, case)
    except NotImplementedError as error:
        return Outcome("not_attempted", message=_exception_text(error))
    except NotPlainError as error:
        return Outcome("unreadable", message=str(error))
    except (KeyboardInterrupt, GeneratorExit):
        raise
    except BaseException as error:  # noqa: BLE001 (SystemExit from a learner's sys.exit() included)
        return Outcome(
            "raised", error=type(error).__name__, message=_exception_text(error) + _where(error)
        )
    try:
        return Outcome("returned", value=ensure_plain(value))
    except NotPlainError as error:
        return Outcome("unreadable", message=str(error))


def stand_ins(exercise: Exercise) -> dict[str, Callable[..., Any]]:
    """``{name: stand-in}`` for the exercises ``exercise`` uses (see ``Exercise.uses``)."""
    helpers = {}
    for used in exercise.uses:
        helper = get_exercise(used)
        if helper.stand_in is None:
            raise ValueError(f"exercise {exercise.id} uses {used}, which has no stand_in")
        helpers[helper.name] = helper.stand_in
    return helpers


def probe_all(
    exercise: Exercise,
    fn: Callable[..., Any],
    cases: Sequence[Case],
    stop_early: bool = False,
    namespace: dict[str, Any] | None = None,
    packages: Sequence[str] = (),
) -> list[Outcome]:
    """Outcomes for every case (or up to the first one that did not return, with ``stop_early``).

    The functions of the exercises ``exercise`` uses are replaced by their stand-ins in
    ``namespace`` (by default the globals of ``fn``) while it runs, and put back afterwards.
    """
    if namespace is None:
        namespace = getattr(fn, "__globals__", None)
    outcomes = []
    with standing_in(namespace, stand_ins(exercise)):
        for case in cases:
            outcome = probe_case(exercise, fn, case, packages)
            outcomes.append(outcome)
            if stop_early and outcome.status != "returned":
                break
    return outcomes


def reference_results(exercise: Exercise, cases: Sequence[Case]) -> list[Any]:
    """What the course's reference implementation gives for each case, as plain data."""
    return [ensure_plain(exercise.probe(exercise.reference, case)) for case in cases]


def flag_place(flag: dict[str, Any]) -> str:
    """Where a forbidden call was made, in words: ``line 3 of its cell: `return ...```."""
    filename = flag["file"]
    if filename.startswith("<") or os.path.basename(os.path.dirname(filename)).startswith(
        "ipykernel_"
    ):
        where = f"line {flag['line']} of its cell"
    else:
        where = f"line {flag['line']} of {os.path.basename(filename)}"
    return f"{where}: `{flag['text']}`" if flag["text"] else where


_JAX_ITSELF = (
    "Write it with JAX itself (`jax.tree.leaves`, `jax.tree.map`, `jax.tree.structure`, ...)."
)


def flag_message(
    exercise: Exercise,
    flags: Sequence[dict[str, Any]],
    place: Callable[[dict[str, Any]], str] = flag_place,
) -> str:
    """What the learner is told of forbidden calls: the first, where, and why it does not count."""
    flag, name = flags[0], exercise.name
    reached = flag["reached"]
    if flag["kind"] == "tamper":
        return (
            f"`{name}` switched off the grader's watch of what it calls (`sys.setprofile`), so it "
            "cannot be graded."
        )
    if flag["kind"] == "module":
        package = reached.split(".", 1)[0]
        text = (
            f"`{name}` calls `{reached}` ({place(flag)}): `{package}` may not be used in this "
            "exercise."
        )
    else:
        what = (
            f"the course's reference answer, `{reached}`"
            if flag["kind"] == "reference"
            else f"`{reached}`"
        )
        if flag["file"]:
            text = f"`{name}` calls {what} ({place(flag)})"
        else:
            text = f"`{name}` is {what} itself"
        text += (
            ": that is the course's own version of what this exercise asks you to write, "
            "so it does not count. "
        ) + _JAX_ITSELF
    others = sorted({f["reached"] for f in flags[1:]} - {reached})
    if others:
        text += f" It also calls {', '.join(f'`{other}`' for other in others)}."
    return text


def _about(case: Case) -> str:
    return f"For {case.label}: " if case.label else ""


Steps = tuple[str, str, str, bool]
"""A mistake's next steps: its idea, its fix, the section to reread (see ``Mistake``), and whether
they are a recognised :class:`Mistake`'s rather than the exercise's own hints."""


def _steps(exercise: Exercise) -> Steps:
    return exercise.hints[0], exercise.hints[1], exercise.reread, False


def _mistake_steps(exercise: Exercise, mistake: Mistake) -> Steps:
    return mistake.idea, mistake.fix, mistake.reread or exercise.reread, True


def _case_problem(
    exercise: Exercise, outcome: Outcome, want: Any, case: Case
) -> tuple[Status, str, Steps] | None:
    """``None`` when the case is right, else the status it implies, what went wrong and the next
    steps."""
    if outcome.status == "returned":
        found = judge_value(exercise, outcome.value, want, case)
        if found is None:
            return None
        if isinstance(found, Mistake):
            return "failed", _about(case) + found.what, _mistake_steps(exercise, found)
        return "failed", _about(case) + found, _steps(exercise)
    if outcome.status == "not_attempted":
        return (
            "failed",
            _about(case)
            + f"`{exercise.name}` raised `NotImplementedError`: is part of the stub still there?",
            _steps(exercise),
        )
    if outcome.status == "raised":
        text = _about(case) + f"`{exercise.name}` raised `{outcome.error}`: {outcome.message}"
        behind = exercise.judge_raise and exercise.judge_raise(outcome.error, outcome.message, case)
        if behind:
            return "error", f"{text}\n{behind.what}", _mistake_steps(exercise, behind)
        return "error", text, _steps(exercise)
    return (
        "failed",
        _about(case)
        + f"`{exercise.name}` returned {outcome.message}, which the check cannot compare.",
        _steps(exercise),
    )


_CACHE_MISS = re.compile(r"^\s*TRACING CACHE MISS\b|^\S.* at [^\s:]+\.py:\d+ \(.+\):$")
"""The first line of a cache-miss explanation: JAX's words, or any line that names where the
function was called from, as another release may word it."""
_SEE_ADDRESS = re.compile(r"\s*see https?://\S+")
_STATIC = re.compile(
    r"<class '[\w.]*\bStatic'> with pytree metadata Static\(val=(.*?)\)(?= and|,|$)"
)
_CLASS = re.compile(r"<class '(?:[\w.]*\.)?(\w+)'>")
_PRIVATE_PATH = re.compile(r"\bjax(?:lib)?\.(?:\w+\.)*_\w+\.(\w+)")
_LINE = 98
"""The longest line of a message, indented by two spaces in a report of 100 columns."""
_PUBLIC = {"ArrayImpl": "jax.Array"}
"""JAX's internal classes that a message may name, by their public names."""


def learners_view(message: str) -> str:
    r"""``message`` as a learner should read it: each of JAX's cache-miss explanations cut to the
    line about the learner's own inputs, and no course file, line or JAX-internal class in it.

    >>> print(learners_view("compiled 2 times, expected 1: see the cache-miss explanation below.\n"
    ...     "TRACING CACHE MISS at _kit.py:196 (jit_compile_calls):\n"
    ...     "  for step defined at cells.py:3\n"
    ...     "  all previously seen cache keys differ. For the closest previous key:\n"
    ...     "  different input types:\n"
    ...     "  * at lr, now f32[] and before i32[]\n"
    ...     "  * at x, now f32[3] and before f32[2]"))
    compiled 2 times, expected 1: see the cache-miss explanation below.
    JAX's cache miss explanation: at lr, now f32[] and before i32[]
    >>> learners_view("hashing an object of type <class 'jaxlib._jax.ArrayImpl'> failed")
    'hashing an object of type jax.Array failed'
    """
    kept: list[str] = []
    block: list[str] | None = None
    for line in [*message.splitlines(), ""]:
        if block is not None and line[:1].isspace() and line.strip():
            block.append(line.strip())
            continue
        if block is not None:
            said = _public_names(_explanation(block))
            kept.append(shorten(f"JAX's cache miss explanation: {said}", _LINE))
            block = None
        if _CACHE_MISS.match(line):
            block = []
        else:
            kept.append(line)
    return _public_names("\n".join(kept[:-1]))


def _explanation(block: list[str]) -> str:
    """The line of a cache-miss explanation that is about the learner's inputs: the first
    difference at an input (``* at lr, now …``), else the first difference it lists, with the
    line under it where the difference is only a heading (JAX up to 0.8 nests ``now 0.2 and
    before 0.1`` under ``* key with different value of static args:``), else what it says about
    the function."""
    marked = [i for i, line in enumerate(block) if line.startswith("* ")]
    at_input = [i for i in marked if block[i].startswith("* at ")]
    if marked:
        first = (at_input or marked)[0]
        said = block[first][2:]
        if said.endswith(":") and first + 1 < len(block):
            said = f"{said} {block[first + 1]}"
        return _without_locations(said)
    said_lines = [
        line for line in block if not line.startswith(("for ", "all previously", "different"))
    ]
    return _without_locations(" ".join(said_lines)) or "none given"


def _without_locations(text: str) -> str:
    """``text`` without the files, lines and web addresses that JAX's explanations point to."""
    return _SEE_ADDRESS.sub("", SOURCE_LOCATION.sub("", text))


def _public_names(text: str) -> str:
    """``text`` with JAX's static markers and internal classes by the names a learner knows."""
    text = _STATIC.sub(r"the static value \1", text).replace("before the static value", "before")
    text = text.replace(", so the pytree node metadata does not match", "")
    text = _CLASS.sub(lambda m: _PUBLIC.get(m[1], m[1]), text)
    text = _PRIVATE_PATH.sub(lambda m: _PUBLIC.get(m[1], m[1]), text)
    return re.sub(r"\bArrayImpl\b", _PUBLIC["ArrayImpl"], text)


def _points_text(points: int | float, total: int) -> str:
    return f"{points}/{total} point{'s' if total != 1 else ''}"


def _distinct_flags(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """The forbidden calls of every outcome, each call (what, file, line) once, in order."""
    flags: list[dict[str, Any]] = []
    for outcome in outcomes:
        flags += [
            f
            for f in outcome.flags
            if all(
                (f["reached"], f["file"], f["line"]) != (g["reached"], g["file"], g["line"])
                for g in flags
            )
        ]
    return flags


def _parts_right(right: Sequence[bool], cases: Sequence[Case]) -> tuple[tuple[str, bool], ...]:
    """Each named part of the cases, and whether every case of it is right."""
    return tuple(
        (part, all(ok for ok, case in zip(right, cases, strict=True) if case.part == part))
        for part in part_names(cases)
    )


def judge_outcomes(
    exercise: Exercise,
    outcomes: Sequence[Outcome],
    expected: Sequence[Any],
    cases: Sequence[Case],
    place: Callable[[dict[str, Any]], str] = flag_place,
) -> Verdict:
    """The verdict for one exercise from its outcomes, the reference results and the cases.

    Every case is judged; the first one that is not right decides the message. Points are the
    share of the exercise's named parts whose every case is right (see ``Case.part``). All right:
    ``passed``. Not all: ``failed`` (``error`` when the first wrong case raised and no part is
    right). The stub's ``NotImplementedError`` on every case: ``not_attempted``. A forbidden call
    (see ``_guard``): ``flagged``, 0 points, whatever the answer gave; ``place(flag)`` says where
    the call was made.
    """
    total, name = exercise.points, exercise.name
    flags = _distinct_flags(outcomes)
    if not flags and outcomes and all(o.status == "not_attempted" for o in outcomes):
        return Verdict(
            status="not_attempted",
            points=0,
            max_points=total,
            message=f"`{name}` still raises `NotImplementedError`: not attempted yet.",
            cases=len(cases),
            passed_cases=(False,) * len(cases),
        )
    not_run = f"`{name}` was not run on every case."
    if not flags and len(outcomes) < len(cases) and all(o.status == "returned" for o in outcomes):
        return Verdict(
            status="error", points=0, max_points=total, message=not_run, cases=len(cases)
        )
    problems = [
        _case_problem(exercise, o, want, case)
        for o, want, case in zip(outcomes, expected, cases, strict=False)  # stop_early: fewer
    ]
    problems += [("error", not_run, _steps(exercise))] * (len(cases) - len(problems))
    right = tuple(problem is None for problem in problems)
    parts = _parts_right(right, cases)
    earned = round_points(total * sum(ok for _, ok in parts) / len(parts))
    wrong = [(i, problem) for i, problem in enumerate(problems) if problem is not None]
    judged = Verdict(
        status="failed",
        points=earned,
        max_points=total,
        message="",
        cases=len(cases),
        passed_cases=right,
        parts=parts if part_names(cases) != [""] else (),
    )
    if flags:
        message = flag_message(exercise, flags, place)
        if not wrong:
            message += (
                f" Apart from that, it is right on every input ({_points_text(total, total)} if "
                "the instructor allows it)."
            )
        return replace(
            judged,
            status="flagged",
            points=0,
            message=message,
            flags=tuple(flags),
            points_if_allowed=earned,
        )
    if not wrong:
        return replace(
            judged, status="passed", points=total, message=f"passed, {_points_text(total, total)}"
        )
    first, (status, message, (idea, fix, reread, recognised)) = wrong[0]
    message = learners_view(message)
    if earned:
        status = "failed"
        good = [part for part, ok in parts if ok]
        bad = [part for part, ok in parts if not ok]
        message += (
            f"\nRight: {', '.join(good)} ({_points_text(earned, total)}); "
            f"not yet: {', '.join(bad)}."
        )
    return replace(
        judged,
        status=status,
        message=message,
        case=first,
        idea=idea,
        fix=fix,
        reread=reread,
        mistake=recognised,
    )


def judge_value(exercise: Exercise, got: Any, expected: Any, case: Case) -> str | Mistake | None:
    """``exercise.judge`` with the mistake every exercise shares (a missing ``return``) in front."""
    if got is None and expected is not None:
        return returned_none(exercise.name)
    try:
        return exercise.judge(got, expected, case)
    except Exception as error:  # noqa: BLE001 (an odd result must not crash the judge)
        return (
            f"the result could not be compared with the expected one ({type(error).__name__}: "
            f"{_exception_text(error)})."
        )
