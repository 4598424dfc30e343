"""The calls a learner makes: ``check`` after each exercise, ``progress`` at the end of an
exercise notebook, and ``ready`` at the end of lesson 00's self-test.

In a workshop room (``_room``), ``check`` and ``ready`` also send the instructor one event each:
a check's outcome, the hint step the learner saw and, when the check recognised a mistake, its id
and its idea; ``ready``'s outcome, JAX's version and backend, and what failed.
"""

import dataclasses
import functools
import os
import sys
import types
import zlib
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from .._leaves import shorten
from ._evaluate import judge_outcomes, probe_all, reference_results
from ._kit import error_text
from ._panel import CheckPanel, Row, Tone
from ._picture import in_notebook, structure_picture
from ._plain import describe
from ._registry import exercises, get_exercise
from ._room import OUTCOMES, mark_start, send_event, setup_failure
from ._spec import Exercise, Status, Verdict, round_points

_strict_override: bool | None = None
# Per exercise: the mistake the last failed check was about (its mistake_id) and how many of its two
# hints were shown then.
_hints_shown: dict[str, tuple[str, int]] = {}
_references: dict[str, list[Any]] = {}
# Per exercise: the function its last check judged, the globals it read then, and the verdict,
# which progress() shows again while the learner's name holds that very function and those globals
# are the same objects.
_last_verdicts: dict[str, tuple[Any, dict[str, Any] | None, Verdict]] = {}


class CheckFailedError(AssertionError):
    """A self-check did not pass while checks are strict (under ``CI``, for instance)."""


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() not in ("", "0", "false", "no", "off")


def set_strict(strict: bool | None) -> None:
    """Make checks raise on failure (``True``), never (``False``), or as the environment says."""
    global _strict_override
    _strict_override = strict


def is_strict() -> bool:
    """Whether failing checks raise: ``set_strict``, else ``COURSE_STRICT_CHECKS``, else ``CI``."""
    if _strict_override is not None:
        return _strict_override
    if os.environ.get("COURSE_STRICT_CHECKS") is not None:
        return _truthy(os.environ["COURSE_STRICT_CHECKS"])
    return _truthy(os.environ.get("CI"))


def reset_hints() -> None:
    """Forget how many hints were shown, and the verdicts kept for ``progress`` (a fresh kernel
    does the same)."""
    _hints_shown.clear()
    _last_verdicts.clear()


def evaluate(exercise: Exercise, fn: Any) -> Verdict:
    """Run the self-check cases of ``exercise`` on ``fn`` and judge them against the reference.

    The functions of the exercises it uses are replaced by stand-ins in ``fn``'s globals while it
    runs (see ``Exercise.uses``), as the grader does, so each check judges its own exercise.
    """
    return _evaluate(exercise, fn, sys._getframe(1).f_globals)[0]


def _evaluate(
    exercise: Exercise, fn: Any, namespace: dict[str, Any]
) -> tuple[Verdict, tuple[Any, Any] | None]:
    """The verdict, and the learner's and the reference's results for the case it is about (when
    the learner's function returned there)."""
    cases = exercise.make_cases("check")
    if exercise.id not in _references:
        _references[exercise.id] = reference_results(exercise, cases)
    if not callable(fn):
        message = f"expected the function `{exercise.name}`, got {describe(fn)}."
        return Verdict(status="error", points=0, max_points=exercise.points, message=message), None
    outcomes = probe_all(exercise, fn, cases)
    verdict = judge_outcomes(exercise, outcomes, _references[exercise.id], cases)
    _last_verdicts[exercise.id] = (fn, globals_read(fn, namespace), verdict)
    at = verdict.case
    if at is None or at >= len(outcomes) or outcomes[at].status != "returned":
        return verdict, None
    return verdict, (outcomes[at].value, _references[exercise.id][at])


def _points(verdict: Verdict) -> str:
    return f"{verdict.points}/{verdict.max_points} point{'s' if verdict.max_points != 1 else ''}"


_NEXT = (
    "run the check again for a hint",
    "run the check again for the fix",
    "that was the last hint",
)
"""How the header of a failed check's report ends, by the hint step it shows."""


