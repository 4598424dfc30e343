"""Tests for course_lib.viz: the tree drawing, the tree explorer and the training playground."""

import base64
import collections
import dataclasses
import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

import matplotlib

matplotlib.use("Agg")

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import course_lib as cl
from course_lib import viz


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Linear:
    w: jax.Array
    b: jax.Array
    name: str = dataclasses.field(metadata={"static": True}, default="dense")


class Box:
    """A class registered by hand, with metadata that is not a dataclass field."""

    def __init__(self, value: Any, tag: Any) -> None:
        self.value, self.tag = value, tag


jax.tree_util.register_pytree_with_keys(
    Box,
    lambda box: (((jax.tree_util.GetAttrKey("value"), box.value),), box.tag),
    lambda tag, kids: Box(next(iter(kids)), tag),
)

Point = collections.namedtuple("Point", "x y")
Pair = collections.namedtuple("Pair", "w weight")


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    yield
    plt.close("all")


def _nested() -> dict[str, Any]:
    point = Point(jnp.zeros((2, 2)), 3)
    return {"a": [1.0, (jnp.ones(3), None)], "b": None, "c": (point, {"d": jnp.int32(1)}), "e": []}


def _linears() -> dict[str, Linear]:
    return {
        "layer": Linear(jnp.ones((4, 3)), jnp.zeros(3)),
        "out": Linear(jnp.ones((3, 1)), jnp.zeros(1), "head"),
    }


def _params() -> dict[str, jax.Array]:
    return {"w": jnp.ones((3, 2)), "b": jnp.zeros(2)}


def _layers(n: int, width: int = 8) -> dict[str, dict[str, jax.Array]]:
    return {f"layer_{i}": {"w": jnp.ones((width, width)), "b": jnp.zeros(width)} for i in range(n)}


def _texts(fig: Figure, kind: str | None = None) -> list[str]:
    texts = list(fig.axes[0].texts)
    if kind is not None:
        texts = [t for t in texts if (t.get_gid() or "").startswith(f"tree-{kind}")]
    return [t.get_text() for t in texts]


def _bottom_texts(fig: Figure) -> list[str]:
    return [t for k in ("leaf", "none", "summary", "more") for t in _texts(fig, k)]


# draw_tree


def test_draw_tree_params_labels() -> None:
    fig = viz.draw_tree(_params())
    assert isinstance(fig, Figure)
    assert sorted(_texts(fig)) == ["['b']", "['w']", "dict", "f32[2]", "f32[3,2]"]
    assert _texts(fig, "node") == ["dict"]
    assert sorted(_texts(fig, "leaf")) == ["f32[2]", "f32[3,2]"]
    assert sorted(_texts(fig, "edge")) == ["['b']", "['w']"]


def test_draw_tree_is_detached_from_pyplot() -> None:
    before = plt.get_fignums()
    viz.draw_tree(_params())
    assert plt.get_fignums() == before


def test_draw_tree_containers_none_and_scalars() -> None:
    fig = viz.draw_tree(_nested())
    assert sorted(_texts(fig, "node")) == [
        "Point",
        "dict",
        "dict",
        "list",
        "list (empty)",
        "tuple",
        "tuple",
    ]
    assert sorted(_texts(fig, "leaf")) == ["1.0", "3", "f32[2,2]", "f32[3]", "i32[]"]
    assert _texts(fig, "none") == ["None", "None"]
    assert {".x", ".y", "['d']", "[0]", "[1]", "['a']", "['b']", "['e']"} <= set(
        _texts(fig, "edge")
    )


def test_draw_tree_static_metadata() -> None:
    fig = viz.draw_tree(_linears())
    assert sorted(_texts(fig, "node")) == ["Linear name='dense'", "Linear name='head'", "dict"]
    assert sorted(_texts(fig, "edge")) == [".b", ".b", ".w", ".w", "['layer']", "['out']"]


def test_draw_tree_registered_node_metadata() -> None:
    fig = viz.draw_tree(Box(jnp.ones(2), "blue"))
    assert _texts(fig, "node") == ["Box 'blue'"]
    assert _texts(fig, "edge") == [".value"]


@pytest.mark.parametrize(
    "tree, text", [(jnp.ones(3), "f32[3]"), (None, "None"), ({}, "dict (empty)"), (5, "5")]
)
def test_draw_tree_single_node(tree: Any, text: Any) -> None:
    assert _texts(viz.draw_tree(tree)) == [text]


def test_draw_tree_title() -> None:
    fig = viz.draw_tree(_params(), title="params")
    assert _texts(fig, "title") == ["params"]


