"""Typical wrong answers: a table of them, the first one an answer matches, a lead-in, and the
next steps that several mistakes share.

A judge checks the structure of an answer first, then looks the answer up in a table of
:class:`Variant` records, the usual wrong answers computed from the case's own inputs, and reports
the leaf difference when none matches. Variants are found by their place in the table, never by
their text, so two mistakes that say the same thing stay two.

>>> params, grads = {"w": np.ones(2)}, {"w": np.full(2, 0.5)}
>>> uphill = Mistake("the params moved uphill.", "Descend.", "p - lr * g.")
>>> table = [
...     Variant(mistake=Mistake("no lr.", "Scale.", "lr * g."), build=lambda: {"w": 0.5}),
...     Variant(mistake=uphill, build=lambda: {"w": params["w"] + 0.1 * grads["w"]}),
... ]
>>> first_mistake({"w": np.full(2, 1.05)}, table) is uphill
True
>>> lead("at step 2: ", uphill).what
'at step 2: the params moved uphill.'
>>> descend = Steps(idea="Descend.", fix="p - lr * g.")
>>> descend.mistake("the params moved uphill.") == Mistake("the params moved uphill.", "Descend.",
...                                                        "p - lr * g.")
True
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, overload

import numpy as np

from ._kit import JUDGE_ATOL, JUDGE_RTOL, as_judged, trees_close
from ._spec import Mistake

__all__ = ["Steps", "Variant", "first_match", "first_mistake", "lead"]


@dataclass(frozen=True, kw_only=True)
class Variant:
    """One typical wrong answer: the ``mistake`` it is, and ``build()``, which computes that wrong
    answer from the case's inputs (only when the variants before it in a table did not match)."""

    mistake: Mistake
    build: Callable[[], Any]


@dataclass(frozen=True, kw_only=True)
class Steps:
    """The next steps of a mistake that a judge meets in several forms: the ``idea`` it misses,
    the ``fix``, and the section to ``reread`` (the exercise's own when empty). Each form says what
    went wrong in its own words (:meth:`mistake`).

    >>> field = Steps(idea="{field} is data.", fix="Leave {field} a leaf.")
    >>> field.mistake("w is static.", field="w").idea
    'w is data.'
    """

    idea: str
    fix: str
    reread: str = ""

    def mistake(self, what: str, field: str = "") -> Mistake:
        """The mistake ``what`` tells, with these steps; ``{field}`` in them stands for
        ``field``."""
        idea, fix = self.idea.format(field=field), self.fix.format(field=field)
        return Mistake(what, idea, fix, self.reread)


def first_match(
    mine: Any,
    builds: Sequence[Callable[[], Any]],
    *,
    rtol: float = JUDGE_RTOL,
    atol: float = JUDGE_ATOL,
    rebuilt: bool = False,
    exact: bool = False,
) -> int | None:
    """The index of the first wrong answer ``builds[i]()`` that ``mine`` matches
    (:func:`trees_close`, or ``==`` with ``exact``), or ``None``.

    Each answer is built only when those before it did not match; one that cannot be built is not
    the mistake. With ``rebuilt`` each is compared as a judge sees a learner's result, its
    containers rebuilt from plain data (``as_judged``). ``exact`` is for answers that are not
    floats, such as specs or byte counts. NumPy's warnings are silenced throughout.

    >>> first_match([2.0], [lambda: [1.0], lambda: 1 / 0, lambda: [2.0]])
    2
    >>> first_match([1_000_000], [lambda: [1_000_001]]), first_match(["x"], [lambda: ["x"]])
    (0, None)
    >>> first_match([1_000_000], [lambda: [1_000_001]], exact=True)
    >>> first_match(["x"], [lambda: ["x"]], exact=True)
    0
    """
    for index, build in enumerate(builds):
        with np.errstate(all="ignore"):
            try:
                wrong = build()
                if rebuilt:
                    wrong = as_judged(wrong)
            except Exception:  # noqa: BLE001 (a variant that cannot be built is simply not the mistake)
                continue
            if mine == wrong if exact else trees_close(mine, wrong, rtol, atol):
                return index
    return None


def first_mistake(
    mine: Any,
    variants: Sequence[Variant],
    *,
    rtol: float = JUDGE_RTOL,
    atol: float = JUDGE_ATOL,
    rebuilt: bool = False,
    exact: bool = False,
) -> Mistake | None:
    """The mistake of the first variant ``mine`` matches (:func:`first_match`), or ``None``.

    >>> same = Mistake("returned the input.", "Move it.", "p - lr * g.")
    >>> first_mistake([1.0], [Variant(mistake=same, build=lambda: [2.0])]) is None
    True
    """
    builds = [variant.build for variant in variants]
    index = first_match(mine, builds, rtol=rtol, atol=atol, rebuilt=rebuilt, exact=exact)
    return None if index is None else variants[index].mistake


@overload
def lead(text: str, problem: Mistake, after: str = "") -> Mistake: ...
@overload
def lead(text: str, problem: str, after: str = "") -> str: ...
@overload
def lead(text: str, problem: str | Mistake | None, after: str = "") -> str | Mistake | None: ...
def lead(text: str, problem: str | Mistake | None, after: str = "") -> str | Mistake | None:
    """``problem``, a judge's finding, with ``text`` in front of what it says went wrong and
    ``after`` behind it (``None``, no finding, stays ``None``).

    >>> lead("under jit, ", "returned 2."), lead("under jit, ", None)
    ('under jit, returned 2.', None)
    >>> lead("", Mistake("raised.", "Trace.", "Use jnp."), after=" Only under jit.").what
    'raised. Only under jit.'
    """
    if isinstance(problem, Mistake):
        return replace(problem, what=text + problem.what + after)
    return None if problem is None else text + problem + after
