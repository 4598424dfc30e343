"""The grader's probe, in a submission's kernel: call one exercise's function on grading cases.

The grader sends a small cell that drops every ``course_lib.checks`` module from ``sys.modules``,
imports this module afresh from disk (so a submission that patched the checks changes nothing
here), and calls :func:`run`. The outcomes go to a file the grader named, as JSON plain data,
never pickled; the grader judges them in its own process against its own reference results.
"""

import os
from typing import Any

from . import _wire
from ._evaluate import probe_all
from ._registry import get_exercise


def run(
    exercise_id: str,
    seed: int,
    namespace: dict[str, Any],
    out_path: str,
    nonce: str,
    packages: tuple[str, ...] = (),
) -> None:
    """Probe ``namespace[<exercise name>]`` on the grading cases; write the report to ``out_path``.

    While it runs, the functions of the exercises it uses are replaced in ``namespace`` by the
    course's stand-ins (and put back after), and calls into ``packages`` are flagged.
    """
    exercise = get_exercise(exercise_id)
    report: dict[str, Any] = {
        "nonce": nonce,
        "exercise": exercise_id,
        "found": "yes",
        "type": "",
        "outcomes": [],
    }
    fn = namespace.get(exercise.name, _MISSING)
    if fn is _MISSING:
        report["found"] = "missing"
    elif not callable(fn):
        report["found"] = "not_callable"
        report["type"] = type(fn).__name__
    else:
        outcomes = probe_all(
            exercise, fn, exercise.make_cases("grade", seed), namespace=namespace, packages=packages
        )
        report["outcomes"] = [outcome.to_plain() for outcome in outcomes]
    text = _wire.dumps(report)
    partial = f"{out_path}.partial"
    with open(partial, "w", encoding="utf-8") as file:
        file.write(text)
    os.replace(partial, out_path)


_MISSING = object()