def test_draw_tree_leaf_count_under_max() -> None:
    tree = _layers(25)  # 50 leaves
    fig = viz.draw_tree(tree, max_leaves=50)
    assert len(_texts(fig, "leaf")) == 50
    assert _texts(fig, "summary") == _texts(fig, "more") == _texts(fig, "note") == []


def _count(pattern: str, text: str) -> int:
    found = re.search(pattern, text)
    assert found is not None, f"{pattern!r} not in {text!r}"
    return int(found[1])


def _counts(texts: Iterable[str]) -> tuple[int, int]:
    """Leaves and params stated by the summary and "more" boxes."""
    leaves = params = 0
    for text in texts:
        flat = text.replace(",", "")
        leaves += _count(r"(\d+) lea(f|ves)", flat)
        params += _count(r"(\d+) params?", flat)
    return leaves, params


def test_draw_tree_summarises_200_leaves() -> None:
    tree = {"encoder": [_params() for _ in range(50)], "decoder": [_params() for _ in range(50)]}
    fig = viz.draw_tree(tree, max_leaves=50)
    assert len(_bottom_texts(fig)) <= 50
    folded = _texts(fig, "summary") + _texts(fig, "more")
    assert folded
    # What is drawn plus what the boxes stand for is the whole tree.
    drawn = _texts(fig, "leaf")
    drawn_params = sum(6 if text.endswith("f32[3,2]") else 2 for text in drawn)
    leaves, params = _counts(folded)
    assert len(drawn) + leaves == 200
    assert drawn_params + params == 800
    assert _texts(fig, "note") == ["200 leaves · 800 params in all; grey boxes are folded subtrees"]


def test_draw_tree_wide_node_shows_first_children_and_the_rest() -> None:
    fig = viz.draw_tree([jnp.ones(4)] * 200, max_leaves=20)
    leaves = _texts(fig, "leaf")
    assert len(leaves) == 19 and leaves[0] == "[0] f32[4]"  # sideways: the key comes first
    assert _texts(fig, "more") == ["181 more\n181 leaves\n724 params"]
    assert "[19] … [199]" in _texts(fig, "edge")


def test_draw_tree_alike_children_show_a_few_in_depth() -> None:
    fig = viz.draw_tree({"layers": [_params() for _ in range(100)]}, max_leaves=50)
    assert _texts(fig, "leaf") == ["f32[2]", "f32[3,2]"] * 3  # [0], [1], [2] in full
    assert _texts(fig, "more") == ["97 more\n194 leaves\n776 params"]
    assert "[3] … [99]" in _texts(fig, "edge")


def test_draw_tree_rejects_tiny_max_leaves() -> None:
    with pytest.raises(ValueError, match="max_leaves"):
        viz.draw_tree(_params(), max_leaves=1)


def _artists(fig: Figure) -> list[tuple[str, str | None, Any, float]]:
    return [
        (t.get_text(), t.get_gid(), t.get_position(), t.get_rotation()) for t in fig.axes[0].texts
    ]


def test_draw_tree_is_deterministic() -> None:
    tree = {"a": [1.0, (jnp.ones(3), None)], "big": [jnp.ones(2)] * 80}
    first, second = viz.draw_tree(tree), viz.draw_tree(tree)
    assert _artists(first) == _artists(second)
    assert tuple(first.get_size_inches()) == tuple(second.get_size_inches())


def _overlaps(fig: Figure) -> Iterator[tuple[str, str]]:
    fig.canvas.draw()  # places the boxes around the labels
    assert isinstance(fig.canvas, FigureCanvasAgg)
    renderer = fig.canvas.get_renderer()
    boxes = []
    for text in fig.axes[0].texts:
        extent = text.get_window_extent(renderer)
        patch = text.get_bbox_patch()
        boxes.append(
            (text.get_text(), extent, patch.get_window_extent(renderer) if patch else extent)
        )
    for (a, ta, pa), (b, tb, pb) in itertools.combinations(boxes, 2):
        if ta.overlaps(tb) or pa.overlaps(pb):
            yield a, b


def _outside(fig: Figure) -> list[str]:
    """The texts whose box (or text, when boxless) reaches past the figure's edge."""
    fig.canvas.draw()
    assert isinstance(fig.canvas, FigureCanvasAgg)
    renderer, frame = fig.canvas.get_renderer(), fig.bbox
    outside = []
    for text in fig.axes[0].texts:
        patch = text.get_bbox_patch()
        box = (patch or text).get_window_extent(renderer)
        if not (
            frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 <= box.y1 <= frame.y1
        ):
            outside.append(text.get_text())
    return outside


