"""Calling a learner's function on cases (in the learner's process) and judging what came back (anywhere).

:func:`probe_all` is the half that must run where the learner's function lives; it returns plain
:class:`Outcome` records. :func:`judge_outcomes` is the half that can run anywhere: the self-check
runs it in the kernel, the grader in its own process against references it computed itself.
"""

import inspect
import os
import sys
import textwrap
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from . import _wire
from ._guard import REFERENCE, ForbiddenCall, forbid, static_uses, watch_references
from ._plain import Unplain
from ._spec import Case, Exercise, Outcome, Verdict

_MESSAGE_LIMIT = 400


def _short(text: str, limit: int = _MESSAGE_LIMIT) -> str:
    text = " ".join(text.split()) if "\n" not in text.strip() else text.strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _exception_text(error: BaseException) -> str:
    try:
        text = str(error)
    except Exception:  # noqa: BLE001 (a learner's exception may fail to print)
        text = ""
    return _short(text)


_LIBRARY_DIRS = tuple(
    os.path.join(os.path.realpath(path), "")
    for path in {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.dirname(__file__))}
)


def _where(error: BaseException) -> str:
    """`` (line 3 of count_params)``: the innermost frame of the learner's code, not JAX's or ours."""
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        filename = frame.filename
        if filename.startswith("<") or not os.path.realpath(filename).startswith(_LIBRARY_DIRS):
            return f" (line {frame.lineno} of {frame.name})"
    return ""


def ensure_plain(value: Any) -> Any:
    """``value`` after the same JSON round trip that grading uses (raises ``Unplain`` if impossible)."""
    try:
        return _wire.loads(_wire.dumps(value))
    except _wire.WireError as error:
        raise Unplain(str(error)) from None


def probe_case(exercise: Exercise, fn: Callable[..., Any], case: Case) -> Outcome:
    """Run ``exercise.probe`` on the learner's ``fn`` for one case, with the forbidden names refused."""
    refused: list[str] = []

    def guarded(*args: Any, **kwargs: Any) -> Any:
        seen: list[str] = []
        used: list[str] = []
        try:
            with forbid(exercise.forbidden) as seen, watch_references() as used:
                return fn(*args, **kwargs)
        finally:
            refused.extend(seen + used)

    try:
        value = exercise.probe(guarded, case)
    except ForbiddenCall:
        value = None
    except NotImplementedError as error:
        if not refused:
            return Outcome("not_attempted", message=_exception_text(error))
    except Unplain as error:
        if not refused:
            return Outcome("unreadable", message=str(error))
    except (KeyboardInterrupt, GeneratorExit):
        raise
    except BaseException as error:  # noqa: BLE001 (SystemExit from a learner's sys.exit() included)
        if not refused:
            return Outcome("raised", error=type(error).__name__, message=_exception_text(error) + _where(error))
    if refused:
        return Outcome("forbidden", message=", ".join(sorted(set(refused))))
    try:
        return Outcome("returned", value=ensure_plain(value))
    except Unplain as error:
        return Outcome("unreadable", message=str(error))


def probe_all(exercise: Exercise, fn: Callable[..., Any], cases: Sequence[Case], stop_early: bool = False) -> list[Outcome]:
    """Outcomes for every case (or up to the first one that did not return, with ``stop_early``)."""
    outcomes = []
    for case in cases:
        outcome = probe_case(exercise, fn, case)
        outcomes.append(outcome)
        if stop_early and outcome.status != "returned":
            break
    return outcomes


def reference_results(exercise: Exercise, cases: Sequence[Case]) -> list[Any]:
    """What the course's reference implementation gives for each case, as plain data."""
    return [ensure_plain(exercise.probe(exercise.reference, case)) for case in cases]


def source_uses(exercise: Exercise, fn: Any) -> list[str]:
    """Forbidden names found in the source of ``fn`` (empty when the source cannot be read)."""
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return []
    return static_uses(source, exercise.forbidden)


def forbidden_message(exercise: Exercise, names: Sequence[str], found_where: str) -> str:
    listed = ", ".join("the course's reference answer" if name == REFERENCE else f"cl.{name}" for name in names)
    return (
        f"{exercise.name} uses {listed} ({found_where}): that is the course's own version of what this "
        "exercise asks you to write, so it does not count. Write it with JAX itself "
        "(jax.tree.leaves, jax.tree.map, jax.tree.structure, ...)."
    )


def _about(case: Case) -> str:
    return f"For {case.label}: " if case.label else ""


def judge_outcomes(
    exercise: Exercise,
    outcomes: Sequence[Outcome],
    expected: Sequence[Any],
    cases: Sequence[Case],
    static: Sequence[str] = (),
) -> Verdict:
    """The verdict for one exercise from its outcomes, the reference results and the cases.

    ``static`` lists forbidden names found in the learner's source. The first case that is not
    right decides the message. A wrong answer or a forbidden call is ``failed``; an exception is
    ``error``; the stub's ``NotImplementedError`` on every case is ``not_attempted``.
    """
    total = exercise.points

    def verdict(status: str, message: str, index: int | None = None) -> Verdict:
        return Verdict(status, total if status == "passed" else 0, total, message, index, len(cases))  # type: ignore[arg-type]

    if static:
        return verdict("failed", forbidden_message(exercise, static, "found in your code"))
    if outcomes and all(o.status == "not_attempted" for o in outcomes):
        return verdict("not_attempted", f"{exercise.name} still raises NotImplementedError: not attempted yet.")
    if len(outcomes) < len(cases) and all(o.status == "returned" for o in outcomes):
        return verdict("error", f"{exercise.name} was not run on every case.")
    for index, (outcome, want, case) in enumerate(zip(outcomes, expected, cases)):
        if outcome.status == "returned":
            message = judge_value(exercise, outcome.value, want, case)
            if message is not None:
                return verdict("failed", _about(case) + message, index)
        elif outcome.status == "not_attempted":
            return verdict(
                "failed", _about(case) + f"{exercise.name} raised NotImplementedError: is part of the stub still there?", index
            )
        elif outcome.status == "raised":
            return verdict("error", _about(case) + f"{exercise.name} raised {outcome.error}: {outcome.message}", index)
        elif outcome.status == "forbidden":
            names = outcome.message.split(", ")
            return verdict("failed", forbidden_message(exercise, names, "called while it ran"), index)
        else:
            return verdict(
                "failed", _about(case) + f"{exercise.name} returned {outcome.message}, which the check cannot compare.", index
            )
    return verdict("passed", f"passed, {total}/{total} point{'s' if total != 1 else ''}")


def judge_value(exercise: Exercise, got: Any, expected: Any, case: Case) -> str | None:
    """``exercise.judge`` with the hints every exercise shares (a missing ``return``) in front."""
    if got is None and expected is not None:
        return f"{exercise.name} returned None: missing `return`?"
    try:
        return exercise.judge(got, expected, case)
    except Exception as error:  # noqa: BLE001 (an odd result must not crash the judge)
        return f"the result could not be compared with the expected one ({type(error).__name__}: {_exception_text(error)})."
