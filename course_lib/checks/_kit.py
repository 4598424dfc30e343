"""Building blocks for lesson modules: probes, judges and random trees.

Probes run in the learner's process and return plain data; judges compare two probe results and
return ``None`` or a hint. Random trees mix the containers JAX knows (dict, list, tuple,
namedtuple, ``OrderedDict``), ``None`` subtrees, and leaves of several kinds, from a NumPy
generator, so a case set is the same wherever it is made.
"""

import collections
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np

import course_lib as cl

from ._plain import describe, rebuild_tree, to_plain, tree_plain
from ._spec import Case, Judge

# --- probes ----------------------------------------------------------------------------------


def call_value(fn: Callable[..., Any], case: Case) -> Any:
    """Probe: call ``fn`` on the case and reduce its result to plain data with :func:`to_plain`."""
    return to_plain(fn(*case.args, **case.kwargs))


def call_tree(fn: Callable[..., Any], case: Case) -> Any:
    """Probe: call ``fn`` on the case and record the whole tree it returns with :func:`tree_plain`."""
    return tree_plain(fn(*case.args, **case.kwargs))


def compile_report(run: Callable[[], Any]) -> dict[str, Any]:
    """Run ``run()`` and report XLA compilations and JAX's cache-miss explanations (for probes).

    Build the inputs before calling this: everything compiled inside counts.
    """
    with cl.count_compiles() as counter, cl.capture_cache_misses() as misses:
        jax.block_until_ready(run())
    return {"compiles": counter.compiles, "misses": list(misses)}


# --- judges ----------------------------------------------------------------------------------


def _is_number(x: Any) -> bool:
    return (isinstance(x, (int, float, complex)) and not isinstance(x, bool)) or (
        isinstance(x, np.ndarray) and x.shape == () and x.dtype.kind in "iufc"
    )


def judge_number(got: Any, expected: Any, case: Case) -> str | None:
    """Judge: a number (Python or 0-d array) equal to the expected one (close, for floats)."""
    if not _is_number(got):
        return f"returned {describe(got)}, a {type(got).__name__}; expected a number like {describe(expected)}."
    a, e = complex(np.asarray(got).item()), complex(np.asarray(expected).item())
    if not np.isclose(a, e, rtol=1e-6, atol=1e-9):
        return f"returned {describe(to_python(got))}, expected {describe(to_python(expected))}."
    return None


def judge_bool(got: Any, expected: Any, case: Case) -> str | None:
    """Judge: ``True`` or ``False`` (a NumPy or JAX boolean scalar is accepted)."""
    if isinstance(got, np.ndarray) and got.shape == () and got.dtype == bool:
        got = bool(got)
    if not isinstance(got, bool):
        return f"returned {describe(got)}; return True or False."
    return None if got == expected else f"returned {got}, expected {expected}."


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
            return f"got shape {got.shape}{at}, expected {expected.shape}."
        if not np.allclose(got, expected, rtol=1e-5, atol=1e-6, equal_nan=True):
            return f"the values{at} differ from the expected ones."
        return None
    if type(got) is not type(expected):
        return f"got {describe(got)}{at}, a {type(got).__name__}; expected a {type(expected).__name__}: {describe(expected)}."
    if isinstance(expected, (list, tuple)):
        if len(got) != len(expected):
            return f"got {len(got)} items{at}, expected {len(expected)}."
        for i, (g, e) in enumerate(zip(got, expected)):
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


def tree_judge(rtol: float = 1e-5, atol: float = 1e-6, dtypes: bool = True) -> Judge:
    """A judge for :func:`call_tree` results: structure first (by key path), then each leaf.

    Structure differences are told by the core's ``cl.tree_diff``; leaf values by
    ``cl.assert_trees_close``; with ``dtypes`` a leaf of the wrong dtype is a difference too.
    """

    def judge(got: Any, expected: Any, case: Case) -> str | None:
        mine, theirs = rebuild_tree(got), rebuild_tree(expected)
        if jax.tree.structure(mine) != jax.tree.structure(theirs):
            lines = list(cl.tree_diff(mine, theirs, names=("your result", "the expected result")))
            if not lines:
                lines = [f"your structure: {jax.tree.structure(mine)}", f"expected: {jax.tree.structure(theirs)}"]
            return "the structure differs from the expected one:\n" + "\n".join(f"  {line}" for line in lines)
        try:
            cl.assert_trees_close(mine, theirs, rtol=rtol, atol=atol)
        except AssertionError as error:
            return str(error).replace("actual ", "yours ") + "."
        if dtypes:
            paths = jax.tree_util.tree_leaves_with_path(mine)
            for (path, a), b in zip(paths, jax.tree.leaves(theirs)):
                if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype != b.dtype:
                    return f"leaf {jax.tree_util.keystr(path) or '<root>'} has dtype {a.dtype}, expected {b.dtype}."
        return None

    return judge


def judge_compiles(got: Any, expected: Any, case: Case) -> str | None:
    """Judge for :func:`compile_report` results: the same number of compilations as the reference."""
    n, want = got["compiles"], expected["compiles"]
    if n == want:
        return None
    text = f"compiled {n} time{'s' if n != 1 else ''}, expected {want}"
    if got["misses"]:
        return text + ": see the cache-miss explanation below.\n" + got["misses"][-1]
    return text + "."


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


KEYS = ("w", "b", "bias", "scale", "alpha", "encoder", "decoder", "head", "layer1", "layer2", "z", "emb")
CONTAINERS = ("dict", "list", "tuple", "namedtuple", "OrderedDict")


def random_leaf(rng: np.random.Generator) -> Any:
    """A float32 or int32 array (NumPy or JAX) of a small random shape, or a Python number."""
    choice = rng.integers(0, 10)
    if choice < 2:
        return round(float(rng.normal()), 3)
    if choice < 3:
        return int(rng.integers(-5, 6))
    shape = tuple(int(n) for n in rng.integers(1, 5, size=int(rng.integers(0, 3))))
    if choice < 5:
        array = rng.integers(-9, 10, size=shape).astype(np.int32)
    else:
        array = rng.normal(size=shape).round(3).astype(np.float32)
    return jax.device_put(array) if choice % 2 else array  # device_put: jnp.asarray compiles per shape


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
        return collections.OrderedDict(zip(keys, children))
    return dict(zip(keys, children))


def count_none(tree: Any) -> int:
    """How many ``None`` subtrees ``tree`` holds."""
    return sum(x is None for x in jax.tree.leaves(tree, is_leaf=lambda x: x is None))