@pytest.mark.parametrize(
    "tree",
    [
        _layers(25),  # 50 leaves: labels turn sideways
        _nested(),
        _linears(),
        {"encoder": [_params() for _ in range(50)], "decoder": [_params() for _ in range(50)]},
        [jnp.ones(4)] * 200,
    ],
    ids=["50-leaves", "nested", "dataclasses", "200-leaves", "flat-200"],
)
def test_draw_tree_labels_do_not_overlap(tree: Any) -> None:
    fig = viz.draw_tree(tree, title="a title")
    assert list(_overlaps(fig)) == []
    assert _outside(fig) == []


def test_draw_tree_50_leaf_labels_are_spread_evenly() -> None:
    fig = viz.draw_tree(_layers(25))
    xs = sorted(
        t.get_position()[0]
        for t in fig.axes[0].texts
        if (t.get_gid() or "").startswith("tree-leaf")
    )
    steps = np.diff(xs)
    assert len(xs) == 50 and steps.min() > 0 and np.allclose(steps, steps[0])


def test_draw_tree_into_given_axes() -> None:
    fig, (left, right) = plt.subplots(1, 2)
    assert viz.draw_tree(_params(), ax=right) is fig
    assert len(left.texts) == 0
    assert sorted(t.get_text() for t in right.texts) == [
        "['b']",
        "['w']",
        "dict",
        "f32[2]",
        "f32[3,2]",
    ]


# TreeExplorer


def _model() -> dict[str, Any]:
    return {
        "encoder": {
            "layers": [{"w": jnp.arange(6.0).reshape(3, 2), "b": jnp.zeros(2)} for _ in range(3)],
            "scale": 0.5,
        },
        "decoder": Linear(jnp.ones((2, 4)), jnp.full(4, 2.0), "out"),
        "mask": None,
        "act": "relu",
    }


def _expected_totals(subtree: Any) -> tuple[int, int]:
    leaves = jax.tree.leaves(subtree)
    return len(leaves), sum(int(np.size(leaf)) for leaf in leaves if not isinstance(leaf, str))


def test_explorer_first_rows() -> None:
    explorer = viz.TreeExplorer(_model())
    assert explorer.visible_rows() == [
        ("<root>", "▾ <root>  dict · 10 leaves · 37 params"),
        ("['act']", "• ['act']  'relu'"),
        ("['decoder']", "▸ ['decoder']  Linear name='out' · 2 leaves · 12 params"),
        ("['encoder']", "▸ ['encoder']  dict · 7 leaves · 25 params"),
        ("['mask']", "· ['mask']  None · empty subtree"),
    ]
    assert explorer.is_expanded() and not explorer.is_expanded("['encoder']")


@pytest.mark.parametrize(
    "path", ["", "['encoder']", "['encoder']['layers']", "['encoder']['layers'][1]", "['decoder']"]
)
def test_explorer_subtree_totals(path: str) -> None:
    tree = _model()
    explorer = viz.TreeExplorer(tree)
    subtree: Any = tree
    for key in re.findall(r"\['(\w+)'\]|\[(\d+)\]", path):
        subtree = subtree[key[0]] if key[0] else subtree[int(key[1])]
    leaves, params = _expected_totals(subtree)
    label = explorer.label(path)
    assert f"· {leaves:,} leaves · {params:,} params" in label


def test_explorer_expand_and_collapse() -> None:
    explorer = viz.TreeExplorer(_model())
    explorer.expand("['encoder']['layers']")
    paths = [path for path, _ in explorer.visible_rows()]
    assert explorer.is_expanded("['encoder']") and explorer.is_expanded("['encoder']['layers']")
    assert paths[paths.index("['encoder']") :][:7] == [
        "['encoder']",
        "['encoder']['layers']",
        "['encoder']['layers'][0]",
        "['encoder']['layers'][1]",
        "['encoder']['layers'][2]",
        "['encoder']['scale']",
        "['mask']",
    ]
    assert explorer.label("['encoder']").startswith("▾")
    explorer.collapse("['encoder']")
    assert "['encoder']['layers']" not in [path for path, _ in explorer.visible_rows()]
    assert explorer.label("['encoder']").startswith("▸")
    explorer.toggle("['encoder']")  # opens again, with ['layers'] still open inside
    assert "['encoder']['layers'][2]" in [path for path, _ in explorer.visible_rows()]


