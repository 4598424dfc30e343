"""tree_summary, tree_diff and assert_trees_close (course_lib/_inspect.py)."""

import collections
import dataclasses
import re
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import course_lib as cl
from course_lib._leaves import same_structure


class Point(NamedTuple):
    x: Any
    y: Any


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Dense:
    w: Any
    b: Any
    activation: Any = dataclasses.field(default="relu", metadata={"static": True})


# --- tree_summary ------------------------------------------------------------------------------


def test_tree_summary_rows_and_totals() -> None:
    tree = {
        "w": jnp.ones((3, 2)),
        "b": jnp.zeros(2, jnp.bfloat16),
        "skip": None,
        "n": np.arange(4, dtype=np.int64),
    }
    summary = cl.tree_summary(tree)
    assert [(r.path, r.shape, r.dtype, r.size, r.nbytes) for r in summary.rows] == [
        ("['b']", (2,), "bfloat16", 2, 4),
        ("['n']", (4,), "int64", 4, 32),
        ("['w']", (3, 2), "float32", 6, 24),
    ]
    assert (summary.size, summary.nbytes) == (12, 60)


def test_tree_summary_text_lines() -> None:
    lines = str(cl.tree_summary({"w": jnp.ones((3, 2)), "b": [jnp.zeros(2), 0.5]})).splitlines()
    assert lines[0].split() == ["path", "shape", "dtype", "size", "bytes"]
    assert set(lines[1]) == {"-"} and set(lines[-2]) == {"-"}
    assert lines[2].split() == ["['b'][0]", "(2,)", "float32", "2", "8", "B"]
    assert lines[3].split() == ["['b'][1]", "()", "float32", "1", "4", "B"]
    assert lines[4].split() == ["['w']", "(3,", "2)", "float32", "6", "24", "B"]
    assert lines[-1].split() == ["total:", "3", "leaves", "9", "36", "B"]
    assert len({len(line) for line in lines[:2]}) == 1  # the rule is as wide as the header


def test_tree_summary_total_in_kib_and_one_leaf() -> None:
    text = str(cl.tree_summary(jnp.zeros((16, 32))))
    assert "<root>" in text
    assert text.splitlines()[-1].split() == [
        "total:",
        "1",
        "leaf",
        "512",
        "2.0",
        "KiB",
    ]  # 512 * 4 = 2048 bytes


def test_tree_summary_of_non_array_leaves_and_empty_tree() -> None:
    summary = cl.tree_summary({"act": "relu", "w": jnp.ones(2)})
    assert (
        summary.rows[0].path == "['act']"
        and summary.rows[0].shape is None
        and summary.rows[0].dtype == "str"
    )
    assert (summary.size, summary.nbytes) == (2, 8)
    empty = cl.tree_summary({"a": None})
    assert empty.rows == () and str(empty).splitlines()[-1].split() == [
        "total:",
        "0",
        "leaves",
        "0",
        "0",
        "B",
    ]


def _group(pattern: str, text: str) -> str:
    found = re.search(pattern, text)
    assert found is not None, f"{pattern!r} not in {text!r}"
    return found[1]


def test_tree_summary_html_table_with_totals() -> None:
    page = cl.tree_summary({"w<": jnp.ones((3, 2)), "b": jnp.zeros(2)})._repr_html_()
    assert page.startswith("<table>") and page.endswith("</table>")
    body = _group(r"<tbody>(.*)</tbody>", page)
    assert body.count("<tr>") == 2
    assert "[&#x27;w&lt;&#x27;]" in body  # escaped, never raw markup
    foot = _group(r"<tfoot>(.*)</tfoot>", page)
    assert re.findall(r"<th>([^<]*)</th>", foot) == ["total: 2 leaves", "", "", "8", "32 B"]


# --- tree_diff -----------------------------------------------------------------------------------


def test_tree_diff_list_versus_tuple() -> None:
    assert cl.tree_diff({"a": [1.0, 2.0]}, {"a": (1.0, 2.0)}) == ["at ['a']: list in a, tuple in b"]


def test_tree_diff_namedtuple_versus_tuple() -> None:
    assert cl.tree_diff([Point(1.0, 2.0)], [(1.0, 2.0)]) == [
        "at [0]: namedtuple Point in a, tuple in b"
    ]


def test_tree_diff_dict_keys() -> None:
    diff = cl.tree_diff({"w": 1.0, "b": 2.0}, {"w": 1.0, "bias": 2.0, "c": 3.0})
    assert diff == ["at <root>: dict keys differ: ['b'] only in a; ['bias'], ['c'] only in b"]


