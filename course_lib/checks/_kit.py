"""Building blocks for lesson modules: probes, judges, references, plain data and random inputs.

Probes run in the learner's process and return plain data; judges compare two probe results and
return ``None`` or a hint. Random trees mix the containers JAX knows (dict, list, tuple,
namedtuple, ``OrderedDict``), ``None`` subtrees, and leaves of several kinds, from a NumPy
generator, so a case set is the same wherever it is made.

This is the one shelf of helpers for the lesson modules: look here before writing one in a lesson
module, and put a helper that two lessons need here. What is here, by section (``__all__`` lists
it): parts (``in_parts``); probes (``attempt``, ``call_value``, ``call_tree``, ``compile_report``,
``jit_compile_calls``, ``jit_compile_report``, ``repeat_compiles``, ``input_changes``,
``recompiled_calls``, ``miss_of``, ``measured_calls``, ``error_text``, ``SOURCE_LOCATION``,
``returned_instead``, ``leaf_text``); judges (``judge_number``, ``judge_bool``, ``judge_equal``,
``plain_difference``, ``structure_difference``, ``tree_judge``, ``structure_found``,
``judge_compiles``, ``judge_compiles_with_advice``, ``recompile_cause``, ``missing_return``,
``returned_none``, ``trees_close``); references (``as_numpy``, ``scaled``, ``ACTIVATIONS``); plain
data with dtypes (``as_judged``, ``as_float32``, ``dtype_name``, ``dtyped_plain``); random inputs
(``random_f32``, ``random_array``, ``random_shape``, ``small_shape``, ``small_float_leaf``,
``random_float_leaf``, ``random_like``); random trees (``Layer``, ``Point``, ``Opaque``,
``random_leaf``, ``random_tree``, ``float_tree``, ``count_none``).

A hint names a cause that a probe measured: a controlled call, a compile count, the structure,
dtypes and weak types of the inputs, what changed between two calls. The text of JAX's messages
(cache-miss explanations, errors) changes from release to release, so a hint may quote it as
supporting detail but never decide by it; where the probes cannot decide, the hint says what they
measured and no more.
"""

import bisect
import collections
import contextlib
import dataclasses
import functools
import logging
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import course_lib as cl

from .._compile import IPYTHON_CELL
from .._leaves import close_elements, same_structure, shorten
from ._plain import describe, rebuild_tree, to_plain, tree_plain
from ._spec import Case, Mistake

__all__ = [
    "ACTIVATIONS",
    "CONTAINERS",
    "JUDGE_ATOL",
    "JUDGE_RTOL",
    "KEYS",
    "NONE_RECORD",
    "SMALL_SHAPES",
    "SOURCE_LOCATION",
    "Layer",
    "Opaque",
    "Point",
    "as_float32",
    "as_judged",
    "as_numpy",
    "attempt",
    "call_tree",
    "call_value",
    "compile_report",
    "count_none",
    "dtype_name",
    "dtyped_plain",
    "error_text",
    "first_leaf_path",
    "float_tree",
    "in_parts",
    "input_changes",
    "jit_compile_calls",
    "jit_compile_report",
    "judge_bool",
    "judge_compiles",
    "judge_compiles_with_advice",
    "judge_equal",
    "judge_number",
    "leaf_text",
    "measured_calls",
    "miss_of",
    "missing_return",
    "returned_none",
    "plain_difference",
    "random_array",
    "random_f32",
    "random_float_leaf",
    "random_leaf",
    "random_like",
    "random_shape",
    "random_tree",
    "recompile_cause",
    "recompiled_calls",
    "repeat_compiles",
    "returned_instead",
    "scaled",
    "small_float_leaf",
    "small_shape",
    "structure_difference",
    "structure_found",
    "to_python",
    "tree_judge",
    "trees_close",
    "without_backticks",
]

# --- parts ------------------------------------------------------------------------------------


def in_parts(cases: Sequence[Case], parts: Sequence[str]) -> list[Case]:
    """``cases`` with ``parts[i]`` as case ``i``'s part (one name per case, else ``ValueError``).

    Choose parts so that each holds a case that a trivial answer (its input, zeros, ``None``, a
    constant) gets wrong: a part then earns nothing for it.

    >>> [c.part for c in in_parts([Case((1,)), Case((2,))], ["small", "small"])]
    ['small', 'small']
    """
    if len(parts) != len(cases):
        raise ValueError(f"{len(cases)} cases but {len(parts)} part names")
    return [dataclasses.replace(case, part=part) for case, part in zip(cases, parts, strict=True)]


# --- probes ----------------------------------------------------------------------------------


def call_value(fn: Callable[..., Any], case: Case) -> Any:
    """Probe: call ``fn`` on the case and reduce its result to plain data with :func:`to_plain`."""
    return to_plain(fn(*case.args, **case.kwargs))


def call_tree(fn: Callable[..., Any], case: Case) -> Any:
    """Probe: call ``fn`` on the case and record the whole tree it returns (:func:`tree_plain`)."""
    return tree_plain(fn(*case.args, **case.kwargs))


def compile_report(run: Callable[[], Any]) -> dict[str, Any]:
    """Run ``run()`` and report XLA compilations and JAX's cache-miss explanations (for probes).

    Build the inputs before calling this: everything compiled inside counts.
    """
    with cl.count_compiles() as counter, cl.capture_cache_misses() as misses:
        jax.block_until_ready(run())
    return {"compiles": counter.compiles, "misses": list(misses)}