def test_explorer_select_leaf_shows_details() -> None:
    tree = _model()
    explorer = viz.TreeExplorer(tree)
    explorer.select("['encoder']['layers'][1]['w']")
    values = np.arange(6.0).reshape(3, 2)
    assert explorer.selected == "['encoder']['layers'][1]['w']"
    assert explorer.is_expanded("['encoder']['layers'][1]")  # opened on the way
    details = dict(line.split(None, 1) for line in explorer.details.splitlines())
    assert details["path"] == "['encoder']['layers'][1]['w']"
    assert details["shape"] == "(3, 2)" and details["dtype"] == "float32"
    assert details["size"] == "6 params · 24 B"
    stats: list[tuple[str, Callable[[Any], Any]]] = [
        ("mean", np.mean),
        ("std", np.std),
        ("min", np.min),
        ("max", np.max),
    ]
    for name, fn in stats:
        assert details[name] == f"{fn(values):.4g}"
    assert (
        "course-explorer-selected"
        in _buttons(explorer)["['encoder']['layers'][1]['w']"]._dom_classes
    )


def test_explorer_select_scalar_string_and_node() -> None:
    explorer = viz.TreeExplorer(_model())
    explorer.select("['encoder']['scale']")
    assert "value  0.5" in explorer.details
    explorer.select("['act']")
    assert "value  'relu'" in explorer.details
    explorer.select("['decoder']")
    assert "node    Linear name='out'" in explorer.details and "leaves  2" in explorer.details
    explorer.select("['mask']")
    assert "empty subtree" in explorer.details


def test_explorer_paths_as_key_tuples_and_prefix_keys() -> None:
    explorer = viz.TreeExplorer({"p": Pair(jnp.ones(1), jnp.ones(5))})
    explorer.select("['p'].weight")
    assert "f32[5]" in explorer.details  # not confused with .w, a prefix of .weight
    explorer.select("['p'].w")
    assert "f32[1]" in explorer.details
    keys = jax.tree_util.tree_flatten_with_path({"p": Pair(jnp.ones(1), jnp.ones(5))})[0][1][0]
    explorer.select(keys)
    assert explorer.selected == "['p'].weight"


def test_explorer_unknown_path() -> None:
    explorer = viz.TreeExplorer(_model())
    with pytest.raises(KeyError, match="nope"):
        explorer.expand("['nope']")
    with pytest.raises(ValueError, match="is a leaf"):
        explorer.expand("['act']")


def _buttons(explorer: viz.TreeExplorer) -> dict[str, Any]:
    rows = explorer.widget.children[0].children
    return {  # by key path: a node's tooltip adds " · expanded" or " · collapsed"
        button.tooltip.split(" · ")[0]: button
        for button in rows
        if "course-explorer-more" not in button._dom_classes
    }


def test_explorer_clicks() -> None:
    explorer = viz.TreeExplorer(_model())
    assert _buttons(explorer)["['encoder']"].tooltip == "['encoder'] · collapsed"
    _buttons(explorer)["['encoder']"].click()
    assert explorer.is_expanded("['encoder']")
    assert "course-explorer-expanded" in _buttons(explorer)["['encoder']"]._dom_classes
    assert _buttons(explorer)["['encoder']"].tooltip == "['encoder'] · expanded"
    assert _buttons(explorer)["['act']"].tooltip == "['act']"  # a leaf opens nothing
    _buttons(explorer)["['encoder']['scale']"].click()
    assert explorer.selected == "['encoder']['scale']"
    _buttons(explorer)["['encoder']"].click()
    assert not explorer.is_expanded("['encoder']")
    assert "course-explorer-expanded" not in _buttons(explorer)["['encoder']"]._dom_classes


def test_explorer_css_classes() -> None:
    explorer = viz.TreeExplorer(_model())
    assert "course-explorer" in explorer.widget._dom_classes
    tree_box, details, style = explorer.widget.children
    assert "course-focus" in explorer.widget._dom_classes and "<style>" in style.value
    assert "course-explorer-tree" in tree_box._dom_classes
    assert "course-explorer-details" in details._dom_classes
    classes = {button.tooltip.split(" · ")[0]: button._dom_classes for button in tree_box.children}
    assert (
        "course-explorer-node" in classes["['encoder']"]
        and "course-explorer-leaf" in classes["['act']"]
    )
    assert "course-explorer-expanded" in classes["<root>"]


def test_explorer_pages_long_lists() -> None:
    explorer = viz.TreeExplorer([jnp.ones(2)] * 250, page_size=100)
    rows = explorer.widget.children[0].children
    assert len(explorer.visible_rows()) == 101 and "course-explorer-more" in rows[-1]._dom_classes
    assert rows[-1].description == "… 150 more: show 100"
    explorer.show_more()
    assert len(explorer.visible_rows()) == 201
    explorer.collapse()
    explorer.select("[240]")  # jumps to the page holding it
    paths = [path for path, _ in explorer.visible_rows()]
    assert paths[1] == "[200]" and paths[-1] == "[249]"
    assert "course-explorer-previous" in explorer.widget.children[0].children[1]._dom_classes
    explorer.show_previous()
    assert [path for path, _ in explorer.visible_rows()][1] == "[100]"


