"""Plain data (``course_lib.checks._plain``): whole trees recorded and rebuilt, short descriptions.

These tests are about that module, so they import it.
"""

from __future__ import annotations

import collections

import jax
import jax.numpy as jnp
import numpy as np

import course_lib as cl
from course_lib.checks import _wire
from course_lib.checks._plain import describe, rebuild_tree, tree_plain


def test_tree_plain_round_trip_keeps_structure() -> None:
    Pair = collections.namedtuple("Pair", "left right")
    tree = {
        "b": [1.0, None, (jnp.ones((2, 3)),)],
        "a": Pair(jnp.int32(3), None),
        "o": collections.OrderedDict(z=1, y=2),
    }
    rebuilt = rebuild_tree(_wire.loads(_wire.dumps(tree_plain(tree))))
    assert str(jax.tree.structure(rebuilt)).replace("Pair", "P") == str(
        jax.tree.structure(tree)
    ).replace("Pair", "P")
    assert [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(rebuilt)] == [
        jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(tree)
    ]
    assert not cl.tree_diff(rebuilt, rebuild_tree(tree_plain(tree)))


def test_describe_is_short_and_stable() -> None:
    tree = {"w": [jnp.ones((3, 2)), 1.5], "b": None, "c": np.zeros(2, np.int32)}
    assert describe(tree) == "{'w': [f32[3,2], 1.5], 'b': None, 'c': i32[2]}"
    assert len(describe(list(range(1000)))) == 160