def test_tree_diff_ordered_dict_key_order() -> None:
    a = collections.OrderedDict(w=1.0, b=2.0)
    b = collections.OrderedDict(b=2.0, w=1.0)
    assert not same_structure(a, b)
    (line,) = cl.tree_diff(a, b)
    assert (
        line == "at <root>: OrderedDict keys differ: the same keys in another order "
        "(['w'], ['b'] in a, ['b'], ['w'] in b)"
    )


def test_tree_diff_lengths() -> None:
    assert cl.tree_diff([1.0, [2.0, 3.0]], [1.0, [2.0]]) == [
        "at [1]: list of length 2 in a, length 1 in b"
    ]
    assert cl.tree_diff((1.0,), (1.0, 2.0, 3.0)) == [
        "at <root>: tuple of length 1 in a, length 3 in b"
    ]


def test_tree_diff_static_field_of_a_registered_dataclass() -> None:
    a = {"layer": Dense(jnp.ones(2), jnp.ones(1), "relu")}
    b = {"layer": Dense(jnp.ones(2), jnp.ones(1), "tanh")}
    assert not same_structure(a, b)
    assert cl.tree_diff(a, b) == [
        "at ['layer']: Dense node metadata (static fields) ('relu',) in a, ('tanh',) in b"
    ]


def test_tree_diff_static_field_holding_an_array_does_not_crash() -> None:
    a = Dense(jnp.ones(2), jnp.ones(1), np.array([1, 2]))
    b = Dense(jnp.ones(2), jnp.ones(1), np.array([1, 3]))
    (line,) = cl.tree_diff(a, b)
    assert line.startswith("at <root>: Dense node metadata (static fields)")


def test_tree_diff_leaf_shape_and_dtype() -> None:
    a = {"w": jnp.ones((3, 2)), "n": jnp.ones(2, jnp.int32)}
    b = {"w": jnp.ones((2, 3)), "n": jnp.ones(2, jnp.float32)}
    assert cl.tree_diff(a, b) == [
        "at ['n']: dtype int32 in a, float32 in b",
        "at ['w']: shape (3, 2) in a, (2, 3) in b",
    ]


def test_tree_diff_none_versus_leaf() -> None:
    assert cl.tree_diff({"b": None}, {"b": jnp.zeros(3)}) == [
        "at ['b']: None (an empty subtree) in a, a leaf (f32[3]) in b"
    ]
    assert cl.tree_diff([0.5], [None]) == [
        "at [0]: a leaf (float 0.5) in a, None (an empty subtree) in b"
    ]


def test_tree_diff_node_versus_leaf_and_leaf_types() -> None:
    assert cl.tree_diff({"w": {"k": 1.0}}, {"w": 1.0}) == [
        "at ['w']: a dict node in a, a leaf (float 1.0) in b"
    ]
    assert cl.tree_diff(["relu"], [jnp.ones(2)]) == ["at [0]: leaf 'relu' in a, leaf f32[2] in b"]


def test_tree_diff_names_each_namedtuple_field() -> None:
    # The fields are reported under their own names, and a field is compared with the same field.
    a = Point(jnp.ones(2), jnp.ones(3))
    assert cl.tree_diff(a, Point(jnp.ones(2), jnp.ones(3))) == []
    assert cl.tree_diff(a, Point(jnp.ones(2), jnp.ones(4))) == ["at .y: shape (3,) in a, (4,) in b"]


def test_tree_diff_several_differences_with_names() -> None:
    a = {"enc": [jnp.ones(2), Dense(jnp.ones(2), None)], "dec": (jnp.ones(1),)}
    b = {"enc": [jnp.ones(3), Dense(jnp.ones(2), jnp.ones(1))], "dec": [jnp.ones(1)]}
    assert cl.tree_diff(a, b, names=("params", "grads")) == [
        "at ['dec']: tuple in params, list in grads",
        "at ['enc'][0]: shape (2,) in params, (3,) in grads",
        "at ['enc'][1].b: None (an empty subtree) in params, a leaf (f32[1]) in grads",
    ]


def test_tree_diff_ignores_values_and_prints_plainly() -> None:
    same = cl.tree_diff({"w": jnp.ones(2)}, {"w": jnp.zeros(2)})
    assert same == [] and repr(same) == "TreeDiff: no differences"
    two = cl.tree_diff([jnp.ones(1), jnp.ones(1)], [jnp.ones(2), jnp.ones(3)])
    assert (
        repr(two) == "TreeDiff: 2 differences\n"
        "  at [0]: shape (1,) in a, (2,) in b\n"
        "  at [1]: shape (1,) in a, (3,) in b"
    )


# --- assert_trees_close
# -------------------------------------------------------------------------------