def test_explorer_opens_10000_leaves_at_once() -> None:
    tree = {
        "layers": [
            {"w": np.ones((4, 4), np.float32), "b": np.zeros(4, np.float32)} for _ in range(5000)
        ]
    }
    explorer = viz.TreeExplorer(tree)
    explorer.expand("['layers']")
    # Only what shows is built: the root, layers, a page of 100 and "more", not 15,000 rows.
    assert len(explorer.widget.children[0].children) == 1 + 1 + 100 + 1
    assert explorer.label() == "▾ <root>  dict · 10,000 leaves · 100,000 params"
    explorer.close()


def test_explorer_display() -> None:
    explorer = viz.TreeExplorer(_params())
    bundle = explorer._repr_mimebundle_()
    assert bundle["text/plain"] == "TreeExplorer(<root>  dict · 2 leaves · 8 params)"
    assert "application/vnd.jupyter.widget-view+json" in bundle


# TrainingPlayground

MAX_STEPS = 60
_X = jnp.linspace(-1.0, 1.0, 16)
_Y = 3.0 * _X + 0.5


@jax.jit
def _train(learning_rate: jax.Array, steps: jax.Array | int) -> jax.Array:
    """Gradient descent on a line fit, for a traced number of steps: one compilation for all."""

    def loss(params: dict[str, jax.Array]) -> jax.Array:
        return jnp.mean((params["w"] * _X + params["b"] - _Y) ** 2)

    def step(
        i: jax.Array, carry: tuple[dict[str, jax.Array], jax.Array]
    ) -> tuple[dict[str, jax.Array], jax.Array]:
        params, losses = carry
        value, grads = jax.value_and_grad(loss)(params)
        params = jax.tree.map(lambda p, g: p - learning_rate * g, params, grads)
        return params, losses.at[i].set(value)

    start = {"w": jnp.zeros(()), "b": jnp.zeros(())}
    return jax.lax.fori_loop(0, steps, step, (start, jnp.zeros(MAX_STEPS)))[1]


def _run(learning_rate: jax.Array, steps: int) -> np.ndarray:
    return np.asarray(_train(learning_rate, steps))[:steps]


def test_training_first_run_compiles_once() -> None:
    _train.clear_cache()  # type: ignore[attr-defined]  # jax stubs omit a jitted function's clear_cache
    playground = viz.TrainingPlayground(_run, learning_rate=0.1, steps=40, max_steps=MAX_STEPS)
    assert playground.compiles == 1 and playground.runs == 1
    assert len(playground.losses) == 40 and len(np.asarray(playground.line.get_ydata())) == 40
    assert playground.stats_text.splitlines() == [
        "learning rate 0.1 · 40 steps",
        f"final loss {float(playground.losses[-1]):.3g}",
        "compilations: 1 for this change, 1 in all",
    ]
    assert playground.png.startswith(b"\x89PNG")
    image = playground.plot.value
    assert (
        image.startswith('<img src="data:image/png;base64,')
        and base64.b64encode(playground.png).decode() in image
    )
    assert f'alt="{playground.plot_description}"' in image


def test_training_learning_rate_redraws_without_compiling() -> None:
    playground = viz.TrainingPlayground(_run, learning_rate=0.1, steps=40, max_steps=MAX_STEPS)
    compiles, stats = playground.compiles, playground.stats_text
    curve, image = np.array(playground.line.get_ydata()), playground.png
    playground.lr_box.value = 0.5
    assert not np.allclose(playground.line.get_ydata(), curve)
    np.testing.assert_allclose(np.asarray(playground.line.get_ydata()), _run(jnp.float32(0.5), 40))
    assert playground.stats_text != stats and playground.png != image
    assert playground.plot_description.startswith("Loss curve, learning rate 0.5, 40 steps: ")
    assert "learning rate 0.5" in playground.stats_text
    assert playground.compiles == compiles and playground.last_compiles == 0
    assert playground.stats_text.endswith(f"compilations: 0 for this change, {compiles} in all")


def test_training_steps_change_the_number_of_points() -> None:
    playground = viz.TrainingPlayground(_run, learning_rate=0.1, steps=40, max_steps=MAX_STEPS)
    compiles = playground.compiles
    playground.steps_box.value = 17
    line = playground.line
    assert len(np.asarray(line.get_xdata())) == len(np.asarray(line.get_ydata())) == 17
    assert "17 steps" in playground.stats_text
    assert playground.compiles == compiles


