"""Exercises of lesson 07, trees across devices and trees without data.

The cases are device-free descriptions (mesh shapes, axis names, specs, shapes, dtypes); each probe
builds the meshes and arrays from them on the CPU devices of the process it runs in. A learner's
kernel has the lesson's 8 simulated devices. The grader's own process, which computes the reference
results, may have fewer: there the probe builds a stand-in for each mesh, with the same axis names,
that needs no more devices than it has. What a probe records is the same on the real mesh and on
its stand-in, so the grader needs no devices of its own:

* an ``AbstractMesh`` of the same shape stands in where nothing runs on the mesh (the shardings a
  function returns, the bytes each device would hold);
* a mesh of the same axis names, each of size 1, on one device, stands in where something runs
  (a sharded init, a checkpoint restore); those probes record specs and axis names, never sizes.
"""

import contextlib
import functools
import logging
import math
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AbstractMesh, AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from jax.tree_util import keystr

from .._leaves import leaf_nbytes, leaf_size
from .._paths import leaf_name
from ._kit import Layer, Point, as_float32, random_array, trees_close
from ._mistakes import Variant, first_mistake
from ._plain import describe
from ._sections import (
    CONTAINERS_AND_LEAVES,
    PER_DEVICE_MEMORY,
    PITFALL_17,
    RULES_BY_KEY_PATH,
    SHARDING_TREE,
    SHARDINGS_IN_JIT,
    TREES_WITHOUT_DATA,
)
from ._spec import Case, Exercise, Mistake

# --- meshes: real where the devices exist, a stand-in where they do not ------------------------

Shape = tuple[int, ...]
Names = tuple[str, ...]


def enough_devices(count: int) -> bool:
    """Whether this process has ``count`` CPU devices for a mesh (a learner's kernel has 8)."""
    return len(jax.devices("cpu")) >= count


def real_mesh(shape: Shape, names: Names) -> jax.sharding.Mesh:
    """The mesh of ``shape`` on the first CPU devices, with ``Auto`` axes as in the lesson."""
    devices = jax.devices("cpu")[: math.prod(shape)]
    return jax.make_mesh(shape, names, devices=devices, axis_types=(AxisType.Auto,) * len(names))


def plan_mesh(shape: Shape, names: Names) -> jax.sharding.Mesh | AbstractMesh:
    """A mesh to lay shardings out on: the real one, or an ``AbstractMesh`` of the same shape."""
    if enough_devices(math.prod(shape)):
        return real_mesh(shape, names)
    return AbstractMesh(shape, names, axis_types=(AxisType.Auto,) * len(names))


def run_mesh(shape: Shape, names: Names) -> jax.sharding.Mesh:
    """A mesh to compute on: the real one, or one of the same axis names, each of size 1."""
    if enough_devices(math.prod(shape)):
        return real_mesh(shape, names)
    return real_mesh((1,) * len(names), names)


def spec_entries(spec: Any) -> list[Any]:
    """A ``PartitionSpec`` as plain data: ``P(None, "x", None)`` is ``P(None, "x")``.

    >>> spec_entries(P(None, ("data",), None)), spec_entries(P())
    ([None, 'data'], [])
    """
    entries: list[Any] = []
    for entry in spec:
        if isinstance(entry, (tuple, list)):
            entry = entry[0] if len(entry) == 1 else list(entry)
        entries.append(entry)
    while entries and entries[-1] is None:
        entries.pop()
    return entries


def spec_text(entries: Sequence[Any]) -> str:
    """``P(None, 'model')`` from :func:`spec_entries`."""
    return (
        "P(" + ", ".join(repr(tuple(e)) if isinstance(e, list) else repr(e) for e in entries) + ")"
    )


def _mesh_text(shape: Shape, names: Names) -> str:
    return "mesh " + " x ".join(f"{n} {name!r}" for n, name in zip(shape, names, strict=True))


def _paths(tree: Any) -> list[str]:
    return [keystr(path) for path, _ in jax.tree_util.tree_leaves_with_path(tree)]


def _structure_hint(got: dict[str, Any], expected: dict[str, Any], what: str) -> str | None:
    """When the trees' structures differ: at most two key paths that only one of them has, one a
    line, with how many more there are; or else both structures."""
    if got["structure"] == expected["structure"]:
        return None
    mine, theirs = got["paths"], expected["paths"]
    differing = [
        (kind, paths)
        for kind, paths in (
            ("missing", [p for p in theirs if p not in mine]),
            ("unexpected", [p for p in mine if p not in theirs]),
        )
        if paths
    ]
    lines = [f"{what} does not have the structure of the input tree:"]
    for kind, paths in differing:
        shown = 2 // len(differing)
        lines += [f"  {kind} leaf at {path}" for path in paths[:shown]]
        if len(paths) > shown:
            lines[-1] += f" (and {len(paths) - shown} more {kind})"
    if not differing:
        lines += [f"  yours:    {got['structure']}", f"  expected: {expected['structure']}"]
    return "\n".join(lines)


def _structure_record(tree: Any) -> dict[str, Any]:
    return {"structure": str(jax.tree.structure(tree)), "paths": _paths(tree)}


# --- 07.shardings_from_rules -----------------------------------------------------------------


def _shardings_from_rules(params: Any, rules: Sequence[tuple[str, Any]], mesh: Any) -> Any:
    def sharding(path: Any, leaf: Any) -> NamedSharding:
        name = leaf_name(path)
        for pattern, spec in rules:
            if re.search(pattern, name) and len(spec) <= np.ndim(leaf):
                return NamedSharding(mesh, spec)
        return NamedSharding(mesh, P())

    return jax.tree.map_with_path(sharding, params)


_RULE_SETS: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = (
    (
        "attention and MLP rules, norms replicated",
        (
            (r"attn/w[qkv]$", P(None, "model")),
            (r"attn/wo$", P("model", None)),
            (r"mlp/w_in$", P(None, "model")),
            (r"mlp/w_out$", P("model", None)),
            (r"embed$", P("model", None)),
        ),
    ),
    (
        "a general rule after a specific one (the first match decides)",
        (
            (r"head/w$", P(None, ("data", "model"))),
            (r"/w$", P("model", None)),
            (r"b$", P("model")),
        ),
    ),
    (
        "a matrix rule that also matches vectors (it applies to matrices only)",
        (
            (r"dense", P("data", "model")),
            (r"scale|bias", P("model")),
        ),
    ),
)