def _report(exercise: Exercise, verdict: Verdict) -> tuple[CheckPanel, int]:
    """What the check shows, and the hint step it reaches (0 when it shows no hint): the first
    failure with a mistake says what went wrong and where; the second adds the idea and the lesson
    section behind it, the third the fix, so that each run keeps what the runs before it showed."""
    head = {"exercise": exercise.id, "points": _points(verdict)}
    if verdict.status == "passed":
        cases = f"{verdict.cases} case{'' if verdict.cases == 1 else 's'}"
        return CheckPanel(
            exercise=exercise.id, tone="passed", word="passed", points=f"{head['points']}, {cases}"
        ), 0
    if verdict.status == "not_attempted":
        waiting = Row(
            text=f"`{exercise.name}` still raises `NotImplementedError`. Replace that line with "
            "your code, run the cell, then run this check again."
        )
        return CheckPanel(
            exercise=exercise.id, tone="waiting", word="not attempted yet", rows=(waiting,)
        ), 0
    flagged = verdict.status == "flagged"
    tone: Tone = "flagged" if flagged else "incorrect"
    word = "flagged, it does not count" if flagged else "incorrect"
    what = Row(text=verdict.message)
    if not verdict.idea:
        return CheckPanel(**head, tone=tone, word=word, rows=(what,)), 0
    # The first failure with a mistake says what went wrong; each further one, with the same
    # mistake, adds the next step: the idea, then the fix. Another mistake starts again.
    this = mistake_id(exercise.id, verdict.idea, verdict.fix)
    mistake, seen = _hints_shown.get(exercise.id, ("", -1))
    level = min(seen + 1, 2) if mistake == this else 0
    _hints_shown[exercise.id] = (this, level)
    rows = [what]
    if verdict.case is not None:
        case = exercise.make_cases("check")[verdict.case]
        shown = case.shown or ", ".join(describe(arg, 200) for arg in case.args)
        rows.append(Row(label="input", text=shown, code=True))  # the panel fits it to its line
    hints = [
        Row(label="hint 1/2, the idea", text=verdict.idea_text()),
        Row(label="hint 2/2, the fix", text=verdict.fix),
    ]
    rows += hints[:level]
    panel = CheckPanel(**head, tone=tone, word=word, next_step=_NEXT[level], rows=tuple(rows))
    return panel, level


IDEA_LIMIT = 300
"""The most characters of a mistake's idea, and of its fix, that a room's event carries."""


def mistake_id(exercise_id: str, idea: str, fix: str) -> str:
    """A short name for a mistake of an exercise, the same on every run: the exercise's id and a
    hash of the mistake's idea and fix together, so that two mistakes sharing an idea stay two
    (32 ASCII characters at most, for ids as long as the longest). Nothing of the learner's
    answer goes into it: a :class:`Mistake`'s ``what`` is left out.

    >>> idea = "A parameter is one entry of an array."
    >>> mistake_id("01.count_params", idea, "Add up leaf.size over the leaves.")
    '01.count_params/5e50db56'
    >>> mistake_id("01.count_params", idea, "Skip the None subtrees.")
    '01.count_params/4df7b5c4'
    """
    both = "\n".join([idea, fix]).encode()
    return f"{exercise_id}/{zlib.crc32(both):08x}"


def _check_event(exercise_id: str, verdict: Verdict | None, step: int) -> dict[str, Any]:
    """The room's event for one check: its outcome, the hint step shown and, when the check
    recognised a mistake, which one, its idea and its fix (for the instructor's dashboard)."""
    outcome = "error" if verdict is None else OUTCOMES.get(verdict.status, "error")
    event = {"kind": "check", "exercise": exercise_id, "outcome": outcome, "hint": step}
    if verdict is not None and verdict.mistake:
        event["mistake"] = mistake_id(exercise_id, verdict.idea, verdict.fix)
        event["idea"] = shorten(verdict.idea, IDEA_LIMIT)
        event["fix"] = shorten(verdict.fix, IDEA_LIMIT)
    return event


def check(exercise_id: str, fn: Callable[..., Any], *, strict: bool | None = None) -> None:
    """Check the learner's answer to one exercise and print what to do next.

    Prints "passed" with the points, "not attempted yet" while the stub still raises
    ``NotImplementedError``, or "incorrect" with what went wrong on the first failing case; each
    further failing call with the same mistake adds one more hint under it, the idea and then the
    fix, chosen for that mistake. Never prints the solution. In a notebook the report is a panel
    (``_panel.CheckPanel``: HTML, with the same plain text beside it), and a result whose
    structure differs from the expected one is also drawn against it, structure only
    (``viz.draw_diff``; see ``_picture``), under the panel. When
    checks are strict (``strict=True``, ``COURSE_STRICT_CHECKS=1`` or ``CI`` set), anything but
    "passed" raises :class:`CheckFailedError` with the same text instead of printing it. A check
    that fails before it can judge (an unknown id, a broken case) tells the room so, then raises.
    """
    mark_start(exercise_id)  # in a room: a check that never ends shows as running
    try:
        exercise = get_exercise(exercise_id)
        verdict, results = _evaluate(exercise, fn, sys._getframe(1).f_globals)
    except Exception:
        setup = setup_failure()  # JAX cannot start here: the learner's setup, not their answer
        if setup is not None and not (is_strict() if strict is None else strict):
            print(setup)
            return
        if setup is not None:
            raise CheckFailedError(setup) from None
        send_event(_check_event(str(exercise_id), None, 0))
        raise
    panel, step = _report(exercise, verdict)
    send_event(_check_event(exercise.id, verdict, step))
    if verdict.status != "passed" and (is_strict() if strict is None else strict):
        raise CheckFailedError(panel.text)
    if not in_notebook():
        print(panel.text)
        return
    picture = structure_picture(*results) if results else None
    if picture is not None:
        note = Row(text="(the picture below marks where your result's structure differs)")
        panel = dataclasses.replace(panel, rows=(*panel.rows, note))
    from IPython.display import display  # in a notebook, IPython is already loaded

    display(panel)
    if picture is not None:
        display(picture)


