"""JAX's messages withheld or reworded, to show that a self-check's hint does not depend on them.

JAX 0.11.2 wrote "cache miss explanation unavailable" where 0.10 explained a static argument, and a
check that chose its hint by reading the explanation told a learner who made ``factor`` static that
they jitted a new function. The checks now find a cause with their own probes and quote JAX only
as supporting detail. A lesson's tests show it with :func:`withhold_jax_wording`: every text a check
could read from JAX (the cache-miss explanations it captures, the exception messages its probes
record through ``error_text``) is replaced, and the typical wrong answer must still get its
targeted hint.

Two wordings: ``"unavailable"`` (nothing to read: each explanation is JAX 0.11's
:data:`UNAVAILABLE`, each error a plain ``TypeError`` or ``ValueError`` with no message worth the
name) and ``"reworded"`` (the same facts in other words: every phrase a check once looked for is
replaced, :data:`REWORDINGS`).

Test modules import this one by name (``tests/checks`` is on pytest's ``pythonpath``).
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest

import course_lib as cl
from course_lib.checks._kit import error_text  # what every lesson module reads errors with

UNAVAILABLE = "cache miss explanation unavailable"
"""What JAX 0.11.2 wrote for a miss that 0.10 explained."""

WORDINGS = ("unavailable", "reworded")

REWORDINGS = {
    "TRACING CACHE MISS": "RETRACED",
    "never seen function": "a callable new to the cache",
    "seen another function defined on the same line": "another callable from that line",
    "defined at": "from",
    "Static(val=": "StaticArg(",
    "different value of static args": "static values changed",
    "weak_type": "weakness",
    "weak-types": "weakness",
    "i32[]": "int32 scalar",
    "f32[]": "float32 scalar",
    "symmetric difference of key sets": "keys on one side only",
    "different input pytree": "the argument tree changed",
    "different input types": "the argument avals changed",
    "pytree": "tree",
    "same pytree structure": "one tree layout",
    "structure": "layout",
    "dtypes do not match": "element types disagree",
    "shapes do not match": "dimensions disagree",
    "dtype": "element type",
    "shape": "dimensions",
    "must have equal output types": "need identical outputs",
    "concrete value": "known value",
    "TracerBoolConversionError": "BoolOfTracerError",
    "ConcretizationTypeError": "AbstractValueError",
    "Tracer": "Placeholder",
    "tracer": "placeholder",
    "different leading axis sizes": "first dimensions that disagree",
    "container (pytree) structure as the args tuple": "layout of the argument tuple",
    "tuple of length": "tuple with",
    "inconsistent sizes": "sizes that disagree",
    "tree prefix": "leading subtree",
    "prefix": "head",
    "Custom node type mismatch": "node kinds differ",
    "Expected": "Wanted",
    "Object arrays": "Arrays of objects",
    "pickle": "serialise",
    "unhashable": "cannot be hashed",
    "Non-hashable": "Unhashable",
    "list": "sequence",
    "carry": "loop state",
}
"""Each phrase a check once chose its hint by, and another way to say it (longest first when
applied, case-sensitive)."""

_PHRASES = re.compile("|".join(re.escape(p) for p in sorted(REWORDINGS, key=len, reverse=True)))


def reword(text: str) -> str:
    """``text`` with every phrase of :data:`REWORDINGS` said the other way.

    >>> reword("TRACING CACHE MISS: never seen function <lambda> defined at cell.py:3")
    'RETRACED: a callable new to the cache <lambda> from cell.py:3'
    """
    return _PHRASES.sub(lambda m: REWORDINGS[m[0]], text)


def _plain_type(error: BaseException) -> str:
    """The built-in exception class an error is (``TypeError`` for JAX's tracer errors)."""
    return next(c.__name__ for c in type(error).__mro__ if c.__module__ == "builtins")


def raising_withheld(fn: Callable[..., Any], wording: str) -> Callable[..., Any]:
    """``fn``, as if the library underneath had worded its errors otherwise: with ``"reworded"`` an
    exception keeps its class and gets its message reworded; with ``"unavailable"`` it becomes a
    plain exception of the built-in class it derives from (``TypeError`` for JAX's tracer errors),
    whose message says nothing.

    >>> def fails():
    ...     raise ValueError("Non-hashable static arguments are not supported")
    >>> raising_withheld(fails, "reworded")()
    Traceback (most recent call last):
    ValueError: Unhashable static arguments are not supported
    """

    @functools.wraps(fn)
    def withheld(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as error:
            if wording == "unavailable":
                plain = next(c for c in type(error).__mro__ if c.__module__ == "builtins")
                raise plain("error message unavailable") from None
            error.args = (reword(str(error)),)
            raise

    return withheld


def withhold_jax_wording(
    monkeypatch: pytest.MonkeyPatch, wording: str, *modules: ModuleType
) -> None:
    """Until the test ends, what checks read of JAX's messages says nothing (``"unavailable"``) or
    says it in other words (``"reworded"``).

    The explanations ``course_lib.capture_cache_misses`` collects are replaced when its block ends
    (during the block the list keeps its length, which is all a compile count reads), and each of
    ``modules`` (lesson modules) gets an ``error_text`` that withholds or rewords the message.
    """
    if wording not in WORDINGS:
        raise ValueError(f"wording is one of {WORDINGS}, not {wording!r}")
    capture = cl.capture_cache_misses

    def say(text: str) -> str:
        return UNAVAILABLE if wording == "unavailable" else reword(text)

    @contextlib.contextmanager
    def withheld() -> Iterator[list[str]]:
        with capture() as misses:
            yield misses
        misses[:] = [say(text) for text in misses]

    def withheld_error_text(error: BaseException, limit: int = 300, lines: int = 1) -> str:
        if wording == "unavailable":
            return f"{_plain_type(error)}: error message unavailable"
        return reword(error_text(error, limit, lines))

    monkeypatch.setattr(cl, "capture_cache_misses", withheld)
    for module in modules:
        monkeypatch.setattr(module, "error_text", withheld_error_text)