def test_training_counts_compilations_of_a_static_step_count() -> None:
    static = jax.jit(lambda lr, steps: jnp.full(steps, lr), static_argnums=1)
    playground = viz.TrainingPlayground(static, learning_rate=0.1, steps=5, max_steps=MAX_STEPS)
    playground.steps_box.value = 6
    assert playground.last_compiles == 1 and playground.compiles == 2
    playground.lr_box.value = 0.2
    assert playground.last_compiles == 0 and playground.compiles == 2


def test_training_shows_errors_instead_of_raising() -> None:
    def broken(learning_rate: jax.Array, steps: int) -> np.ndarray:
        raise TypeError("loss is not a scalar")

    playground = viz.TrainingPlayground(broken, steps=5, max_steps=MAX_STEPS)
    assert playground.error == "TypeError: loss is not a scalar"
    assert "run failed: TypeError: loss is not a scalar" in playground.stats_text
    playground.run = _run
    playground.steps_box.value = 6
    assert playground.error is None and len(playground.losses) == 6


def test_training_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="outside lr_range"):
        viz.TrainingPlayground(_run, learning_rate=2.0)
    with pytest.raises(ValueError, match="max_steps"):
        viz.TrainingPlayground(_run, steps=600, max_steps=500)


def test_training_passes_a_float32_array_and_an_int() -> None:
    seen: list[tuple[jax.Array, int]] = []

    def run(learning_rate: jax.Array, steps: int) -> np.ndarray:
        seen.append((learning_rate, steps))
        return np.ones(steps)

    viz.TrainingPlayground(run, learning_rate=0.01, steps=3, max_steps=MAX_STEPS)
    ((learning_rate, steps),) = seen
    assert isinstance(learning_rate, jax.Array) and learning_rate.shape == ()
    assert learning_rate.dtype == jnp.float32 and not learning_rate.weak_type
    assert type(steps) is int


def test_training_css_classes_and_display() -> None:
    playground = viz.TrainingPlayground(_run, steps=5, max_steps=MAX_STEPS)
    assert "course-lr-box" in playground.lr_box._dom_classes
    assert "course-steps-box" in playground.steps_box._dom_classes
    assert "course-steps-notice" in playground.steps_notice._dom_classes
    assert "course-training-stats" in playground.stats._dom_classes
    assert "course-loss-plot" in playground.plot._dom_classes
    assert "course-training" in playground.widget._dom_classes
    assert (
        playground._repr_mimebundle_()["text/plain"]
        == "TrainingPlayground(learning_rate=0.1, steps=5)"
    )
    playground.close()