def test_assert_trees_close_passes_within_tolerance() -> None:
    actual = {"w": jnp.array([1.0, 2.0]), "b": [None, 3.0]}
    cl.assert_trees_close(actual, {"w": jnp.array([1.0 + 5e-7, 2.0]), "b": [None, 3.0]})
    cl.assert_trees_close(actual, {"w": jnp.array([1.1, 2.0]), "b": [None, 3.0]}, atol=0.11)


def test_assert_trees_close_structure_message() -> None:
    with pytest.raises(AssertionError) as info:
        cl.assert_trees_close({"w": jnp.ones(2), "b": [1.0]}, {"w": jnp.ones(2), "b": (1.0,)})
    message = str(info.value)
    assert message.startswith("trees differ in structure:\n")
    assert f"actual:   {jax.tree.structure({'w': 1.0, 'b': [1.0]})}" in message
    assert f"expected: {jax.tree.structure({'w': 1.0, 'b': (1.0,)})}" in message
    assert "at ['b']: list in actual, tuple in expected" in message


def test_assert_trees_close_names_the_first_differing_leaf() -> None:
    actual = {"a": jnp.ones(3), "b": jnp.array([[1.0, 2.0], [3.0, 4.0]]), "c": jnp.zeros(1)}
    expected = {"a": jnp.ones(3), "b": jnp.array([[1.0, 2.5], [3.0, 2.0]]), "c": jnp.ones(1)}
    with pytest.raises(AssertionError) as info:
        cl.assert_trees_close(actual, expected)
    # Of the two bad elements of ['b'], |4 - 2| = 2 at (1, 1) is the larger; ['c'] is never reached.
    assert str(info.value) == (
        "leaf ['b'] differs: 2 of 4 elements not close (rtol=1e-05, atol=1e-08); "
        "largest difference 2 at index (1, 1): actual 4.0, expected 2.0"
    )


def test_assert_trees_close_respects_rtol_and_atol() -> None:
    actual, expected = [jnp.array(100.0)], [jnp.array(100.05)]
    with pytest.raises(AssertionError, match=r"leaf \[0\] differs: 1 of 1 elements"):
        cl.assert_trees_close(actual, expected)
    cl.assert_trees_close(actual, expected, rtol=1e-3)  # 0.05 <= 1e-3 * 100.05
    cl.assert_trees_close(actual, expected, rtol=0.0, atol=0.06)
    with pytest.raises(AssertionError, match=r"rtol=0, atol=0.04"):
        cl.assert_trees_close(actual, expected, rtol=0.0, atol=0.04)


def test_assert_trees_close_shape_and_non_array_leaves() -> None:
    with pytest.raises(AssertionError, match=r"leaf \['w'\] has shape \(2,\), expected \(3,\)"):
        cl.assert_trees_close({"w": jnp.ones(2)}, {"w": jnp.ones(3)})
    cl.assert_trees_close(["relu", 1.0], ["relu", 1.0])
    with pytest.raises(AssertionError, match=r"leaf \[0\] differs: actual 'relu', expected 'tanh'"):
        cl.assert_trees_close(["relu"], ["tanh"])


def test_assert_trees_close_nan_matches_nan_only_with_equal_nan() -> None:
    nan = [jnp.array([jnp.nan, 1.0])]
    with pytest.raises(AssertionError, match=r"1 of 2 elements not close"):
        cl.assert_trees_close(nan, nan)
    cl.assert_trees_close(nan, nan, equal_nan=True)
    with pytest.raises(AssertionError, match=r"1 of 2 elements not close"):
        cl.assert_trees_close(nan, [jnp.array([0.0, 1.0])], equal_nan=True)


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        ([jnp.array(1.0)], [jnp.array(1.0 + 5e-6)]),  # within rtol 1e-5
        ([jnp.array(1.0)], [jnp.array(1.0 + 5e-5)]),  # beyond it
        ([jnp.array(0.0)], [jnp.array(5e-9)]),  # within atol 1e-8
        ([jnp.array(0.0)], [jnp.array(5e-7)]),  # beyond it
        ([jnp.array([jnp.nan])], [jnp.array([jnp.nan])]),  # NaN is not NaN by default
        ([jnp.array([jnp.inf])], [jnp.array([jnp.inf])]),
    ],
)
def test_assert_trees_close_and_tree_allclose_share_one_closeness(
    actual: list[jax.Array], expected: list[jax.Array]
) -> None:
    try:
        cl.assert_trees_close(actual, expected)
        passed = True
    except AssertionError:
        passed = False
    assert passed is cl.tree_allclose(actual, expected)
    assert passed is bool(np.allclose(actual[0], expected[0]))