def _rules_params(rng: np.random.Generator, kind: int) -> Any:
    d, h = 8 * int(rng.integers(1, 3)), 16
    if kind == 0:
        layer = lambda: {
            "attn": {name: random_array(rng, d, d) for name in ("wq", "wk", "wv", "wo")},
            "mlp": {"w_in": random_array(rng, d, h), "w_out": random_array(rng, h, d)},
            "norm": random_array(rng, d),
        }
        return {
            "embed": random_array(rng, 32, d),
            "layers": [layer() for _ in range(int(rng.integers(1, 3)))],
            "final_norm": random_array(rng, d),
        }
    if kind == 1:
        return {
            "blocks": (
                Layer(w=random_array(rng, d, d), b=random_array(rng, d)),
                Layer(w=random_array(rng, d, h), b=None),
            ),
            "head": {"w": random_array(rng, h, 8), "b": random_array(rng, 8)},
            "extra": None,
        }
    return [
        {
            "dense": random_array(rng, d, h),
            "dense_bias": random_array(rng, h),
            "scale": random_array(rng, h),
            "bias": None,
        },
        Point(x={"dense_out": random_array(rng, h, d)}, y=random_array(rng)),
    ]


_RULE_MESHES: tuple[tuple[Shape, Names], ...] = (
    ((2, 4), ("data", "model")),
    ((4, 2), ("data", "model")),
)


def _rules_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for kind in range(3):
        label, rules = _RULE_SETS[kind]
        params = _rules_params(rng, kind)
        shape, names = _RULE_MESHES[int(rng.integers(0, 2))]
        rule_text = "; ".join(f"{pattern!r} -> {spec}" for pattern, spec in rules)
        shown = f"params {describe(params, 110)}; rules {rule_text}; {_mesh_text(shape, names)}"
        cases.append(
            Case((params, list(rules)), label=label, info={"mesh": (shape, names)}, shown=shown)
        )
    return cases


def _sharding_record(x: Any) -> dict[str, Any]:
    if isinstance(x, NamedSharding):
        mesh = x.mesh
        return {
            "kind": "NamedSharding",
            "spec": spec_entries(x.spec),
            "axes": list(mesh.axis_names),
            "sizes": list(mesh.axis_sizes),
        }
    if isinstance(x, P):
        return {"kind": "PartitionSpec", "spec": spec_entries(x)}
    return {"kind": type(x).__name__}


def _rules_probe(fn: Callable[..., Any], case: Case) -> Any:
    params, rules = case.args
    shape, names = case.info["mesh"]
    result = fn(params, rules, plan_mesh(shape, names))
    if result is None:
        return None
    leaves = jax.tree_util.tree_leaves_with_path(result, is_leaf=lambda x: isinstance(x, P))
    return {**_structure_record(result), "records": [_sharding_record(leaf) for _, leaf in leaves]}


def _rules_variant(
    case: Case, name: Callable[[Any], str], search: Callable[..., Any], last: bool, ndim: bool
) -> list[list[Any]]:
    """The specs a typical wrong reading of the rules gives, leaf by leaf (plain entries)."""
    params, rules = case.args
    specs = []
    for path, leaf in jax.tree_util.tree_leaves_with_path(params):
        hits = [
            spec
            for pattern, spec in rules
            if search(pattern, name(path)) and (not ndim or len(spec) <= np.ndim(leaf))
        ]
        specs.append(spec_entries((hits[-1] if last else hits[0]) if hits else P()))
    return specs


def _rule_deciding(case: Case, index: int) -> tuple[str, int, str | None]:
    """For leaf ``index`` of a case's params: its name, its number of dimensions, and the pattern
    of the rule that decides it (``None`` when no rule does, and the leaf is replicated)."""
    params, rules = case.args
    path, leaf = jax.tree_util.tree_leaves_with_path(params)[index]
    name = leaf_name(path)
    deciding = next(
        (
            pattern
            for pattern, spec in rules
            if re.search(pattern, name) and len(spec) <= np.ndim(leaf)
        ),
        None,
    )
    return name, int(np.ndim(leaf)), deciding


def _last_rule(got: str, matching: list[str]) -> Mistake:
    """The last of the ``matching`` rules (two or more, by pattern) decided a leaf: ``got`` says
    what it got, and what was expected."""
    return Mistake(
        f"{got}: the rules {', '.join(matching[:-1])} and {matching[-1]} match it, and the "
        "last matching rule decided.",
        "The rules are read in order: specific rules come first, and the first rule that "
        "matches a leaf (and fits its rank) decides it; the rules after it are never "
        "consulted.",
        "Stop at the first `(pattern, spec)` that matches and fits, for example by returning "
        "from inside the loop over the rules; fall back to `P()` only when the loop ends without "
        "one.",
    )


def _rule_variants(case: Case, index: int, mine: list[Any], theirs: list[Any]) -> list[Variant]:
    """Typical wrong readings of a case's rules, told at leaf ``index``, the first whose spec
    (``mine``) differs from the expected one (``theirs``)."""
    name, ndim, deciding = _rule_deciding(case, index)
    got = f"the leaf {name!r} got {spec_text(mine)}, expected {spec_text(theirs)}"

    def reading(**change: Any) -> Callable[[], list[list[Any]]]:
        options = {"name": leaf_name, "search": re.search, "last": False, "ndim": True, **change}
        return functools.partial(_rules_variant, case, **options)

    variants = []
    matching = [repr(pattern) for pattern, _ in case.args[1] if re.search(pattern, name)]
    if len(matching) >= 2:  # else the last matching rule is the first, or there is none
        variants.append(Variant(mistake=_last_rule(got, matching), build=reading(last=True)))
    too_long = Mistake(
        f"{got}: {spec_text(mine)} has more entries than the leaf has dimensions "
        f"({ndim} dimension{'' if ndim == 1 else 's'}).",
        "A spec may be shorter than the array, never longer: a 2-entry spec cannot lay out a "
        "vector. A rule whose spec is too long says nothing about that leaf, and the next "
        "rules are tried.",
        "Make the rank part of the test that picks a rule: a rule applies when its pattern "
        "matches and `len(spec) <= np.ndim(leaf)`.",
        reread=SHARDING_TREE,
    )
    at_start = Mistake(
        f"{got}: the pattern {deciding!r}, the rule that decides it, occurs inside the name "
        "but not at its start.",
        "`re.match` and `re.fullmatch` find a pattern only at the start of the string; the rules "
        "are written to be found anywhere in the name, as with grep.",
        "Test each rule with `re.search(pattern, name)`.",
    )
    decides = (
        f"the rule {deciding!r}, written for its name, did not match it"
        if deciding
        else "no rule is written for its name, yet one matched what you compared"
    )
    default_format = Mistake(
        f"{got}: {decides}.",
        "The rules are written for names such as `'layers/0/attn/wq'`. `keystr`'s default format "
        "writes the same path as `\"['layers'][0]['attn']['wq']\"`, with brackets and quotes, so "
        "the rules are matched against a text they were not written for.",
        "Write each key path as the rules expect it: `jax.tree_util.keystr(path, simple=True, "
        "separator='/')`.",
    )
    return [
        *variants,
        Variant(mistake=too_long, build=reading(ndim=False)),
        Variant(mistake=at_start, build=reading(search=re.match)),
        Variant(mistake=default_format, build=reading(name=keystr)),
    ]