class _ExplainedCompiles(logging.Handler):
    """Which compilations of a :func:`cl.count_compiles` counter JAX explained a cache miss for.

    JAX explains a miss of a function it traces for ``jit`` before compiling it (before tracing it
    from 0.10 on, just after in earlier releases), and explains none for its own eager operations:
    a compilation counts as the learner's when the list of captured explanations grew since the
    compilation before it. Only the list's length is read, never its text, so a new wording of
    JAX's (or none) changes no count. Added to JAX's logger after :func:`cl.capture_cache_misses`
    has added its own handler, it runs after that one.
    """

    def __init__(self, counter: Any, misses: list[str]):
        super().__init__(logging.DEBUG)
        self.counter, self.misses = counter, misses
        self.seen = 0
        self.compiles: set[int] = set()

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.misses) > self.seen:
            self.seen = len(self.misses)
            self.compiles.add(len(self.counter.compiled))


def jit_compile_calls(calls: Sequence[Callable[[], Any]]) -> tuple[list[Any], dict[str, Any]]:
    """Each call's result, and how often jitted functions compiled in each, from empty caches.

    JAX's caches are cleared first (``jax.clear_caches()``), so a count does not depend on what the
    process compiled before. The report is ``{"compiles": n, "misses": [...], "eager": m,
    "per_call": [...], "miss_calls": [...]}``: ``n`` compilations of jitted functions in all,
    ``per_call`` the same by call, ``misses`` JAX's cache-miss explanations (text to show, never to
    decide by) and ``miss_calls`` the call each was logged in. The compilations of JAX's own eager
    operations (``m``) are left out of ``n``: a compilation counts when JAX explained a cache miss
    since the compilation before it (``_ExplainedCompiles``), whatever the explanation says.

    >>> f = jax.jit(lambda x: 2 * x)
    >>> two, three = np.ones(2), np.ones(3)
    >>> _, report = jit_compile_calls([lambda: f(two), lambda: f(two), lambda: f(three)])
    >>> report["compiles"], report["per_call"], report["miss_calls"]
    (2, [1, 0, 1], [0, 2])
    """
    jax.clear_caches()
    results: list[Any] = []
    compiled_after: list[int] = []
    missed_after: list[int] = []
    logger = logging.getLogger("jax")
    with cl.count_compiles() as counter, cl.capture_cache_misses() as misses:
        explained = _ExplainedCompiles(counter, misses)
        logger.addHandler(explained)
        try:
            for call in calls:
                results.append(jax.block_until_ready(call()))
                compiled_after.append(len(counter.compiled))
                missed_after.append(len(misses))
        finally:
            logger.removeHandler(explained)
    mine = [i in explained.compiles for i in range(len(counter.compiled))]
    starts = [0, *compiled_after[:-1]]
    per_call = [sum(mine[a:b]) for a, b in zip(starts, compiled_after, strict=True)]
    miss_calls = [bisect.bisect_right(missed_after, j) for j in range(len(misses))]
    return results, {
        "compiles": sum(mine),
        "misses": list(misses),
        "eager": counter.compiles - sum(mine),
        "per_call": per_call,
        "miss_calls": [min(i, len(calls) - 1) for i in miss_calls],
    }


def jit_compile_report(run: Callable[[], Any]) -> tuple[Any, dict[str, Any]]:
    """``run()``'s result, and how often jitted functions compiled in it, from empty caches.

    The report is :func:`jit_compile_calls`' for the one call ``run``, without its per-call
    entries: ``{"compiles": n, "misses": [...], "eager": m}``.

    >>> f = jax.jit(lambda x: 2 * x)
    >>> result, report = jit_compile_report(lambda: [f(np.ones(2)), f(np.ones(2)), f(np.ones(3))])
    >>> report["compiles"]
    2
    """
    (result,), report = jit_compile_calls([run])
    return result, {key: report[key] for key in ("compiles", "misses", "eager")}


def repeat_compiles(call: Callable[[Any], Any], value: Any, other: Any) -> list[int]:
    """Probe: the compilations of jitted functions in ``call(value)``, in the same call again, and
    in ``call(other)`` (``other`` a value of the same type and shape), from empty caches.

    The counts tell what makes a new cache key (:func:`recompile_cause`), whatever JAX's
    explanation of the misses says.

    >>> scale = jax.jit(lambda x, factor: factor * x, static_argnums=1)
    >>> repeat_compiles(lambda factor: scale(np.ones(2), factor), 0.5, 2.0)
    [1, 0, 1]
    """
    _, report = jit_compile_calls([lambda: call(value), lambda: call(value), lambda: call(other)])
    return list(report["per_call"])


def recompile_cause(counts: Sequence[int]) -> str | None:
    """What :func:`repeat_compiles` measured: ``"function"`` when the same call compiled again (what
    is jitted is new every time), ``"value"`` when only the other value compiled (that value is
    part of the cache key: a static argument, or when the two differ in kind, the kind), else
    ``None``.

    >>> recompile_cause([1, 1, 1]), recompile_cause([1, 0, 1]), recompile_cause([1, 0, 0])
    ('function', 'value', None)
    """
    if len(counts) != 3 or not counts[0]:
        return None
    if counts[1]:
        return "function"
    return "value" if counts[2] else None


_CHANGE_RANK = {"weak_type": 0, "shape": 1, "dtype": 2, "kind": 3}


def recompiled_calls(
    inputs: Sequence[Any],
    per_call: Sequence[int],
    comparable: Callable[[int, int], bool] = lambda i, j: True,
) -> list[dict[str, Any]]:
    """Probe: each call after the first that compiled, and what changed in its inputs.

    ``inputs[i]`` is what call ``i`` handed the jitted function (a tree), ``per_call`` the counts of
    :func:`jit_compile_calls`. For each call that compiled, the earlier call closest to it (among
    those ``comparable(i, j)`` allows) is found: ``{"call": i, "before": j, "changes": ...}`` with
    :func:`input_changes`; ``changes`` that name nothing mean the call compiled although its inputs
    looked the same to the cache key. A call with no earlier comparable call is left out.

    >>> rows = recompiled_calls([{"lr": 0.1}, {"lr": np.float32(0.2)}], [1, 1])
    >>> [(row["call"], row["before"], row["changes"]["leaves"][0]["change"]) for row in rows]
    [(1, 0, 'weak_type')]
    """

    def distance(changes: dict[str, Any]) -> tuple[int, int, int]:
        ranks = [_CHANGE_RANK[leaf["change"]] for leaf in changes["leaves"]]
        return bool(changes["keys"] or changes["structure"]), len(ranks), max(ranks, default=-1)

    rows = []
    for i in range(1, len(inputs)):
        if not per_call[i]:
            continue
        earlier = [(j, input_changes(inputs[i], inputs[j])) for j in range(i) if comparable(i, j)]
        if earlier:
            j, changes = min(earlier, key=lambda pair: distance(pair[1]))
            rows.append({"call": i, "before": j, "changes": changes})
    return rows