_WORDS = {
    "passed": "passed",
    "failed": "incorrect",
    "flagged": "flagged",
    "error": "incorrect",
    "not_attempted": "not attempted",
    "missing": "missing",
}


def globals_read(fn: Any, namespace: dict[str, Any]) -> dict[str, Any] | None:
    r"""The globals of ``namespace`` (a notebook's) that ``fn`` reads, by name, with those read by
    what it reaches from there: the namespace's functions, their closures and default arguments,
    what a wrapper wraps (``jax.jit``, ``functools.partial``, ``functools.wraps``), the methods of
    the namespace's classes, and the items of containers. ``None`` where it reaches an object it
    cannot see into (a library's object that is not a module, a function, a class, an array or JAX's
    data; or more than a few thousand objects): then a kept verdict is not to be trusted. What no
    walk sees is an object changed in place.

    >>> namespace = {"RATE": 0.5}
    >>> exec("def half(x):\n    return x * RATE\ndef step(x):\n    return half(x) + 1", namespace)
    >>> sorted(globals_read(namespace["step"], namespace))
    ['RATE', 'half']
    """
    try:
        return _walk(fn, namespace)
    except Exception:  # noqa: BLE001 (whatever a learner's object raises: nothing to trust)
        return None


_SEEN_THROUGH = (
    type(None), bool, int, float, complex, str, bytes, types.ModuleType,
    types.BuiltinFunctionType, np.ndarray, np.generic, np.ufunc, type(np.size), jax.Array,
)  # fmt: skip
"""What a walk takes as it is: data, modules, and NumPy's and Python's own functions."""
_RULES = ("fwd", "bwd", "jvp")
"""Where ``jax.custom_vjp`` and ``jax.custom_jvp`` keep the rules given to them."""


def _walk(fn: Any, namespace: dict[str, Any]) -> dict[str, Any] | None:
    read: dict[str, Any] = {}
    followed: dict[int, Any] = {}  # by id, the objects kept so that no id is reused
    todo = [fn]
    for _ in range(3000):
        if not todo:
            return read
        value = todo.pop()
        if isinstance(value, _SEEN_THROUGH) or id(value) in followed:
            continue
        followed[id(value)] = value
        if isinstance(value, types.FunctionType):
            if value.__globals__ is not namespace:
                continue  # a library's function
            todo += [cell.cell_contents for cell in value.__closure__ or () if _filled(cell)]
            todo += [*(value.__defaults__ or ()), *(value.__kwdefaults__ or {}).values()]
            todo += [vars(value)["__wrapped__"]] if "__wrapped__" in vars(value) else []
            for code in _codes(value.__code__):
                for name in code.co_names:  # global and attribute names: more is safe
                    if name in namespace and name not in read:
                        read[name] = namespace[name]
                        todo.append(read[name])
        elif isinstance(value, functools.partial):
            todo += [value.func, *value.args, *value.keywords.values()]
        elif isinstance(value, types.MethodType):
            todo += [value.__func__, value.__self__]
        elif isinstance(value, type):  # a class: the methods of one written in the namespace
            methods = _methods(value)
            if any(getattr(method, "__globals__", None) is namespace for method in methods):
                todo += methods
        elif isinstance(value, tuple | list | set | frozenset):
            todo += list(value)
        elif isinstance(value, dict):
            todo += [*value.keys(), *value.values()]
        elif hasattr(value, "__wrapped__"):  # jax.jit's wrapper, or custom_vjp's and its rules
            todo += [value.__wrapped__, *(getattr(value, r) for r in _RULES if hasattr(value, r))]
        elif type(value).__module__ == namespace.get("__name__", "__main__"):
            todo += [type(value), *getattr(value, "__dict__", {}).values()]  # the notebook's
        elif not callable(value) and type(value).__module__.split(".")[0] in ("jax", "jaxlib"):
            continue  # JAX's data: dtypes, shardings, tree definitions
        else:
            return None  # an object whose behaviour the walk cannot see
    return None  # too much to follow