def _judge_rules(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    if not isinstance(got, dict) or "records" not in got:
        return (
            f"returned {describe(got, 80)}, where a tree of `NamedSharding` with the structure of "
            "`params` was expected."
        )
    problem = _structure_hint(got, expected, "the sharding tree")
    if problem:
        return Mistake(
            problem,
            "A sharding tree pairs one sharding with each leaf, so it must have the structure of "
            "`params` exactly: the same containers and keys, and `None` where `params` has "
            "`None`.",
            "Build it from `params` itself with `jax.tree.map_with_path`, which keeps every "
            "container and `None` subtree, instead of assembling a new dict or list.",
            reread=PITFALL_17,
        )
    specs = [r.get("spec") for r in got["records"]]
    for path, mine, theirs in zip(got["paths"], got["records"], expected["records"], strict=True):
        if mine["kind"] == "PartitionSpec":
            return Mistake(
                f"the leaf at {path} is the `PartitionSpec` {spec_text(mine['spec'])}, not a "
                "`NamedSharding`.",
                "A `PartitionSpec` only names mesh axes; it does not say which devices. A "
                "`NamedSharding` pairs it with a mesh, and that is what `device_put` and `jit` "
                "take outside a mesh context.",
                "Wrap each spec the rules give: `NamedSharding(mesh, spec)`, with the mesh passed "
                "in.",
                reread=SHARDING_TREE,
            )
        if mine["kind"] != "NamedSharding":
            return (
                f"the leaf at {path} is of type {mine['kind']}, where a `NamedSharding` was "
                "expected."
            )
        if (mine["axes"], mine["sizes"]) != (theirs["axes"], theirs["sizes"]):
            return Mistake(
                f"the sharding at {path} is on another mesh ({mine['axes']}, sizes "
                f"{mine['sizes']}) than the one passed in ({theirs['axes']}, sizes "
                f"{theirs['sizes']}).",
                "A `NamedSharding` is tied to its mesh: the rules' specs name the axes of the mesh "
                "the caller gives, and a sharding on another mesh places the leaf on other "
                "devices, or on axes the specs do not name.",
                "Build every sharding on the `mesh` argument, `NamedSharding(mesh, spec)`; make "
                "no mesh of your own.",
                reread=SHARDING_TREE,
            )
    wanted = [r["spec"] for r in expected["records"]]
    first = next((i for i, (a, b) in enumerate(zip(specs, wanted, strict=True)) if a != b), None)
    if first is None:
        return None
    found = first_mistake(
        specs, _rule_variants(case, first, specs[first], wanted[first]), exact=True
    )
    if found:
        return found
    path = got["paths"][first]
    return f"the leaf at {path} got {spec_text(specs[first])}, expected {spec_text(wanted[first])}."


SHARDINGS_FROM_RULES = Exercise(
    id="07.shardings_from_rules",
    name="shardings_from_rules",
    title="A sharding tree from rules on key paths",
    points=3,
    cases=_rules_cases,
    reference=_shardings_from_rules,
    probe=_rules_probe,
    judge=_judge_rules,
    hints=(
        (
            "Each leaf's name is its key path as text; the first rule whose pattern matches the "
            "name and whose spec fits the leaf's rank decides its sharding, and no rule means "
            "replicated."
        ),
        (
            "`jax.tree.map_with_path` over `params`: `name = keystr(path, simple=True, "
            "separator='/')`; the first `(pattern, spec)` with `re.search(pattern, name)` and "
            "`len(spec) <= np.ndim(leaf)`, else `P()`; return `NamedSharding(mesh, spec)`."
        ),
    ),
    reread=RULES_BY_KEY_PATH,
    mistakes=(
        "lets the last matching rule decide instead of the first",
        "gives a leaf a spec with more entries than it has dimensions",
        "matches with `re.match` instead of `re.search`",
        "matches the rules against `keystr`'s default format",
        "returns bare `PartitionSpec`s instead of `NamedSharding`s",
        "builds its own mesh instead of using the one passed in",
        "drops the `None` subtrees",
    ),
)


# --- 07.bytes_per_device ---------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class LeafPlan:
    """A case's leaf, described: shape, dtype, spec entries, and whether it is a placed array."""

    shape: Shape
    dtype_name: str
    spec: tuple[Any, ...]
    placed: bool

    def __repr__(self) -> str:
        kind = "array" if self.placed else "ShapeDtypeStruct"
        return f"{kind} {self.dtype_name}{list(self.shape)} {P(*self.spec)}"


def _is_plan(x: Any) -> bool:
    return isinstance(x, LeafPlan)


def _bytes_per_device(tree: Any) -> int:
    blocks = [
        (leaf.sharding.shard_shape(leaf.shape), np.dtype(leaf.dtype).itemsize)
        for leaf in jax.tree.leaves(tree)
    ]
    return int(sum(np.prod(block, dtype=np.int64) * itemsize for block, itemsize in blocks))


_DTYPES = ("float32", "bfloat16", "int8", "float16", "int32")
_SPECS: tuple[tuple[Any, ...], ...] = (
    (),
    ("model",),
    (None, "model"),
    ("data", "model"),
    (("data", "model"),),
    ("data",),
    ("model", "data"),
)


def _plan_leaf(rng: np.random.Generator, placed_rate: float) -> LeafPlan:
    spec = _SPECS[int(rng.integers(0, len(_SPECS)))]
    ndim = max(len(spec), int(rng.integers(1, 3)))
    shape = tuple(8 * int(rng.integers(1, 5)) for _ in range(ndim))
    return LeafPlan(
        shape=shape,
        dtype_name=_DTYPES[int(rng.integers(0, len(_DTYPES)))],
        spec=spec,
        placed=bool(rng.random() < placed_rate),
    )


def _plan_tree(rng: np.random.Generator, kind: int, placed_rate: float) -> Any:
    leaf = lambda: _plan_leaf(rng, placed_rate)
    if kind == 0:
        return {
            "embed": leaf(),
            "layers": [{"w": leaf(), "b": leaf(), "norm": None} for _ in range(2)],
        }
    if kind == 1:
        return (Layer(w=leaf(), b=None), [leaf(), leaf()], {"scale": leaf()})
    return {
        "encoder": {"w": leaf(), "b": leaf()},
        "decoder": Point(x=leaf(), y=leaf()),
        "step": None,
    }


def _bytes_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for kind, rate, shape in zip(range(3), (1.0, 0.0, 0.5), ((2, 4), (4, 2), (2, 4)), strict=True):
        names = ("data", "model")
        plan = _plan_tree(rng, kind, rate)
        what = {
            1.0: "arrays placed on the mesh",
            0.0: "`ShapeDtypeStruct`s with shardings",
            0.5: "arrays and `ShapeDtypeStruct`s mixed",
        }[rate]
        shown = f"{describe(plan, 170)} on a {_mesh_text(shape, names)}"
        cases.append(
            Case(
                (plan,),
                label=f"{what}, {_mesh_text(shape, names)}",
                info={"mesh": (shape, names)},
                shown=shown,
            )
        )
    return cases


def _materialize(plan: Any, mesh: Any) -> Any:
    def make(leaf: LeafPlan) -> Any:
        sharding = NamedSharding(mesh, P(*leaf.spec))
        if leaf.placed and isinstance(mesh, jax.sharding.Mesh):
            return jax.device_put(np.ones(leaf.shape, jnp.dtype(leaf.dtype_name)), sharding)
        return jax.ShapeDtypeStruct(leaf.shape, jnp.dtype(leaf.dtype_name), sharding=sharding)

    return jax.tree.map(make, plan, is_leaf=_is_plan)


def _bytes_probe(fn: Callable[..., Any], case: Case) -> Any:
    (plan,) = case.args
    shape, names = case.info["mesh"]
    result = fn(_materialize(plan, plan_mesh(shape, names)))
    if isinstance(result, (jax.Array, np.ndarray, np.generic)) and np.ndim(result) == 0:
        result = np.asarray(result).item()
    return (
        result
        if isinstance(result, (int, float)) and not isinstance(result, bool)
        else {"returned": describe(result, 80)}
    )


def _plan_bytes(
    plan: Any, sizes: dict[str, int], block: Callable[[LeafPlan, dict[str, int]], int]
) -> int:
    return sum(block(leaf, sizes) for leaf in jax.tree.leaves(plan, is_leaf=_is_plan))


def _split(leaf: LeafPlan, sizes: dict[str, int]) -> int:
    parts = 1
    for entry in leaf.spec:
        for axis in (entry,) if isinstance(entry, str) else (entry or ()):
            parts *= sizes[axis]
    return parts


def _bytes_variants(case: Case, got: int, expected: int) -> list[Variant]:
    """Typical wrong counts of a case's bytes per device, each told for a count of ``got``."""
    (plan,) = case.args
    shape, names = case.info["mesh"]
    sizes, devices = dict(zip(names, shape, strict=True)), math.prod(shape)
    leaves = jax.tree.leaves(plan, is_leaf=_is_plan)
    full = lambda leaf, s: math.prod(leaf.shape) * jnp.dtype(leaf.dtype_name).itemsize
    holds = f"where each device holds {expected}"
    whole = Mistake(
        f"returned {got}, the bytes of the whole tree, {holds}.",
        "A sharded leaf is cut into blocks: a device holds only its block of each leaf, and "
        "a replicated leaf whole.",
        "Count each leaf's block, not the leaf: `leaf.sharding.shard_shape(leaf.shape)` is the "
        "shape of the block one device holds.",
    )
    divided = Mistake(
        f"returned {got}, the bytes of the whole tree divided by the {devices} devices, {holds}.",
        "A leaf is split only over the mesh axes its spec names: a replicated leaf (`P()`) is "
        "held whole by every device, and `P('model')` splits over `'model'` alone, the `'data'` "
        "axis holding copies.",
        "Let each leaf's sharding say what one device holds: "
        "`leaf.sharding.shard_shape(leaf.shape)`, instead of dividing by the number of devices.",
    )
    dtypes = sorted({leaf.dtype_name for leaf in leaves})
    four = Mistake(
        f"returned {got}, which counts 4 bytes per element of each block, {holds}; the "
        f"leaves' dtypes are {', '.join(dtypes)}.",
        "An element takes as many bytes as its dtype says: 4 for `float32` and `int32`, 2 for "
        "`bfloat16` and `float16`, 1 for `int8`.",
        "Multiply each block's number of elements by `np.dtype(leaf.dtype).itemsize`.",
    )
    structs = sum(not leaf.placed for leaf in leaves)
    placed = Mistake(
        f"returned {got}, the bytes of the placed arrays alone, {holds}: the {structs} "
        "`ShapeDtypeStruct` leaves were not counted.",
        "A `ShapeDtypeStruct` with a sharding describes an array that does not exist yet, block by "
        "block: its sharding says what each device would hold, and it counts like a placed "
        "array.",
        "Treat every leaf alike: arrays and `ShapeDtypeStruct`s both have `.shape`, `.dtype` and "
        "`.sharding`, so `leaf.sharding.shard_shape(leaf.shape)` works on each.",
        reread=TREES_WITHOUT_DATA,
    )

    blocks: list[tuple[Mistake, Callable[[LeafPlan, dict[str, int]], int]]] = [
        (whole, full),
        (divided, lambda leaf, s: full(leaf, s) // devices),
        (four, lambda leaf, s: 4 * math.prod(leaf.shape) // _split(leaf, s)),
        (placed, lambda leaf, s: full(leaf, s) // _split(leaf, s) if leaf.placed else 0),
    ]
    return [
        Variant(mistake=mistake, build=functools.partial(_plan_bytes, plan, sizes, block))
        for mistake, block in blocks
    ]


def _judge_bytes(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    if isinstance(got, dict):
        return Mistake(
            f"returned {got['returned']}, not a number: the result must be the number of "
            "bytes, an int.",
            "The function answers with a number that other code adds up and compares, not with "
            "a sentence for a reader.",
            "Return the sum itself, as an int, and leave the formatting to whoever prints it.",
        )
    if got == expected:
        return None
    found = first_mistake(got, _bytes_variants(case, got, expected), exact=True)
    return found or f"returned {got}, expected {expected} bytes per device."


BYTES_PER_DEVICE = Exercise(
    id="07.bytes_per_device",
    name="bytes_per_device",
    title="The bytes each device holds",
    points=2,
    cases=_bytes_cases,
    reference=_bytes_per_device,
    probe=_bytes_probe,
    judge=_judge_bytes,
    hints=(
        (
            "A device holds one block of each leaf; the block's shape comes from the leaf's "
            "sharding, and arrays and `ShapeDtypeStruct`s both carry one."
        ),
        (
            "Sum `math.prod(leaf.sharding.shard_shape(leaf.shape)) * "
            "np.dtype(leaf.dtype).itemsize` over `jax.tree.leaves(tree)`."
        ),
    ),
    reread=PER_DEVICE_MEMORY,
    forbidden=("tree_bytes_per_device",),
    mistakes=(
        "counts the bytes of the whole tree",
        "divides every leaf by the number of devices, replicated ones included",
        "assumes 4 bytes per element",
        "skips `ShapeDtypeStruct` leaves that have a sharding",
        "returns text instead of an int",
    ),
)


# --- 07.abstract_size ------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ModelPlan:
    """An init function's model, described: sizes, dtype, and which containers it uses."""

    vocab: int
    d: int
    hidden: int
    layers: int
    dtype_name: str
    style: int

    def __repr__(self) -> str:
        return (
            f"init(key) of a model with vocab={self.vocab}, d={self.d}, hidden={self.hidden}, "
            f"layers={self.layers}, dtype={self.dtype_name}"
        )


def make_init(
    model: ModelPlan, on_run: Callable[[], None] | None = None
) -> Callable[[jax.Array], Any]:
    """The init ``model`` describes: a function from a PRNG key to a parameter tree.

    ``on_run`` is called whenever the init's program runs, eagerly or compiled (a
    ``jax.debug.callback``), never when it is only traced, as ``jax.eval_shape`` does. The values
    are integer arithmetic on the key and each element's position, scaled by powers of two, rather
    than random numbers: XLA compiles that in a moment (a dozen ``jax.random.normal`` calls take
    seconds on 8 simulated devices), and every way of computing it, eager or jitted, sharded or not,
    gives the same bits."""
    dtype = jnp.dtype(model.dtype_name)

    def init(key: jax.Array) -> Any:
        seed = jnp.sum(jax.random.key_data(key) % 1009).astype(jnp.int32)
        counter = iter(range(1, 1000))

        def wave(*shape: int) -> jax.Array:  # exact values in [-0.5, 0.5), computed from the key
            position = jnp.arange(math.prod(shape), dtype=jnp.int32).reshape(shape) % 1024
            return ((position * 37 + seed * 11 + next(counter) * 101) % 1024).astype(
                jnp.float32
            ) / 1024 - 0.5

        def dense(m: int, n: int) -> jax.Array:
            return (wave(m, n) / 2).astype(dtype)

        if on_run is not None:
            jax.debug.callback(on_run)
        if model.style == 0:
            layers: Any = [
                {
                    "attn": dense(model.d, model.d),
                    "mlp": {
                        "w_in": dense(model.d, model.hidden),
                        "w_out": dense(model.hidden, model.d),
                    },
                    "norm": (1 + wave(model.d) / 64).astype(dtype),
                    "bias": None,
                }
                for _ in range(model.layers)
            ]
        else:
            layers = tuple(
                Layer(
                    w=(dense(model.d, model.hidden), dense(model.hidden, model.d)),
                    b=wave(model.hidden) / 64,
                )
                for _ in range(model.layers)
            )
        return {
            "embed": dense(model.vocab, model.d),
            "layers": layers,
            "head": Point(x=dense(model.d, model.vocab), y=None),
        }

    return init


def _abstract_size(init: Callable[[jax.Array], Any], key: jax.Array) -> tuple[int, int]:
    shapes = jax.eval_shape(init, key)
    leaves = jax.tree.leaves(shapes)
    return sum(leaf_size(s) or 0 for s in leaves), sum(leaf_nbytes(s) or 0 for s in leaves)


def _size_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for style, dtype in ((0, "float32"), (1, "bfloat16")):
        model = ModelPlan(
            vocab=8 * int(rng.integers(4, 9)),
            d=8 * int(rng.integers(1, 4)),
            hidden=16 * int(rng.integers(1, 4)),
            layers=int(rng.integers(1, 4)),
            dtype_name=dtype,
            style=style,
        )
        cases.append(
            Case(
                (model,), label=f"a small model in {dtype}", info={"big": False}, shown=repr(model)
            )
        )
    big = ModelPlan(
        vocab=32000,
        d=4096,
        hidden=4 * 4096,
        layers=8 + int(rng.integers(0, 5)),
        dtype_name="bfloat16",
        style=int(rng.integers(0, 2)),
    )
    cases.append(
        Case(
            (big,),
            label="a model of over a billion parameters (it must not be allocated)",
            info={"big": True},
            shown=repr(big),
        )
    )
    return cases


def _size_run(fn: Callable[..., Any], model: ModelPlan, seed: int) -> tuple[Any, bool]:
    ran: list[bool] = []
    result = fn(make_init(model, lambda: ran.append(True)), jax.random.key(seed))
    jax.effects_barrier()
    return result, bool(ran)


def _size_probe(fn: Callable[..., Any], case: Case) -> Any:
    (model,) = case.args
    if case.info["big"]:
        # The same init, tiny, first: an answer that runs init must not get to allocate billions.
        tiny = replace(model, vocab=8, d=8, hidden=8, layers=1)
        _, ran = _size_run(fn, tiny, 0)
        if ran:
            return {"ran": True, "size": None}
    result, ran = _size_run(fn, model, 1)
    if isinstance(result, (tuple, list)) and len(result) == 2:
        try:
            result = [int(np.asarray(x).item()) for x in result]
        except (TypeError, ValueError):
            return {"ran": ran, "size": describe(result, 80)}
        return {"ran": ran, "size": result}
    return {"ran": ran, "size": describe(result, 80)}


def _judge_size(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    if got["ran"]:
        return Mistake(
            "`init` ran for real: the check saw its program run, and running it allocates every "
            "array of the model.",
            "`jax.eval_shape` traces a function on abstract values: it returns the shapes and "
            "dtypes of what the function would build, and runs and allocates nothing. Calling "
            "`init`, jitted or not, builds the arrays.",
            "Get the abstract tree with `jax.eval_shape(init, key)` and count from its "
            "`ShapeDtypeStruct` leaves, which have `.shape` and `.dtype`.",
        )
    size, want = got["size"], expected["size"]
    if not isinstance(size, list):
        return (
            f"returned {size}, where a pair of ints (number of parameters, number of bytes) was "
            "expected."
        )
    if size == want:
        return None
    (model,) = case.args
    shapes = jax.eval_shape(make_init(model), jax.random.key(0))
    leaves = jax.tree.leaves(shapes)
    if size[0] == len(leaves):
        return Mistake(
            f"the first number, {size[0]}, is the number of leaves of the tree, which holds "
            f"{want[0]:,} parameters.",
            "A parameter is one element of a leaf: a `(vocab, d)` embedding table alone holds "
            "vocab × d of them.",
            "Add up the number of elements of each leaf, `math.prod(s.shape)`, instead of counting "
            "the leaves.",
            reread=CONTAINERS_AND_LEAVES,
        )
    if size[0] == want[0] and size[1] == 4 * want[0] and want[1] != size[1]:
        return Mistake(
            f"the parameter count is right, but the bytes assume 4 per element: {size[1]:,}, "
            f"where the leaves' own dtypes give {want[1]:,}.",
            "Each element takes as many bytes as its leaf's dtype says: `bfloat16` is 2, `float32` "
            "is 4.",
            "Multiply each leaf's number of elements by `np.dtype(s.dtype).itemsize`.",
        )
    if size == want[::-1]:
        return Mistake(
            f"returned ({size[0]:,}, {size[1]:,}): the two numbers are swapped.",
            "The order of a returned pair is part of the answer: the exercise asks for "
            "(parameters, bytes).",
            "Return the number of parameters first and the number of bytes second.",
        )
    if size[0] != want[0]:
        return f"counted {size[0]:,} parameters, expected {want[0]:,}."
    return f"counted {size[1]:,} bytes, expected {want[1]:,}."


ABSTRACT_SIZE = Exercise(
    id="07.abstract_size",
    name="abstract_size",
    title="Count a model without allocating it",
    points=2,
    cases=_size_cases,
    reference=_abstract_size,
    probe=_size_probe,
    judge=_judge_size,
    hints=(
        (
            "`jax.eval_shape` runs `init` abstractly: it returns the tree `init` would build, "
            "with shapes and dtypes at the leaves, and allocates nothing."
        ),
        (
            "`abstract = jax.eval_shape(init, key)`; sum `math.prod(s.shape)` and "
            "`math.prod(s.shape) * np.dtype(s.dtype).itemsize` over `jax.tree.leaves(abstract)`; "
            "return the pair of ints."
        ),
    ),
    reread=TREES_WITHOUT_DATA,
    forbidden=("tree_size", "tree_bytes", "tree_summary"),
    mistakes=(
        "runs `init` for real instead of with `jax.eval_shape`",
        "assumes 4 bytes per element",
        "counts leaves instead of parameters",
        "swaps the two numbers",
    ),
)


# --- 07.sharded_init -------------------------------------------------------------------------


def _sharded_init(init: Callable[[jax.Array], Any], key: jax.Array, shardings: Any) -> Any:
    compiled = jax.jit(init, out_shardings=shardings).lower(key).compile()
    return compiled(key)


_INIT_LAYOUTS: tuple[tuple[str, Callable[[Callable[[Any], NamedSharding]], Any]], ...] = (
    (
        "a full sharding tree",
        lambda s: {
            "embed": s(P("model", None)),
            "layers": [
                {
                    "attn": s(P(None, "model")),
                    "mlp": {"w_in": s(P(None, "model")), "w_out": s(P("model", None))},
                    "norm": s(P()),
                    "bias": None,
                }
            ],
            "head": Point(x=s(P(None, "model")), y=None),
        },
    ),
    (
        "a prefix: one sharding for all the layers",
        lambda s: {"embed": s(P(None, "model")), "layers": s(P()), "head": s(P("data", None))},
    ),
    ("a single sharding for the whole tree", lambda s: s(P("data"))),
)


def _init_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for i, (label, _) in enumerate(_INIT_LAYOUTS):
        model = ModelPlan(
            vocab=32,
            d=16,
            hidden=16 * int(rng.integers(1, 3)),
            layers=1,
            dtype_name=("float32", "bfloat16")[i % 2],
            style=0,
        )
        mesh = ((2, 4), ("data", "model"))
        shown = f"{model!r}; shardings: {label} on a {_mesh_text(*mesh)}"
        cases.append(
            Case(
                (model,),
                label=label,
                info={"layout": i, "mesh": mesh, "seed": int(rng.integers(0, 1000))},
                shown=shown,
            )
        )
    return cases


def _init_probe(fn: Callable[..., Any], case: Case) -> Any:
    (model,) = case.args
    mesh = run_mesh(*case.info["mesh"])
    shardings = _INIT_LAYOUTS[case.info["layout"]][1](lambda spec: NamedSharding(mesh, spec))
    made: list[list[Any]] = []

    def spied(key: jax.Array) -> Any:
        tree = make_init(model)(key)
        layouts: list[Any] = [None] * len(jax.tree.leaves(tree))
        made.append(layouts)
        for i, leaf in enumerate(jax.tree.leaves(tree)):
            jax.debug.inspect_array_sharding(
                leaf, callback=functools.partial(layouts.__setitem__, i)
            )
        return tree

    result = fn(spied, jax.random.key(case.info["seed"]), shardings)
    if result is None:
        return None
    leaves = jax.tree.leaves(result)
    shapes = jax.eval_shape(make_init(model), jax.random.key(0))
    wanted = jax.tree.leaves(
        jax.tree.broadcast(shardings, shapes, is_leaf=lambda x: isinstance(x, NamedSharding))
    )
    records: list[dict[str, Any]] = []
    for leaf in leaves:
        if not isinstance(leaf, jax.Array):
            records.append({"kind": type(leaf).__name__})
            continue
        layout = _sharding_record(leaf.sharding)
        records.append(
            {
                **layout,
                "kind": "Array",
                "layout": layout["kind"],
                "value": np.asarray(as_float32(leaf)),
                "dtype": str(leaf.dtype),
            }
        )
    # A trace that was only evaluated for shapes (jax.eval_shape) lays nothing out and reports
    # nothing.
    compiled = [layout for layout in made if any(s is not None for s in layout)]
    in_place = (
        len(leaves) == len(wanted)
        and bool(compiled)
        and all(
            all(isinstance(s, jax.sharding.Sharding) for s in layout)
            and all(
                s.is_equivalent_to(w, np.ndim(leaf))
                for s, w, leaf in zip(layout, wanted, leaves, strict=False)
            )
            for layout in compiled
        )
    )
    return {**_structure_record(result), "records": records, "in_place": in_place}


def _layout_problem(
    path: str, mine: dict[str, Any], theirs: dict[str, Any]
) -> str | Mistake | None:
    if mine["kind"] != "Array":
        return f"the leaf at {path} is of type {mine['kind']}, where init creates an array."
    if mine.get("spec") != theirs["spec"] or mine.get("axes") != theirs["axes"]:
        if "spec" in mine:
            got = spec_text(mine["spec"])
        else:
            got = f"a {mine.get('layout', 'sharding')} (not on the mesh)"
        return Mistake(
            f"the leaf at {path} is laid out as {got}, where the tree given says "
            f"{spec_text(theirs['spec'])}.",
            "`jit` puts its outputs where `out_shardings` says; without it, they land where XLA "
            "chooses, usually whole on one device.",
            "Pass shardings to `jax.jit` as `out_shardings`, the layout of what `init` returns: "
            "a prefix tree is fine there, as it is for `device_put`.",
            reread=SHARDINGS_IN_JIT,
        )
    if mine["dtype"] != theirs["dtype"]:
        return f"the leaf at {path} has dtype `{mine['dtype']}`, expected `{theirs['dtype']}`."
    if not trees_close(mine["value"], theirs["value"]):
        return Mistake(
            f"the values at {path} are not those `init(key)` gives for the key passed in.",
            "`init` is a function of its key: the same key gives the same parameters, another "
            "key other ones.",
            "Call `init` with the `key` argument itself, not with a key of your own.",
        )
    return None


def _judge_init(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    if not isinstance(got, dict) or "records" not in got:
        return f"returned {describe(got, 80)}, where the parameter tree was expected."
    problem = _structure_hint(got, expected, "the result")
    if problem:
        return problem
    for path, mine, theirs in zip(got["paths"], got["records"], expected["records"], strict=True):
        found = _layout_problem(path, mine, theirs)
        if found:
            return found
    if not got["in_place"]:
        return Mistake(
            "the values and shardings are right, but `init` created the whole tree first (on one "
            "device, or replicated) and it was moved into the shards afterwards: in the program "
            "that computes them, the arrays are laid out otherwise.",
            "Placing the result of `init`, with `device_put` or a `jit` without `out_shardings`, "
            "builds every array whole before cutting it up. Compiled with its output shardings, "
            "`init` computes on each device only that device's blocks.",
            "Give `jax.jit` the shardings when you compile `init`, as `out_shardings`, and call "
            "the compiled function on `key`; no `device_put` afterwards.",
        )
    return None


SHARDED_INIT = Exercise(
    id="07.sharded_init",
    name="sharded_init",
    title="Create the parameters in their shards",
    points=3,
    cases=_init_cases,
    reference=_sharded_init,
    probe=_init_probe,
    judge=_judge_init,
    hints=(
        (
            "Building the whole tree and cutting it up afterwards needs the whole model on one "
            "device; `jit` can instead compile `init` so that each device computes only its own "
            "blocks, laid out as the shardings say."
        ),
        (
            "`jax.jit` takes `out_shardings`, a tree of shardings (a prefix is fine) for what "
            "the function returns: compile `init` with `shardings` there and call the result on "
            "`key`."
        ),
    ),
    reread=TREES_WITHOUT_DATA,
    mistakes=(
        "creates the whole tree first, then moves it into shards",
        "leaves the parameters unsharded",
        "calls `init` with another key",
    ),
)


# --- 07.restore_resharded --------------------------------------------------------------------


def _restore_resharded(path: str, abstract: Any, shardings: Any) -> Any:
    import orbax.checkpoint as ocp

    def target(sharding: NamedSharding, subtree: Any) -> Any:
        return jax.tree.map(
            lambda s: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sharding), subtree
        )

    return ocp.StandardCheckpointer().restore(
        path,
        jax.tree.map(target, shardings, abstract, is_leaf=lambda x: isinstance(x, NamedSharding)),
    )


_RESTORE_PLANS: tuple[
    tuple[
        str,
        Shape,
        Shape,
        Callable[[Callable[[Any], NamedSharding]], Any],
        Callable[[Callable[[Any], NamedSharding]], Any],
    ],
    ...,
] = (
    (
        "saved on a 2 x 4 mesh, restored on a 4 x 2 mesh",
        (2, 4),
        (4, 2),
        lambda s: {
            "embed": s(P("model", None)),
            "layers": [{"w": s(P(None, "model")), "b": s(P())}] * 2,
        },
        lambda s: {"embed": s(P(None, "model")), "layers": s(P("data", None))},
    ),
    (
        "saved replicated, restored sharded with one sharding for the whole tree",
        (2, 4),
        (2, 4),
        lambda s: s(P()),
        lambda s: s(P("data", "model")),
    ),
)


def _restore_tree(rng: np.random.Generator) -> Any:
    return {
        "embed": random_array(rng, 16, 8),
        "layers": [{"w": random_array(rng, 8, 8), "b": random_array(rng, 8, 8)} for _ in range(2)],
    }


def _restore_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for i, (label, *_) in enumerate(_RESTORE_PLANS):
        tree = _restore_tree(rng)
        shown = f"a checkpoint of {describe(tree, 100)} {label}"
        cases.append(Case((tree,), label=label, info={"plan": i}, shown=shown))
    return cases


@contextlib.contextmanager
def devices_default_to_cpu() -> Iterator[None]:
    """While it lasts, ``jax.devices()`` and ``jax.local_devices()`` name the CPU's devices, those
    of the lesson's meshes, whatever the default backend.

    Orbax rebuilds a checkpoint's saved layout from ``jax.devices()``: on a TPU, a restore without
    a target would look for the 8 CPU devices of the lesson's mesh among the chip's one and stop
    with "Topology mismatch" instead of restoring as it does on a CPU.
    """
    if jax.default_backend() == "cpu":
        yield
        return
    devices, local_devices = jax.devices, jax.local_devices
    jax.devices = lambda backend=None: devices(backend or "cpu")
    jax.local_devices = lambda process_index=None, backend=None, host_id=None: local_devices(
        process_index, backend or "cpu", host_id
    )
    try:
        yield
    finally:
        jax.devices, jax.local_devices = devices, local_devices


def _restore_probe(fn: Callable[..., Any], case: Case) -> Any:
    import orbax.checkpoint as ocp

    (tree,) = case.args
    _, saved, loaded, save_layout, load_layout = _RESTORE_PLANS[case.info["plan"]]
    names = ("data", "model")
    save_mesh, load_mesh = run_mesh(saved, names), run_mesh(loaded, names)
    placed = jax.device_put(tree, save_layout(lambda spec: NamedSharding(save_mesh, spec)))
    shardings = load_layout(lambda spec: NamedSharding(load_mesh, spec))
    abstract = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), placed)
    folder = Path(tempfile.mkdtemp(prefix="course-checkpoint-"))
    absl = logging.getLogger("absl")
    level = absl.level
    try:
        checkpointer = ocp.StandardCheckpointer()
        checkpointer.save(folder / "checkpoint", placed)
        checkpointer.wait_until_finished()
        absl.setLevel(logging.CRITICAL)  # Orbax logs pages of errors before it raises
        with devices_default_to_cpu():
            result = fn(str(folder / "checkpoint"), abstract, shardings)
    finally:
        absl.setLevel(level)
        shutil.rmtree(folder, ignore_errors=True)
    if result is None:
        return None
    records = []
    for leaf in jax.tree.leaves(result):
        if isinstance(leaf, jax.Array):
            records.append(
                {
                    **_sharding_record(leaf.sharding),
                    "kind": "Array",
                    "value": np.asarray(leaf),
                    "dtype": str(leaf.dtype),
                }
            )
        else:
            records.append({"kind": type(leaf).__name__})
    return {**_structure_record(result), "records": records}


def _saved_specs(case: Case) -> dict[str, list[Any]]:
    """The spec each leaf of a case's checkpoint was saved with, by key path (plain entries)."""
    (tree,) = case.args
    is_spec = lambda x: isinstance(x, P)
    specs = jax.tree.broadcast(
        _RESTORE_PLANS[case.info["plan"]][3](lambda spec: spec), tree, is_leaf=is_spec
    )
    return {
        keystr(path): spec_entries(spec)
        for path, spec in jax.tree_util.tree_leaves_with_path(specs, is_leaf=is_spec)
    }


def _judge_restore(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    if not isinstance(got, dict) or "records" not in got:
        return f"returned {describe(got, 80)}, where the restored tree was expected."
    problem = _structure_hint(got, expected, "the restored tree")
    if problem:
        return problem
    for path, mine, theirs in zip(got["paths"], got["records"], expected["records"], strict=True):
        if mine["kind"] != "Array":
            return Mistake(
                f"the leaf at {path} is of type {mine['kind']}, not a `jax.Array`.",
                "A restored leaf is to live on the new mesh: a `jax.Array` laid out by its "
                "sharding. A NumPy array sits in the host's memory and has no sharding.",
                "Restore into a target whose leaves are `jax.ShapeDtypeStruct` with the new "
                "shardings, and return what restore gives without converting it.",
            )
        if mine.get("spec") != theirs["spec"] or mine.get("axes") != theirs["axes"]:
            got_layout = spec_text(mine["spec"]) if "spec" in mine else "another layout"
            problem = (
                f"the leaf at {path} came back as {got_layout}, expected "
                f"{spec_text(theirs['spec'])}"
            )
            if mine.get("spec") != _saved_specs(case).get(path):
                return problem + "."
            return Mistake(
                f"{problem}: the layout it was saved with, not the one `shardings` gives it.",
                "Without a target, Orbax restores each array as it was saved. A target tree of "
                "`jax.ShapeDtypeStruct` says the shape, dtype and sharding each leaf is to come "
                "back in; `shardings` may be a prefix, and a target needs one sharding per leaf.",
                "Spread `shardings` over `abstract` (`jax.tree.broadcast`, or `jax.tree.map(f, "
                "shardings, abstract)` with `f` mapping over the subtree it is handed), make "
                "`jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=...)` for each leaf, and pass "
                "that tree to `StandardCheckpointer().restore`.",
            )
        if not trees_close(mine["value"], theirs["value"]):
            return f"the values at {path} are not those saved."
    return None


RESTORE_RESHARDED = Exercise(
    id="07.restore_resharded",
    name="restore_resharded",
    title="Restore a checkpoint into new shardings",
    points=3,
    cases=_restore_cases,
    reference=_restore_resharded,
    probe=_restore_probe,
    judge=_judge_restore,
    hints=(
        (
            "Orbax restores into a target tree of `jax.ShapeDtypeStruct` that carries each "
            "leaf's shape, dtype and sharding. `shardings` may be a prefix of `abstract`, so "
            "each of its shardings must first be spread over the leaves of the subtree it "
            "covers."
        ),
        (
            "`jax.tree.broadcast(shardings, abstract)` gives one sharding per leaf (or "
            "`jax.tree.map(f, shardings, abstract)` hands `f` each sharding with its subtree); "
            "pair each leaf `s` with its sharding as `jax.ShapeDtypeStruct(s.shape, s.dtype, "
            "sharding=...)`, then `ocp.StandardCheckpointer().restore(path, target)`."
        ),
    ),
    reread=PITFALL_17,
    mistakes=(
        "restores into the layout the checkpoint was saved with",
        "returns NumPy arrays instead of `jax.Array`s",
    ),
)


EXERCISES = (SHARDINGS_FROM_RULES, BYTES_PER_DEVICE, ABSTRACT_SIZE, SHARDED_INIT, RESTORE_RESHARDED)