def miss_of(report: dict[str, Any], call: int) -> int | None:
    """The index in ``report["misses"]`` of the last explanation logged in call ``call`` (of a
    :func:`jit_compile_calls` report), for :func:`judge_compiles_with_advice` to quote.

    >>> miss_of({"misses": ["a", "b", "c"], "miss_calls": [0, 2, 2]}, 2), miss_of({}, 1)
    (2, None)
    """
    found = [j for j, i in enumerate(report.get("miss_calls", ())) if i == call]
    return found[-1] if found else None


@contextlib.contextmanager
def measured_calls(
    owner: Any, name: str, inspect: Callable[..., Any], every: bool = False
) -> Iterator[list[Any]]:
    """While the block runs, each call of ``owner.name`` that raises (with ``every``, each call) is
    measured: ``inspect`` gets the call's arguments, its result goes into the list yielded, and
    the call returns or raises as before.

    A probe wraps ``jax.lax.scan`` or ``jax.lax.cond`` with it to see what the learner's code handed
    JAX (the carry, the branches) instead of reading JAX's message. ``inspect`` runs where the call
    failed, inside the traces around it; an error of its own leaves nothing in the list. Code that
    took the function under another name before the block (``from jax.lax import scan``) is not
    seen, and the list stays empty. ``owner`` may be a class (``jax.custom_vjp``, ``"__call__"``).

    >>> import types
    >>> box = types.SimpleNamespace(div=lambda a, b: a / b)
    >>> with measured_calls(box, "div", lambda a, b: f"{a} / {b}") as seen:
    ...     _ = box.div(1, 2)
    ...     try:
    ...         _ = box.div(1, 0)
    ...     except ZeroDivisionError:
    ...         pass
    >>> seen
    ['1 / 0']
    """
    own = name in vars(owner)
    original = getattr(owner, name)
    found: list[Any] = []

    def measure(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        try:
            found.append(inspect(*args, **kwargs))
        except Exception:  # noqa: BLE001 (a call that cannot be measured tells nothing)
            pass

    @functools.wraps(original)
    def measured(*args: Any, **kwargs: Any) -> Any:
        try:
            result = original(*args, **kwargs)
        except Exception:
            measure(args, kwargs)
            raise
        if every:
            measure(args, kwargs)
        return result

    setattr(owner, name, measured)
    try:
        yield found
    finally:
        if own:
            setattr(owner, name, original)
        else:
            delattr(owner, name)


def _cache_type(leaf: Any) -> tuple[str, tuple[int, ...], bool] | None:
    """How a jitted function's cache key sees a leaf: dtype, shape and weak type (``None`` for a
    leaf JAX takes for no array)."""
    try:
        aval = jax.typeof(leaf)
    except TypeError:
        return None
    return str(aval.dtype), tuple(int(n) for n in aval.shape), bool(aval.weak_type)


def _type_text(kind: tuple[str, tuple[int, ...], bool] | None, leaf: Any) -> str:
    if kind is None:
        return f"a {type(leaf).__name__}"
    dtype, shape, weak = kind
    return f"{dtype}[{','.join(map(str, shape))}]" + (" weakly typed" if weak else "")


def input_changes(
    now: Any, before: Any, names: tuple[str, str] = ("now", "before")
) -> dict[str, Any]:
    """Probe: what differs between two inputs of a jitted function as its cache key sees them.

    Plain data: ``keys``, the dict keys one holds and the other not (sorted); ``structure``, the
    structures' differences in words (:func:`structure_difference`, the trees called ``names``),
    and when the structures are one, ``leaves``: each leaf whose dtype, shape or weak type
    differs, with its key path, what changed (``"dtype"``, ``"shape"``, ``"weak_type"`` or
    ``"kind"``), both types in words, and the leaf's Python type before (``"float"`` for a
    Python float).

    >>> [leaf] = input_changes({"lr": 0.1}, {"lr": np.float32(0.1)})["leaves"]
    >>> leaf["path"], leaf["change"], leaf["now"], leaf["before"], leaf["was"]
    ("['lr']", 'weak_type', 'float32[] weakly typed', 'float32[]', 'float32')
    >>> input_changes({"a": 1.0}, {"a": 1.0, "b": None})["keys"]
    ['b']
    """
    keys: list[str] = []
    if isinstance(now, dict) and isinstance(before, dict):
        keys = sorted(str(key) for key in set(now) ^ set(before))
    lines = structure_difference(now, before, names)
    leaves: list[dict[str, str]] = []
    if not lines:
        pairs = zip(jax.tree_util.tree_leaves_with_path(now), jax.tree.leaves(before), strict=True)
        for (path, a), b in pairs:
            kind_a, kind_b = _cache_type(a), _cache_type(b)
            if kind_a == kind_b and (kind_a is not None or type(a) is type(b)):
                continue
            if kind_a is None or kind_b is None:
                change = "kind"
            elif kind_a[0] != kind_b[0]:
                change = "dtype"
            elif kind_a[1] != kind_b[1]:
                change = "shape"
            else:
                change = "weak_type"
            leaves.append(
                {
                    "path": jax.tree_util.keystr(path),
                    "change": change,
                    "now": _type_text(kind_a, a),
                    "before": _type_text(kind_b, b),
                    "was": type(b).__name__,
                }
            )
    return {"keys": keys, "structure": lines, "leaves": leaves}


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+|0x[0-9a-fA-F]{6,}")
SOURCE_LOCATION = re.compile(rf",? (?:defined )?at (?:[^\s:]+\.py|{IPYTHON_CELL}):\d+")
"""Where a message names a source file and line (`` defined at model.py:12``, or an IPython
shell's cell): text that differs between machines and runs, left out of what a hint shows."""
_FOLDERS = re.compile(r"(?:/[^\s/:]+)+/([^\s/:]+\.py)")


def error_text(error: BaseException, limit: int = 300, lines: int = 1) -> str:
    """``Type: first line`` of an exception, the same on every machine and in every run.

    Memory addresses and `` at file.py:N`` locations are left out, other paths to a ``.py`` file
    keep only the file's name, and the text is cut to ``limit`` characters (``…`` marks the cut);
    ``Type`` alone when the message is empty or cannot be printed. ``lines`` keeps more of a long
    message. The text is for a hint to show: what a hint says is decided by probes, never by
    what a library's message says.

    >>> error_text(TypeError("<function f at 0x7f3a2c1d> defined at /home/me/model.py:12 failed"))
    'TypeError: <function f> failed'
    >>> error_text(NameError("f defined at <ipython-input-3-9a1f>:2 failed"))
    'NameError: f failed'
    >>> error_text(ValueError("cannot read /home/me/model.py"), limit=20)
    'ValueError: cannot read model.py'
    >>> error_text(KeyError())
    'KeyError'
    >>> print(error_text(ValueError("one\\ntwo\\nthree"), lines=2))
    ValueError: one
    two
    """
    try:
        text = "\n".join(str(error).strip().splitlines()[:lines])
    except Exception:  # noqa: BLE001 (a learner's exception may fail to print)
        text = ""
    text = _FOLDERS.sub(r"\1", SOURCE_LOCATION.sub("", _ADDRESS.sub("", text)))
    text = shorten(without_backticks(text), limit)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def without_backticks(text: str) -> str:
    """Text a hint quotes from elsewhere (a learner's message, a library's), its backticks made
    quotes: a hint's own backticks mark code, and a quoted one, often cut off, would pair with them.

    >>> without_backticks("does not fit `like`")
    "does not fit 'like'"
    """
    return text.replace(chr(96), "'")  # chr(96): the backtick


def attempt(run: Callable[[], Any]) -> tuple[Any, Exception | None]:
    """Run a learner's code: ``(run(), None)``, or ``(None, the exception)`` when it raised.

    The exercise stub's ``NotImplementedError`` passes through: an answer not written yet is not
    attempted, and the framework says so. A probe records what it needs of the exception (its type,
    :func:`error_text`) for the judge to turn into a hint. The exception comes without tracebacks,
    its chained ones included, so that the learner's frames (a file they opened and left open) do
    not outlive the call in a reference cycle.

    >>> attempt(lambda: 1 / 2), attempt(lambda: 1 / 0)
    ((0.5, None), (None, ZeroDivisionError('division by zero')))
    """
    try:
        return run(), None
    except NotImplementedError:
        raise
    except Exception as error:  # noqa: BLE001 (what the learner's code raised is the probe's finding)
        chained: BaseException | None = error
        while chained is not None:
            chained.__traceback__, chained = None, chained.__context__
        return None, error


def returned_instead(value: Any, wanted: str) -> str | None:
    """What a probe records when the learner's function returned ``value`` instead of ``wanted``.

    ``None`` stays ``None``: the framework then asks about a missing ``return``.

    >>> returned_instead(3, "a class")
    'returned 3, not a class'
    """
    return None if value is None else f"returned {describe(value, 60)}, not {wanted}"


def leaf_text(leaf: Any, limit: int = 60) -> str:
    """A leaf in a few characters: ``f32[3,2]`` for an array, the repr of a number, a string, a bool
    or ``None`` (cut to ``limit``), and ``<Type>`` for anything else.

    >>> [leaf_text(x) for x in (np.ones((3, 2)), "relu", 2, None, object())]
    ['f64[3,2]', "'relu'", '2', 'None', '<object>']
    """
    if isinstance(leaf, (jax.Array, np.ndarray, np.generic, str, bool, int, float)) or leaf is None:
        return describe(leaf, limit)
    return f"<{type(leaf).__name__}>"


# --- judges ----------------------------------------------------------------------------------


def _is_number(x: Any) -> bool:
    return (isinstance(x, (int, float, complex)) and not isinstance(x, bool)) or (
        isinstance(x, np.ndarray) and x.shape == () and x.dtype.kind in "iufc"
    )


def judge_number(got: Any, expected: Any, case: Case) -> str | None:
    """Judge: a number (Python or 0-d array) equal to the expected one (close, for floats)."""
    if not _is_number(got):
        return (
            f"returned {describe(got)}, a {type(got).__name__}; expected a number like "
            f"{describe(expected)}."
        )
    a, e = complex(np.asarray(got).item()), complex(np.asarray(expected).item())
    if not np.isclose(a, e, rtol=JUDGE_RTOL, atol=JUDGE_ATOL):
        return f"returned {describe(to_python(got))}, expected {describe(to_python(expected))}."
    return None


def judge_bool(got: Any, expected: Any, case: Case) -> str | None:
    """Judge: ``True`` or ``False`` (a NumPy or JAX boolean scalar is accepted)."""
    if isinstance(got, np.ndarray) and got.shape == () and got.dtype == bool:
        got = bool(got)
    if not isinstance(got, bool):
        return f"returned {describe(got)}; return `True` or `False`."
    return None if got == expected else f"returned `{got}`, expected `{expected}`."


def to_python(x: Any) -> Any:
    """A 0-d array as a Python number (for messages); anything else unchanged."""
    return x.item() if isinstance(x, np.ndarray) and x.shape == () else x


def plain_difference(got: Any, expected: Any, where: str = "") -> str | None:
    """The first difference between two plain values, in words, or ``None``.

    Lists and tuples are different; numbers compare by value (a 0-d array equals a Python number).
    """
    at = f" at {where}" if where else ""
    if _is_number(expected) and _is_number(got):
        return judge_number(got, expected, Case(()))
    if isinstance(expected, np.ndarray) or isinstance(got, np.ndarray):
        if not (isinstance(expected, np.ndarray) and isinstance(got, np.ndarray)):
            return f"got {describe(got)}{at}, expected {describe(expected)}."
        if got.shape != expected.shape:
            return f"got shape `{got.shape}`{at}, expected `{expected.shape}`."
        if not np.allclose(got, expected, rtol=JUDGE_RTOL, atol=JUDGE_ATOL, equal_nan=True):
            return f"the values{at} differ from the expected ones."
        return None
    if type(got) is not type(expected):
        return (
            f"got {describe(got)}{at}, a {type(got).__name__}; expected a "
            f"{type(expected).__name__}: {describe(expected)}."
        )
    if isinstance(expected, (list, tuple)):
        if len(got) != len(expected):
            return f"got {len(got)} items{at}, expected {len(expected)}."
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            problem = plain_difference(g, e, f"{where}[{i}]")
            if problem:
                return problem
        return None
    if isinstance(expected, dict):
        if list(got) != list(expected):
            return f"got keys {list(got)}{at}, expected {list(expected)}."
        for key in expected:
            problem = plain_difference(got[key], expected[key], f"{where}[{key!r}]")
            if problem:
                return problem
        return None
    if got != expected:
        return f"got {describe(got)}{at}, expected {describe(expected)}."
    return None


def judge_equal(got: Any, expected: Any, case: Case) -> str | None:
    """Judge: plain values equal (see :func:`plain_difference`)."""
    return plain_difference(got, expected)


ROUNDINGS = {16: 2**2, 32: 2**7}
"""Units in the last place a right answer's float may differ from the reference's, by the bits of
its dtype. 32 bits (and 64: JAX computes in float32 unless x64 is on, so a float64 reference is
met at float32's precision): another order of sums over a few thousand elements, and a dozen
correctly rounded operations. 16 bits: XLA computes their arithmetic in float32 on every backend,
so the difference is a few roundings to 16 bits."""
APPROXIMATE_ULPS = 2**2
"""Float32 units in the last place of one approximate operation: a TPU divides, takes square roots
and powers and computes transcendentals to within a few ulps, not correctly rounded."""


def float_tolerance(
    *dtypes: Any, matmul: bool = False, amplification: float = 1.0, scale: float = 0.1
) -> tuple[float, float]:
    """``(rtol, atol)`` within which every right answer's floats match the reference's on every
    backend: the course's one tolerance rule (CONTRIBUTING.md, "Comparing floats").

    ``rtol`` is :data:`ROUNDINGS` ulps of the least precise float among ``dtypes`` (float32 when
    none is given), plus ``amplification`` times :data:`APPROXIMATE_ULPS` float32 ulps: the
    approximate operations, magnified by how much the computation magnifies a relative error of
    its inputs (its condition number; ``1 / (1 - b2)`` for Adam's bias correction
    ``1 - b2**count``). With ``matmul`` the answer went through a matrix product at JAX's default
    precision where the reference did not (NumPy): a TPU multiplies float32 in one bfloat16 pass,
    so the roundings are bfloat16's. ``atol`` is ``rtol * scale``, ``scale`` being the size of the
    values the result is computed from: a result that cancels to near zero keeps their rounding.

    >>> rtol, atol = float_tolerance()
    >>> f"{rtol:.3g} {atol:.3g}", float_tolerance("float64") == (rtol, atol)
    ('1.57e-05 1.57e-06', True)
    >>> [f"{t:.3g}" for t in float_tolerance("bfloat16", scale=1.0)]
    ['0.0313', '0.0313']
    >>> f"{float_tolerance(matmul=True)[0]:.3g}"
    '0.0313'
    """
    floats = [d for d in dtypes if jnp.issubdtype(d, jnp.floating)] or [np.float32]
    if matmul:
        floats.append(jnp.bfloat16)
    f32 = float(jnp.finfo(np.float32).eps)
    rounding = max(
        ROUNDINGS[16] * float(jnp.finfo(d).eps) if jnp.finfo(d).bits == 16 else ROUNDINGS[32] * f32
        for d in floats
    )
    rtol = rounding + amplification * APPROXIMATE_ULPS * f32
    return rtol, rtol * scale


JUDGE_RTOL, JUDGE_ATOL = float_tolerance()
"""The self-checks' tolerances for float32 results (:func:`float_tolerance`'s rule). NaN counts as
equal to NaN there: a NaN the reference also gives is not the learner's fault."""


def structure_difference(
    actual: Any,
    expected: Any,
    names: tuple[str, str] = ("yours", "expected"),
    labels: tuple[str, str] | None = None,
) -> list[str]:
    """How two trees' structures differ, by key path (``cl.tree_diff``); ``[]`` when they are one.

    When ``tree_diff`` names no difference (one in a node's metadata, say) the lines are the two
    structures, after ``labels`` (by default ``names``).

    >>> structure_difference({"a": 1.0, "b": None}, {"a": 1.0, "b": 2.0})
    ["at ['b']: None (an empty subtree) in yours, a leaf (float 2.0) in expected"]
    >>> structure_difference([1.0], [2.0])
    []
    """
    if same_structure(actual, expected):
        return []
    lines = list(cl.tree_diff(actual, expected, names=names))
    if lines:
        return lines
    first, second = labels or names
    return [f"{first}: {jax.tree.structure(actual)}", f"{second}: {jax.tree.structure(expected)}"]


def tree_judge(
    rtol: float = JUDGE_RTOL, atol: float = JUDGE_ATOL, dtypes: bool = True
) -> Callable[[Any, Any, Case], str | None]:
    """A judge for :func:`call_tree` results: structure first (by key path), then each leaf.

    Structure differences are told by the core's ``cl.tree_diff``; leaf values by
    ``cl.assert_trees_close``; with ``dtypes`` a leaf of the wrong dtype is a difference too. It
    names a plain difference, never a :class:`Mistake`: a lesson's judge reads what it found and
    says which mistake that is.
    """

    def judge(got: Any, expected: Any, case: Case) -> str | None:
        mine, theirs = rebuild_tree(got), rebuild_tree(expected)
        lines = structure_difference(
            mine, theirs, ("your result", "the expected result"), ("your structure", "expected")
        )
        if lines:
            return _STRUCTURE_DIFFERS + "\n" + "\n".join(f"  {line}" for line in lines)
        try:
            cl.assert_trees_close(mine, theirs, rtol=rtol, atol=atol, equal_nan=True)
        except AssertionError as error:
            return str(error).replace("actual ", "yours ") + "."
        if dtypes:
            paths = jax.tree_util.tree_leaves_with_path(mine)
            for (path, a), b in zip(paths, jax.tree.leaves(theirs), strict=True):
                if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype != b.dtype:
                    return (
                        f"leaf {jax.tree_util.keystr(path) or '<root>'} has dtype `{a.dtype}`, "
                        f"expected `{b.dtype}`."
                    )
        return None

    return judge


_STRUCTURE_DIFFERS = "the structure differs from the expected one:"


def structure_found(problem: object) -> bool:
    """Whether ``problem``, what a :func:`tree_judge` found, is a difference of structure rather
    than of a leaf: the judges of tree answers take their structure hints from it.

    >>> judge, mine, case = tree_judge(), tree_plain([1.0]), Case(())
    >>> structure_found(judge(mine, tree_plain([1.0, 2.0]), case))  # one leaf, expected two
    True
    >>> structure_found(judge(mine, tree_plain([2.0]), case))  # one leaf, another value
    False
    """
    return isinstance(problem, str) and problem.startswith(_STRUCTURE_DIFFERS)


def judge_compiles(got: Any, expected: Any, case: Case) -> str | None:
    """Judge for :func:`compile_report` results: as many compilations as the reference."""
    n, want = got["compiles"], expected["compiles"]
    if n == want:
        return None
    text = f"compiled {n} time{'s' if n != 1 else ''}, expected {want}"
    if got["misses"]:
        return text + ": see the cache-miss explanation below.\n" + got["misses"][-1]
    return text + "."


def judge_compiles_with_advice(
    got: dict[str, Any],
    expected: dict[str, Any],
    case: Case,
    advice: str | None = None,
    about: int | None = None,
) -> str | None:
    """:func:`judge_compiles`, with ``advice`` (what a miss means here) after its first line.

    The explanation quoted is ``got["misses"][about]``, by default the last one: choose it by what
    a probe measured (the call that compiled again, :func:`jit_compile_calls`' ``miss_calls``),
    not by what JAX wrote in it.

    >>> misses = ["TRACING CACHE MISS: lr changed", "TRACING CACHE MISS: x changed"]
    >>> got = {"compiles": 2, "misses": misses}
    >>> advice = "lr is data, not static."
    >>> print(judge_compiles_with_advice(got, {"compiles": 1}, Case(()), advice, 0))
    compiled 2 times, expected 1: see the cache-miss explanation below.
    lr is data, not static.
    TRACING CACHE MISS: lr changed
    """
    misses = got["misses"]
    quoted = misses[-1:] if about is None or not 0 <= about < len(misses) else [misses[about]]
    problem = judge_compiles({**got, "misses": quoted}, expected, case)
    if problem is None or advice is None:
        return problem
    first, newline, rest = problem.partition("\n")
    return f"{first}\n{advice}" + (f"\n{rest}" if newline else "")


NONE_RECORD = {"node": "None"}
"""What :func:`call_tree` records for a bare ``None`` (the framework's own ``None`` check sees a
dict)."""


def returned_none(name: str) -> Mistake:
    """The missing ``return``, a typical mistake of every exercise (``name`` returned ``None``):
    recognised, with its own idea and fix, so that a workshop's room counts it.

    >>> returned_none("count_params").what
    '`count_params` returned `None`: missing `return`?'
    """
    return Mistake(
        f"`{name}` returned `None`: missing `return`?",
        "A Python function that reaches its end without a `return` statement gives back `None`, "
        "whatever it computed on the way.",
        "Put `return` in front of the expression that builds the result, or return the name you "
        "stored it in.",
    )


def missing_return(got: Any, expected: Any, name: str) -> Mistake | None:
    """For :func:`call_tree` results: the recognised mistake (:func:`returned_none`) when ``name``
    returned ``None`` where a tree was due.

    >>> missing_return(NONE_RECORD, tree_plain([1.0]), "sgd_step").what
    '`sgd_step` returned `None`: missing `return`?'
    """
    if got == NONE_RECORD and expected != NONE_RECORD:
        return returned_none(name)
    return None


# --- typical mistakes --------------------------------------------------------------------------


def trees_close(
    actual: Any, expected: Any, rtol: float = JUDGE_RTOL, atol: float = JUDGE_ATOL
) -> bool:
    """Whether two trees have one structure and close leaves (NaN equal to NaN); never raises.

    Leaves are compared as float64 by the core's one closeness (``close_elements``), with the
    self-checks' tolerances :data:`JUDGE_RTOL` and :data:`JUDGE_ATOL`.

    >>> trees_close({"a": [1.0, np.nan]}, {"a": [1.0 + 1e-7, np.nan]}), trees_close([1.0], (1.0,))
    (True, False)
    """
    if not same_structure(actual, expected):
        return False
    for a, b in zip(jax.tree.leaves(actual), jax.tree.leaves(expected), strict=True):
        try:
            a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        except (TypeError, ValueError):
            return False
        if a.shape != b.shape:
            return False
        if not close_elements(a, b, rtol=rtol, atol=atol, equal_nan=True).all():
            return False
    return True


def first_leaf_path(tree: Any) -> str:
    """The key path of ``tree``'s first leaf, as ``keystr`` writes it (the tree has a leaf).

    >>> first_leaf_path({"b": [1.0, 2.0], "a": None}), first_leaf_path(3.0)
    ("['b'][0]", '')
    """
    return jax.tree_util.keystr(jax.tree_util.tree_flatten_with_path(tree)[0][0][0])


# --- NumPy references --------------------------------------------------------------------------
# References that compute in NumPy compile nothing, so that a self-check costs only the
# compilations of the learner's own code.


def as_numpy(leaf: Any) -> Any:
    """A leaf as a NumPy array; a Python number stays one.

    >>> as_numpy(2.5), as_numpy(jax.numpy.ones(2))
    (2.5, array([1., 1.], dtype=float32))
    """
    return leaf if isinstance(leaf, (int, float)) else np.asarray(leaf)


def scaled(leaf: Any, factor: float) -> Any:
    """``leaf * factor`` in NumPy, keeping float32 a float32 (a Python float stays a Python float).

    >>> scaled(np.ones(2, np.float32), 0.5), scaled(2.0, 0.5)
    (array([0.5, 0.5], dtype=float32), 1.0)
    """
    return leaf * factor if isinstance(leaf, float) else np.asarray(leaf) * np.float32(factor)


ACTIVATIONS: dict[str, Callable[[Any], Any]] = {
    "tanh": jnp.tanh,
    "relu": jax.nn.relu,
    "identity": lambda x: x,
}
"""The activations of the lessons' layers by name (a layer's ``activation`` field), in the order
the cases draw them; the notebooks define the same table."""


# --- plain data with dtypes --------------------------------------------------------------------


def as_judged(tree: Any) -> Any:
    """``tree`` as a judge sees a learner's result: the same containers rebuilt from plain data."""
    return rebuild_tree(tree_plain(tree))


def as_float32(leaf: Any) -> Any:
    """A bfloat16 (or other non-NumPy float) array as float32, so that it travels as plain data.

    >>> as_float32(jax.numpy.ones(2, jax.numpy.bfloat16)).dtype, as_float32(1.5)
    (dtype('float32'), 1.5)
    """
    dtype = getattr(leaf, "dtype", None)
    if dtype is not None and np.dtype(dtype).kind == "V":  # bfloat16 and the other ml_dtypes types
        return np.asarray(leaf).astype(np.float32)
    return leaf


def dtype_name(leaf: Any) -> str:
    """The name of a leaf's dtype (``bfloat16`` too), or its type's name for a leaf without one."""
    dtype = getattr(leaf, "dtype", None)
    return np.dtype(dtype).name if dtype is not None else type(leaf).__name__


def dtyped_plain(tree: Any) -> dict[str, Any]:
    """A tree as plain data with its dtypes on the side (bfloat16 leaves travel as float32).

    >>> dtyped_plain({"w": jax.numpy.ones(2, jax.numpy.bfloat16), "b": None})["dtypes"]
    [["['w']", 'bfloat16']]
    """
    with_paths = jax.tree_util.tree_leaves_with_path(tree)
    return {
        "tree": tree_plain(jax.tree.map(as_float32, tree)),
        "dtypes": [[jax.tree_util.keystr(p), dtype_name(leaf)] for p, leaf in with_paths],
    }


# --- random inputs ---------------------------------------------------------------------------


def random_f32(
    rng: np.random.Generator, *shape: int, scale: float = 1.0, array: bool = False
) -> np.ndarray:
    """Normal values times ``scale``, rounded to 3 decimals, as a float32 NumPy array of ``shape``.

    For ``shape`` ``()`` the result is a NumPy scalar (``describe`` writes ``np.float32(...)``), or
    with ``array`` a 0-d array (``f32[]``).

    >>> random_f32(np.random.default_rng(0), 2, scale=10.0)
    array([ 1.257, -1.321], dtype=float32)
    >>> rng = np.random.default_rng(0)
    >>> type(random_f32(rng)).__name__, type(random_f32(rng, array=True)).__name__
    ('float32', 'ndarray')
    """
    values = (scale * rng.normal(size=shape)).round(3)
    return np.asarray(values, dtype=np.float32) if array else values.astype(np.float32)


def random_array(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    """:func:`random_f32` as an array always: a 0-d leaf shows as ``f32[]``, not a NumPy scalar.

    >>> random_array(np.random.default_rng(0)).shape, random_array(np.random.default_rng(0), 2)
    ((), array([ 0.126, -0.132], dtype=float32))
    """
    return random_f32(rng, *shape, scale=scale, array=True)


def random_shape(
    rng: np.random.Generator, sizes: tuple[int, int] = (1, 4), dims: tuple[int, int] = (0, 2)
) -> tuple[int, ...]:
    """A shape of ``dims[0]`` to ``dims[1]`` dimensions, each of ``sizes[0]`` to ``sizes[1]``.

    >>> random_shape(np.random.default_rng(1), sizes=(2, 4), dims=(1, 2))
    (3,)
    """
    ndim = int(rng.integers(dims[0], dims[1] + 1))
    return tuple(int(n) for n in rng.integers(sizes[0], sizes[1] + 1, size=ndim))


SMALL_SHAPES = ((), (3,), (2, 3))
"""Few shapes on purpose: every new shape costs each eager ``jnp`` operation a compilation of its
own (about 0.1 s on a small CPU), and a self-check should take a moment, not seconds."""


def small_shape(rng: np.random.Generator) -> tuple[int, ...]:
    """One of :data:`SMALL_SHAPES`."""
    return SMALL_SHAPES[int(rng.integers(0, len(SMALL_SHAPES)))]


def small_float_leaf(rng: np.random.Generator) -> np.ndarray:
    """A float32 NumPy array of one of :data:`SMALL_SHAPES`, a 0-d array included."""
    return random_f32(rng, *small_shape(rng), array=True)


def random_float_leaf(
    rng: np.random.Generator,
    shape: Callable[[np.random.Generator], tuple[int, ...]] = small_shape,
) -> Any:
    """A float32 array of the shape ``shape(rng)`` draws, NumPy or (by a coin) JAX.

    A 0-d NumPy leaf is a NumPy scalar (see :func:`random_f32`). ``jax.device_put`` makes the
    JAX arrays: it compiles nothing, where ``jnp.asarray`` compiles once per new shape.

    >>> [type(random_float_leaf(np.random.default_rng(seed))).__name__ for seed in (0, 4)]
    ['ndarray', 'ArrayImpl']
    """
    array = random_f32(rng, *shape(rng))
    return jax.device_put(array) if rng.random() < 0.5 else array


def random_like(
    rng: np.random.Generator, tree: Any, scale: float = 1.0, array: bool = False
) -> Any:
    """A tree of the structure of ``tree`` with new float32 leaves of the same shapes
    (:func:`random_f32`).

    A JAX array's new leaf is a JAX array, a Python float's a Python float (3 decimals), any other
    leaf's a NumPy array (or scalar, see ``array``).
    """

    def fresh(leaf: Any) -> Any:
        new = random_f32(rng, *np.shape(leaf), scale=scale, array=array)
        if isinstance(leaf, float):
            return round(float(new), 3)
        return jax.device_put(new) if isinstance(leaf, jax.Array) else new

    return jax.tree.map(fresh, tree)


# --- random trees ----------------------------------------------------------------------------


class Layer(NamedTuple):
    """A namedtuple node used in generated cases."""

    w: Any
    b: Any


class Point(NamedTuple):
    """Another namedtuple node, with other field names."""

    x: Any
    y: Any


class Opaque:
    """An unregistered class: JAX treats its instances as leaves."""

    def __init__(self, tag: str):
        self.tag = tag

    def __repr__(self) -> str:
        return f"Opaque({self.tag!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Opaque) and other.tag == self.tag

    def __hash__(self) -> int:
        return hash(self.tag)


KEYS = (
    "w",
    "b",
    "bias",
    "scale",
    "alpha",
    "encoder",
    "decoder",
    "head",
    "layer1",
    "layer2",
    "z",
    "emb",
)
CONTAINERS = ("dict", "list", "tuple", "namedtuple", "OrderedDict")


def random_leaf(rng: np.random.Generator) -> Any:
    """A float32 or int32 array (NumPy or JAX) of a small random shape, or a Python number."""
    choice = rng.integers(0, 10)
    if choice < 2:
        return round(float(rng.normal()), 3)
    if choice < 3:
        return int(rng.integers(-5, 6))
    shape = random_shape(rng)
    if choice < 5:
        array = rng.integers(-9, 10, size=shape).astype(np.int32)
    else:
        array = rng.normal(size=shape).round(3).astype(np.float32)
    return (
        jax.device_put(array) if choice % 2 else array
    )  # device_put: jnp.asarray compiles per shape


def random_tree(
    rng: np.random.Generator,
    depth: int = 3,
    none_rate: float = 0.2,
    containers: tuple[str, ...] = CONTAINERS,
    leaf: Callable[[np.random.Generator], Any] = random_leaf,
) -> Any:
    """A random tree: up to ``depth`` levels of containers, ``None`` subtrees at ``none_rate``.

    Dict keys are drawn in random order, so insertion order is rarely the sorted order JAX uses.
    """
    if depth <= 0 or rng.random() < 0.25:
        return None if rng.random() < none_rate else leaf(rng)
    kind = containers[int(rng.integers(0, len(containers)))]
    if kind in ("namedtuple",):
        cls = Layer if rng.random() < 0.5 else Point
        return cls(*(random_tree(rng, depth - 1, none_rate, containers, leaf) for _ in range(2)))
    size = int(rng.integers(1, 4))
    children = [random_tree(rng, depth - 1, none_rate, containers, leaf) for _ in range(size)]
    if kind == "list":
        return children
    if kind == "tuple":
        return tuple(children)
    keys = [str(k) for k in rng.choice(KEYS, size=size, replace=False)]
    if kind == "OrderedDict":
        return collections.OrderedDict(zip(keys, children, strict=True))
    return dict(zip(keys, children, strict=True))


def float_tree(
    rng: np.random.Generator,
    layout: Sequence[tuple[str, str]] = (("head", "leaf"), ("body", "tree")),
    leaf: Callable[[np.random.Generator], Any] = random_float_leaf,
    depth: int = 3,
    none_rate: float = 0.25,
    min_leaves: int = 1,
) -> dict[str, Any]:
    """A dict of float32 leaves and random trees of them (:func:`random_tree`), ``None`` included.

    ``layout`` names each key and what it holds, ``"leaf"`` or ``"tree"``, in the order they are
    drawn. A tree with fewer than ``min_leaves`` leaves is drawn again.

    >>> tree = float_tree(np.random.default_rng(0), (("w", "tree"), ("b", "leaf")), min_leaves=2)
    >>> list(tree), len(jax.tree.leaves(tree)) >= 2
    (['w', 'b'], True)
    """
    while True:
        tree = {
            key: leaf(rng)
            if part == "leaf"
            else random_tree(rng, depth=depth, none_rate=none_rate, leaf=leaf)
            for key, part in layout
        }
        if len(jax.tree.leaves(tree)) >= min_leaves:
            return tree


def count_none(tree: Any) -> int:
    """How many ``None`` subtrees ``tree`` holds."""
    return sum(x is None for x in jax.tree.leaves(tree, is_leaf=lambda x: x is None))
