"""Turning what a learner's function returned into plain data, and back into trees for judging.

``to_plain`` reduces a value (numbers, strings, arrays, lists, tuples, dicts) to plain data and
refuses anything else. ``tree_plain`` records a whole pytree, containers and all (node type, keys,
metadata, leaves), so that list-vs-tuple or a namedtuple's type survives the trip to the grader.
``rebuild_tree`` turns that record back into a real tree of equivalent containers, which the core's
``tree_diff`` and ``assert_trees_close`` can compare. ``describe`` pictures a value for a hint in a
few words, and ``abridge`` fits such a text to a line, cutting it between words.
"""

import collections
import functools
from typing import Any

import jax
import numpy as np
from jax.tree_util import default_registry

from .._leaves import is_namedtuple, key_text, leaf_spec

_MAX_DEPTH = 60


class NotPlainError(TypeError):
    """The value cannot be reduced to plain data."""


def _array(x: Any) -> np.ndarray:
    array = np.asarray(x)
    if array.dtype.kind not in "biufc":
        raise NotPlainError(f"an array of dtype {array.dtype}")
    return array


def to_plain(value: Any, _depth: int = 0) -> Any:
    """Plain data for ``value``: arrays (JAX or NumPy, scalars included) become NumPy arrays.

    >>> to_plain({"n": jnp.int32(3), "names": ("a", None)})
    {'n': array(3, dtype=int32), 'names': ('a', None)}
    """
    if _depth > _MAX_DEPTH:
        raise NotPlainError("a value nested too deeply")
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return value
    if isinstance(value, (jax.Array, np.ndarray, np.generic)):
        return _array(value)
    if is_namedtuple(value):
        raise NotPlainError(f"a namedtuple {type(value).__name__}")
    if type(value) in (list, tuple):
        return type(value)(to_plain(item, _depth + 1) for item in value)
    if type(value) is dict:
        return {
            to_plain(key, _depth + 1): to_plain(item, _depth + 1) for key, item in value.items()
        }
    raise NotPlainError(f"a {type(value).__name__}")


# --- whole trees -----------------------------------------------------------------------------


def _short_repr(x: Any, limit: int = 80) -> str:
    try:
        text = repr(x)
    except Exception:  # noqa: BLE001 (a learner's object may fail to print)
        text = f"<{type(x).__name__}>"
    return abridge(text, limit)


def _node_kind(node: Any) -> str:
    if is_namedtuple(node):
        return "namedtuple"
    for kind in (collections.OrderedDict, collections.defaultdict):
        if type(node) is kind:
            return kind.__name__
    if type(node) in (dict, list, tuple):
        return type(node).__name__
    return "custom"


def _plain_leaf(leaf: Any) -> dict[str, Any]:
    if leaf is None or isinstance(leaf, (bool, int, float, complex, str, bytes)):
        return {"leaf": leaf}
    if isinstance(leaf, (jax.Array, np.ndarray, np.generic)):
        try:
            return {"leaf": _array(leaf)}
        except NotPlainError:
            pass
    return {"opaque": type(leaf).__name__, "repr": _short_repr(leaf)}


def _plain_key(key: Any) -> Any:
    return key if isinstance(key, (str, int, float, bool)) or key is None else _short_repr(key)


def tree_plain(tree: Any, _depth: int = 0) -> dict[str, Any]:
    """A plain record of ``tree``: each node's kind, type name, child keys, metadata; the leaves.

    >>> tree_plain({"b": None, "a": [1.0]})["keys"]
    ["['a']", "['b']"]
    """
    if _depth > _MAX_DEPTH:
        raise NotPlainError("a tree nested too deeply")
    if tree is None:
        return {"node": "None"}
    flat = default_registry.flatten_one_level_with_keys(tree)
    if flat is None:
        return _plain_leaf(tree)
    children, metadata = flat
    kind = _node_kind(tree)
    if kind == "namedtuple":
        # Field names come from the class: flatten_one_level_with_keys names every field like the
        # first.
        keys = [f".{name}" for name in type(tree)._fields]
    else:
        keys = [key_text(key) for key, _ in children]
    record: dict[str, Any] = {
        "node": kind,
        "type": type(tree).__name__,
        "keys": keys,
        "children": [tree_plain(child, _depth + 1) for _, child in children],
    }
    if kind == "namedtuple":
        record["fields"] = list(type(tree)._fields)
    elif kind in ("dict", "OrderedDict", "defaultdict"):
        record["dict_keys"] = [_plain_key(key.key) for key, _ in children]
        if kind == "defaultdict":
            record["factory"] = getattr(metadata[0], "__name__", _short_repr(metadata[0]))
    elif kind == "custom":
        record["meta"] = _short_repr(metadata, 200)
    return record


class PlainNode:
    """Stands in for a class the judge cannot import: its type name, metadata and children."""

    def __init__(self, type_name: str, meta: str, keys: tuple[str, ...], children: list[Any]):
        self.type_name, self.meta, self.keys, self.children = type_name, meta, keys, children

    def __repr__(self) -> str:
        pairs = zip(self.keys, self.children, strict=True)
        return f"{self.type_name}({', '.join(f'{k}={c!r}' for k, c in pairs)})"


class _TextKey:
    """A key that prints as the text recorded for it (``keystr`` joins ``str`` of each key)."""

    def __init__(self, text: str):
        self.text = text

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


def _flatten_plain_node(
    node: PlainNode,
) -> tuple[list[tuple[Any, Any]], tuple[str, str, tuple[str, ...]]]:
    return [(_TextKey(k), c) for k, c in zip(node.keys, node.children, strict=True)], (
        node.type_name,
        node.meta,
        node.keys,
    )