def test_core_does_not_import_viz() -> None:
    import subprocess
    import sys

    code = (
        "import sys, course_lib\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'matplotlib', 'ipywidgets'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


# draw_diff


class Stats(NamedTuple):
    mean: jax.Array
    var: jax.Array


def _every_difference() -> tuple[dict[str, Any], dict[str, Any]]:
    """Two trees that differ in every way `draw_diff` marks, one way per key."""
    mine = {
        "encoder": Linear(jnp.ones((4, 3)), jnp.zeros(3), "enc"),
        "blocks": [jnp.ones(3), jnp.ones(3)],
        "stats": {"mean": jnp.zeros(3), "var": jnp.ones(3)},
        "mask": None,
        "head": jnp.ones((3, 2)),
        "scale": jnp.ones(2),
        "extra": jnp.ones(5),
        "proj": Linear(jnp.ones((3, 3)), jnp.zeros(3), "proj"),
        "same": {"w": jnp.ones(2), "none": None},
    }
    expected = {
        "encoder": Linear(jnp.ones((4, 3)), jnp.zeros(3), "encoder"),
        "blocks": (jnp.ones(3), jnp.ones(3)),
        "stats": Stats(jnp.zeros(3), jnp.ones(3)),
        "mask": {"w": True, "b": False},
        "head": jnp.ones((2, 3)),
        "scale": jnp.ones(2, jnp.bfloat16),
        "bias": jnp.zeros(2),
        "proj": {"w": jnp.ones((3, 3)), "b": jnp.zeros(3)},
        "same": {"w": jnp.ones(2), "none": None},
    }
    return mine, expected


def _diff_texts(fig: Figure, role: str) -> list[tuple[str, str]]:
    """``(gid, text)`` of the texts whose gid starts with ``diff-<role>``."""
    return [
        (t.get_gid() or "", t.get_text())
        for t in fig.axes[0].texts
        if (t.get_gid() or "").startswith(f"diff-{role}")
    ]


def _rows(fig: Figure) -> dict[int, tuple[str, str]]:
    """Each row's box, by row: ``{row: (kind, text)}``."""
    boxes = {}
    for gid, text in _diff_texts(fig, ""):
        box = re.fullmatch(r"diff-(node|leaf|none|summary|more|changed|only-a|only-b)-(\d+)", gid)
        if box:
            boxes[int(box[2])] = (box[1], text)
    return boxes


def test_draw_diff_marks_every_kind_of_difference() -> None:
    mine, expected = _every_difference()
    fig = viz.draw_diff(mine, expected, names=("mine", "expected"))
    boxes = set(_rows(fig).values())
    assert {
        ("changed", "− list  + tuple"),  # another node type
        ("changed", "− dict  + Stats"),  # dict against a namedtuple
        ("changed", "− Linear name='proj'  + dict"),  # a registered class against a dict
        ("changed", "− Linear name='enc'  + Linear name='encoder'"),  # static fields
        ("changed", "− None  + dict"),  # None against a subtree
        ("changed", "− f32[3,2]  + f32[2,3]"),  # shape
        ("changed", "− f32[2]  + bf16[2]"),  # dtype
        ("only-a", "only in mine: f32[5]"),
        ("only-b", "only in expected: f32[2]"),
    } <= boxes
    # the parts that are the same are drawn as draw_tree draws them, unmarked
    assert {("leaf", "f32[4,3]"), ("leaf", "f32[3]"), ("none", "None")} <= boxes


def _diff_sentences(fig: Figure) -> list[str]:
    """The sentences beside the badges, each one's wrapped lines joined again."""
    parts: dict[tuple[int, int], list[str]] = {}
    for gid, text in _diff_texts(fig, "sentence"):
        row, sentence, _ = gid.removeprefix("diff-sentence-").split("-")
        parts.setdefault((int(row), int(sentence)), []).append(text)
    return [" ".join(lines) for _, lines in sorted(parts.items())]


def test_draw_diff_writes_tree_diff_sentences_beside_their_badges() -> None:
    mine, expected = _every_difference()
    fig = viz.draw_diff(mine, expected, names=("mine", "expected"))
    sentences = _diff_sentences(fig)
    assert sentences == list(cl.tree_diff(mine, expected, names=("mine", "expected")))
    rows = _rows(fig)
    badges = {int(gid.rpartition("-")[2]): text for gid, text in _diff_texts(fig, "badge")}
    assert sorted(badges.values(), key=int) == [str(n) for n in range(1, 9)]
    # the key mismatch is on the root's row; every other badge sits on a red box
    assert rows[0] == ("node", "dict") and badges[0] == "1"
    assert all(rows[row][0] == "changed" for row in badges if row != 0)
    # each sentence stands on its badge's row
    badge_rows = {int(gid.split("-")[2]): text for gid, text in _diff_texts(fig, "sentence")}
    assert set(badge_rows) == set(badges)
    assert "at ['blocks']" in badge_rows[next(r for r, box in rows.items() if "list" in box[1])]


def test_draw_diff_of_equal_trees_marks_nothing() -> None:
    fig = viz.draw_diff(_nested(), _nested())
    assert _diff_texts(fig, "badge") == [] and _diff_texts(fig, "sentence") == []
    assert [text for _, text in _diff_texts(fig, "note")] == [
        "no differences in structure, shapes or dtypes"
    ]
    kinds = {kind for kind, _ in _rows(fig).values()}
    assert kinds <= {"node", "leaf", "none"}


def test_draw_diff_leaf_against_subtree() -> None:
    fig = viz.draw_diff({"x": 1.0, "y": [2.0]}, {"x": {"z": 1.0}, "y": 2.0}, names=("p", "q"))
    assert {("changed", "− 1.0  + dict"), ("changed", "− list  + 2.0")} <= set(_rows(fig).values())


def test_draw_diff_folds_a_big_model_around_its_one_wrong_leaf() -> None:
    good = {"layers": [{"w": jnp.ones((4, 4)), "b": jnp.zeros(4)} for _ in range(200)]}
    bad = {"layers": [{"w": jnp.ones((4, 4)), "b": jnp.zeros(4)} for _ in range(200)]}
    bad["layers"][137]["w"] = jnp.ones((4, 5))
    fig = viz.draw_diff(good, bad)
    rows = _rows(fig)
    assert len(rows) < 12
    assert ("changed", "− f32[4,4]  + f32[4,5]") in rows.values()
    folded = [text for kind, text in rows.values() if kind == "more"]
    counts = sorted(int(re.match(r"(\d+) the same", text)[1]) for text in folded)  # type: ignore[index]
    assert counts == [62, 137]
    edges = [text for _, text in _diff_texts(fig, "edge")]
    assert "[0] … [136]" in edges and "[138] … [199]" in edges
    assert _diff_sentences(fig) == ["at ['layers'][137]['w']: shape (4, 4) in a, (4, 5) in b"]


def test_draw_diff_texts_stay_apart_and_inside() -> None:
    mine, expected = _every_difference()
    fig = viz.draw_diff(mine, expected, names=("mine", "expected"), title="a title")
    assert list(_overlaps(fig)) == []
    assert _outside(fig) == []


def test_draw_diff_is_deterministic_and_detached() -> None:
    mine, expected = _every_difference()
    first, second = viz.draw_diff(mine, expected), viz.draw_diff(mine, expected)
    assert _artists(first) == _artists(second)
    assert tuple(first.get_size_inches()) == tuple(second.get_size_inches())
    assert not plt.get_fignums()


def test_draw_diff_into_given_axes() -> None:
    fig, ax = plt.subplots()
    assert viz.draw_diff([1.0], (1.0,), ax=ax) is fig
    assert ("changed", "− list  + tuple") in _rows(fig).values()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"names": ("only one",)}, "names must be two"), ({"max_rows": 1}, "max_rows must be")],
)
def test_draw_diff_rejects_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        viz.draw_diff([1.0], [1.0], **kwargs)


