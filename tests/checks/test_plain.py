"""Plain data (``course_lib.checks._plain``): whole trees recorded and rebuilt, short descriptions.

These tests are about that module, so they import it.
"""

from __future__ import annotations

import collections
import re

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import trees

import course_lib as cl
from course_lib.checks import _wire
from course_lib.checks._plain import abridge, describe, rebuild_tree, tree_plain


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
    long = describe(list(range(1000)))
    assert len(long) <= 160 and long.endswith(", 40, …]"), long  # whole numbers, then the bracket


def _brackets(text: str) -> str:
    """The brackets of ``text`` outside its quoted strings, in order."""
    return "".join(re.findall(r"[][(){}]", re.sub(r"'[^']*'", "", text)))


def _balanced(brackets: str) -> bool:
    pairs = {")": "(", "]": "[", "}": "{"}
    stack: list[str] = []
    for bracket in brackets:
        if bracket in pairs:
            if not stack or stack.pop() != pairs[bracket]:
                return False
        else:
            stack.append(bracket)
    return not stack


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="ab,: \n", max_size=60), st.integers(1, 60))
def test_abridge_cuts_words_at_the_last_space_that_leaves_room(text: str, limit: int) -> None:
    """Text of words: itself when it fits; else up to its last space that leaves room for " …";
    cut where the limit falls only when no space comes that early."""
    short = abridge(text, limit)
    assert len(short) <= limit
    if len(text) <= limit:
        assert short == text
        return
    spaces = [at for at, char in enumerate(text[: limit - 1]) if char.isspace()]
    if spaces:
        assert short == text[: spaces[-1]].rstrip() + " …", (text, short)
    else:
        assert short == text[: limit - 1] + "…", (text, short)


@settings(max_examples=40, deadline=None)
@given(trees(), st.integers(12, 80))
def test_describe_cuts_a_tree_between_words_and_closes_its_brackets(
    tree: object, limit: int
) -> None:
    whole, short = describe(tree, 10_000), describe(tree, limit)
    assert len(short) <= limit
    if short == whole:
        return
    kept, cut, _ = short.rpartition(" …")
    if not cut:  # no cut at a space fits: cut where the limit falls
        assert short == whole[: limit - 1].rstrip() + "…", short
        return
    assert whole.startswith(kept) and whole[len(kept)].isspace(), (whole, short)
    assert _balanced(_brackets(short)), short