def _unflatten_plain_node(aux: tuple[str, str, tuple[str, ...]], children: Any) -> PlainNode:
    return PlainNode(aux[0], aux[1], aux[2], list(children))


jax.tree_util.register_pytree_with_keys(PlainNode, _flatten_plain_node, _unflatten_plain_node)


class OpaqueLeaf:
    """Stands in for a leaf not a number, string or array: equal when type and repr are."""

    def __init__(self, type_name: str, text: str):
        self.type_name, self.text = type_name, text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OpaqueLeaf) and (self.type_name, self.text) == (
            other.type_name,
            other.text,
        )

    def __hash__(self) -> int:
        return hash((self.type_name, self.text))

    def __repr__(self) -> str:
        return self.text


@functools.cache
def _namedtuple_class(type_name: str, fields: tuple[str, ...]) -> type:
    return collections.namedtuple(type_name, fields)


def rebuild_tree(record: Any) -> Any:
    """A real tree, equivalent containers and all, from a :func:`tree_plain` record.

    A malformed record raises ``ValueError``.
    """
    if not isinstance(record, dict):
        raise ValueError("a tree record must be a dict")
    if "leaf" in record:
        return record["leaf"]
    if "opaque" in record:
        return OpaqueLeaf(str(record["opaque"]), str(record.get("repr", "")))
    kind = record.get("node")
    if kind == "None":
        return None
    children = [rebuild_tree(child) for child in record.get("children", [])]
    if kind == "list":
        return children
    if kind == "tuple":
        return tuple(children)
    if kind == "namedtuple":
        return _namedtuple_class(str(record["type"]), tuple(record["fields"]))(*children)
    if kind in ("dict", "OrderedDict", "defaultdict"):
        keys = record["dict_keys"]
        if kind == "dict":
            return dict(zip(keys, children, strict=True))
        if kind == "OrderedDict":
            return collections.OrderedDict(zip(keys, children, strict=True))
        return collections.defaultdict(None, zip(keys, children, strict=True))
    if kind == "custom":
        keys = tuple(record["keys"])
        if len(keys) != len(children):
            raise ValueError("a custom node's record must have one key per child")
        return PlainNode(str(record["type"]), str(record.get("meta", "")), keys, children)
    raise ValueError(f"unknown node kind {kind!r} in a tree record")


# --- describing inputs and results in hints ----------------------------------------------------


def describe(value: Any, limit: int = 160) -> str:
    """A short, deterministic picture of a tree: arrays as ``f32[3,2]``, containers as written.

    >>> describe({"b": None, "w": [jnp.ones((3, 2)), 1.5]})
    "{'b': None, 'w': [f32[3,2], 1.5]}"
    """
    return abridge(_describe(value, 0), limit)


_CLOSING = {"(": ")", "[": "]", "{": "}"}


def abridge(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a space outside quotes, so that no word or
    string is cut: an ellipsis stands for the rest, and the brackets left open are closed after it.

    >>> abridge("{'w': f32[3,2], 'b': f32[2], 'scale': None}", 36)
    "{'w': f32[3,2], 'b': f32[2], …}"
    >>> abridge("Dense(w=f32[4,2], activation='leaky relu') on a mesh", 40)
    'Dense(w=f32[4,2], …)'

    Where no cut at a space fits, the text is cut where the limit falls, its trailing spaces left
    out, so that " …" always marks a cut between words:

    >>> abridge("Pair(first=None, second=None)", 18)
    'Pair(first=None,…'

    """
    if len(text) <= limit:
        return text
    still_open: list[str] = []  # the closing brackets owed at this point, innermost last
    quote, escaped = "", False
    word_end = 0  # where the text before this point ends, its trailing spaces left out
    best: tuple[int, str] | None = None  # the last place to cut that fits: its end, its closers
    for at, char in enumerate(text[:limit]):
        if char.isspace() and not quote:
            if word_end + 2 + len(still_open) <= limit:  # the text, " …" and the closers
                best = (word_end, "".join(reversed(still_open)))
            continue
        word_end = at + 1
        if quote:  # inside a string: only its own closing quote counts, an escaped one not
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "'\"" and (at == 0 or not text[at - 1].isalnum()):  # "learner's" is a word
            quote = char
        elif char in _CLOSING:
            still_open.append(_CLOSING[char])
        elif still_open and char == still_open[-1]:
            still_open.pop()
    if best is None:  # no space early enough: cut where the limit falls, never after a space
        return text[: limit - 1].rstrip() + "…"
    return text[: best[0]] + " …" + best[1]


def _describe(x: Any, depth: int) -> str:
    if depth > 12:
        return "..."
    if isinstance(x, (jax.Array, np.ndarray)):
        return leaf_spec(x)
    if isinstance(x, np.generic):
        return f"np.{type(x).__name__}({x.item()!r})"
    if is_namedtuple(x):
        inner = ", ".join(
            f"{f}={_describe(v, depth + 1)}" for f, v in zip(type(x)._fields, x, strict=True)
        )
        return f"{type(x).__name__}({inner})"
    if isinstance(x, dict):
        inner = ", ".join(f"{k!r}: {_describe(v, depth + 1)}" for k, v in x.items())
        if type(x) is dict:
            return "{" + inner + "}"
        return f"{type(x).__name__}({{{inner}}})"
    if type(x) is list:
        return "[" + ", ".join(_describe(v, depth + 1) for v in x) + "]"
    if type(x) is tuple:
        return (
            "(" + ", ".join(_describe(v, depth + 1) for v in x) + ("," if len(x) == 1 else "") + ")"
        )
    if isinstance(x, PlainNode):
        return repr(x)
    if isinstance(x, (bool, int, float, complex, str, bytes)) or x is None:
        return repr(x)
    return _short_repr(x, 60)