def _methods(cls: type) -> list[Any]:
    """The functions behind ``cls``'s own methods, static and class methods and properties."""
    found: list[Any] = []
    for attribute in vars(cls).values():
        if isinstance(attribute, staticmethod | classmethod):
            found.append(attribute.__func__)
        elif isinstance(attribute, property):
            found += [attribute.fget, attribute.fset, attribute.fdel]
        elif isinstance(attribute, types.FunctionType):
            found.append(attribute)
    return found


def _filled(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (asked for its error only)
    except ValueError:
        return False
    return True


def _codes(code: types.CodeType) -> list[types.CodeType]:
    """``code`` and the code of the functions defined in it, at any depth."""
    found = [code]
    for inner in code.co_consts:
        if isinstance(inner, types.CodeType):
            found += _codes(inner)
    return found


def _same_objects(now: dict[str, Any] | None, then: dict[str, Any] | None) -> bool:
    return (
        now is not None
        and then is not None
        and now.keys() == then.keys()
        and all(now[name] is then[name] for name in now)
    )


def progress(lesson: str, *, strict: bool | None = None) -> None:
    """Print which exercises of ``lesson`` pass, looking up each function in the caller's namespace.

    An exercise whose name still holds the very function its last ``check`` judged, reading the
    same globals (``globals_read``), shows that verdict again without running it; any other is
    judged now. (A verdict does not see an object the function reads changed in place, a dict
    given a new entry say: check it again.) Shows no hints. When checks are strict, raises
    :class:`CheckFailedError` unless all pass.
    """
    namespace = sys._getframe(1).f_globals  # the notebook's namespace when called from a cell
    listed = exercises(lesson)
    if not listed:
        raise KeyError(f"lesson {lesson!r} has no exercises")
    rows: list[tuple[Exercise, Status, int | float, str]] = []
    for exercise in listed:
        if exercise.name not in namespace:
            rows.append((exercise, "missing", 0, f"(no {exercise.name} defined yet: run its cell)"))
            continue
        fn = namespace[exercise.name]
        kept, read, verdict = _last_verdicts.get(exercise.id, (None, None, None))
        if (
            verdict is None
            or kept is not fn
            or not _same_objects(globals_read(fn, namespace), read)
        ):
            verdict = _evaluate(exercise, fn, namespace)[0]
        rows.append((exercise, verdict.status, verdict.points, ""))
    passed = sum(status == "passed" for _, status, _, _ in rows)
    points = round_points(sum(p for _, _, p, _ in rows))
    total = sum(e.points for e in listed)
    width = max(len(e.id) for e in listed)
    lines = [f"Lesson {lesson}: {passed} of {len(rows)} exercises passed, {points}/{total} points"]
    for exercise, status, got, note in rows:
        word = _WORDS.get(status, status)
        lines.append(
            f"  {word:<15}{exercise.id:<{width}}  {got}/{exercise.points}  {note}".rstrip()
        )
    text = "\n".join(lines)
    if passed < len(rows) and (is_strict() if strict is None else strict):
        raise CheckFailedError(text)
    print(text)


def ready() -> None:
    """Lesson 00's last self-test: JAX compiles and differentiates here. Prints the JAX version and
    backend, and in a workshop room tells the instructor that this learner is set up.

    Never raises: what failed is printed, and sent to the room as an error with its reason.
    """
    import jax

    problem, backend = "", ""
    try:
        backend = jax.default_backend()
        problem = _computes_with(jax)
    except Exception as error:  # noqa: BLE001 (reported, never raised: this is the diagnosis)
        problem = error_text(error)
        platforms = os.environ.get("JAX_PLATFORMS", "")
        if not backend and platforms:  # JAX could not start the backend it was told to use
            problem += f" (starting JAX_PLATFORMS={platforms!r})"
    send_event(
        {
            "kind": "ready",
            "outcome": "error" if problem else "passed",
            "jax": jax.__version__,
            "backend": backend,
            "reason": problem,
        }
    )
    on = f"on {backend}" if backend else "here"
    if problem:
        print(f"Not ready: JAX {jax.__version__} {on} failed: {problem}")
    else:
        print(f"Ready: JAX {jax.__version__} compiles and differentiates on the {backend} backend.")


def _computes_with(jax: Any) -> str:
    """``""`` when ``jax`` jits and differentiates a small sum right, else what it got instead."""
    import jax.numpy as jnp
    import numpy as np

    x = jnp.arange(6.0)
    total = float(jax.jit(lambda a: (a**2).sum())(x))
    slope = np.asarray(jax.grad(lambda a: (a**2).sum())(x))
    if total != 55.0 or not np.allclose(slope, 2 * np.arange(6.0)):
        return f"jit gave {total} (expected 55.0) and grad gave {slope} (expected 2x)"
    return ""