def test_draw_diff_prefix_reads_leaves_as_subtrees() -> None:
    params = {"embed": jnp.ones((4, 2)), "layers": [_params(), _params()], "norm": jnp.ones(2)}
    shardings = {"embed": "split", "layers": "replicated", "norms": "replicated"}
    fig = viz.draw_diff(shardings, params, names=("shardings", "params"), prefix=True)
    rows = set(_rows(fig).values())
    assert ("leaf", "'replicated' → list, 4 leaves") in rows
    assert ("leaf", "'split' → f32[4,2]") in rows
    assert ("only-a", "only in shardings: 'replicated'") in rows
    assert ("only-b", "only in params: f32[2]") in rows
    assert _diff_sentences(fig) == [
        "at <root>: dict keys differ: ['norms'] only in shardings; ['norm'] only in params"
    ]
    # the same two trees compared leaf for leaf differ at every shared key as well
    assert len(cl.tree_diff(shardings, params)) == 3


# ---------------------------------------------------------------------------------------------
# Pictures in words: the plain text and alt text a notebook keeps


def _displayed(fig: Figure) -> tuple[dict[str, Any], dict[str, Any]]:
    """What IPython puts in a notebook for ``fig`` as a cell's value (the inline backend's PNG)."""
    from IPython.core.formatters import DisplayFormatter
    from IPython.core.pylabtools import select_figure_formats

    formatter = DisplayFormatter()
    select_figure_formats(_Shell(formatter), {"png"})
    return formatter.format(fig)


class _Shell:
    def __init__(self, formatter: Any) -> None:
        self.display_formatter = formatter


def test_a_drawing_is_shown_with_its_description_as_plain_and_alt_text() -> None:
    fig = viz.draw_tree({"w": jnp.ones((3, 2)), "b": jnp.zeros(2)}, title="params")
    assert isinstance(fig, viz.DescribedFigure)
    assert fig.description.splitlines() == [
        "A tree, drawn top down: params.",
        "dict",
        "  ['b'] f32[2]",
        "  ['w'] f32[3,2]",
    ]
    data, metadata = _displayed(fig)
    assert data["text/plain"] == fig.description
    assert base64.b64decode(data["image/png"]).startswith(b"\x89PNG")
    assert metadata["image/png"]["alt"] == fig.description


def test_a_figure_of_your_own_keeps_matplotlib_text() -> None:
    fig, ax = plt.subplots()
    assert viz.draw_tree({"a": 1.0}, ax=ax) is fig
    data, metadata = _displayed(fig)
    assert data["text/plain"].startswith("<Figure size") and "image/png" not in metadata
    plt.close(fig)


def test_draw_diff_says_the_differences_in_words() -> None:
    fig = viz.draw_diff({"w": jnp.ones((3, 2)), "b": 0.0}, {"w": jnp.ones((2, 2))}, ("mine", "ref"))
    assert isinstance(fig, viz.DescribedFigure)
    lines = fig.description.splitlines()
    assert lines[0] == (
        "Where mine and ref differ, as one outline. At <root>: dict keys differ: ['b'] only in "
        "mine. At ['w']: shape (3, 2) in mine, (2, 2) in ref. Thick box: differs (− mine, + ref) "
        "· dashed box: only in the tree it names."
    )
    assert lines[1] == "dict" and "['b'] only in mine: 0.0" in lines[2]
    assert "red" not in fig.description and "green" not in fig.description
