"""The course's drawings as a notebook and the website show them: a PNG of twice the pixels shown
at its own size, no wider than the page's column, with every label at least 11 CSS pixels high
there. Checked on the drawings themselves, and on the pictures saved in the lessons."""

import base64
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from course_lib import viz
from course_lib.viz._figure import MAX_WIDTH_PX, MIN_LABEL_PX, PX_PER_PT, SHARPNESS

ROOT = Path(__file__).resolve().parents[2]


def _png_size(png: bytes) -> tuple[int, int]:
    assert png.startswith(b"\x89PNG"), png[:8]
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def _shown(fig: viz.DescribedFigure) -> tuple[int, float]:
    """The drawing's width on the page, in CSS pixels, and its smallest text there, in pixels."""
    bundle = fig._repr_mimebundle_()
    assert bundle is not None
    data, metadata = bundle
    width = metadata["image/png"]["width"]
    png_width, _ = _png_size(base64.b64decode(data["image/png"]))
    assert png_width // SHARPNESS == width, (png_width, width)
    scale = min(1.0, MAX_WIDTH_PX / width)  # what the page does to a wider picture
    smallest = min(t.get_fontsize() for ax in fig.axes for t in ax.texts + [ax.title])
    return width, smallest * PX_PER_PT * scale


def _model(layers: int) -> dict:
    layer = {"w": jnp.ones((4, 4)), "b": jnp.zeros(4)}
    return {"embed": jnp.ones((8, 4)), "layers": [dict(layer) for _ in range(layers)], "step": 0}


def _placed() -> dict:
    mesh = jax.make_mesh(
        (2, 4), ("data", "model"), devices=jax.devices("cpu"),
        axis_types=(jax.sharding.AxisType.Explicit,) * 2,
    )  # fmt: skip
    by_columns, by_rows = NamedSharding(mesh, P(None, "model")), NamedSharding(mesh, P("model"))
    matrix = jnp.ones((16, 16))
    return {
        **{name: jax.device_put(matrix, by_columns) for name in ("wq", "wk", "wv")},
        "wo": jax.device_put(matrix, by_rows),
        "norm": jax.device_put(jnp.ones(16), NamedSharding(mesh, P())),
    }


_DRAWINGS = {
    "a small tree": lambda: viz.draw_tree(_model(2), title="a model"),
    "a wide tree": lambda: viz.draw_tree(_model(12)),
    "a difference with long sentences": lambda: viz.draw_diff(
        {"encoder": [jnp.ones((3, 4))] * 3, "decoder_weights": jnp.ones(2)},
        {"encoder": (jnp.ones((3, 5)),) * 3, "decoder_bias": jnp.ones(2)},
        names=("the model you built", "the reference model"),
    ),
    "a layer over 8 devices": lambda: viz.draw_shardings(_placed(), columns=5),
    "bytes per device": lambda: viz.draw_device_bytes(_placed()),
    "bytes per device in two layouts": lambda: viz.draw_device_bytes(
        jax.device_put(_placed(), jax.devices("cpu")[0]), _placed(), names=("one device", "rules")
    ),
}


@pytest.mark.parametrize("name", list(_DRAWINGS))
def test_a_drawing_fits_the_column_with_labels_of_11_px(name: str) -> None:
    fig = _DRAWINGS[name]()
    assert isinstance(fig, viz.DescribedFigure)
    width, smallest = _shown(fig)
    assert width <= MAX_WIDTH_PX, f"{name}: {width} px wide"
    assert smallest >= MIN_LABEL_PX, f"{name}: a label of {smallest:.1f} px"


def _saved_drawings() -> list[tuple[str, bytes, dict]]:
    """Every course drawing saved in a lesson: a PNG output with an alt text in its metadata."""
    found = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for index, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            for output in cell.get("outputs", []):
                metadata = output.get("metadata", {}).get("image/png", {})
                if "image/png" in output.get("data", {}) and metadata.get("alt"):
                    png = base64.b64decode(output["data"]["image/png"])
                    found.append((f"{path.name} cell {index}", png, metadata))
    return found


def test_the_lessons_save_their_drawings_sharp_and_no_wider_than_the_column() -> None:
    saved = _saved_drawings()
    assert len(saved) >= 7  # lessons 01, 02, 03, 07 (three) and 09
    for where, png, metadata in saved:
        width, _ = _png_size(png)
        assert "width" in metadata, f"{where}: saved without its page width (run it again)"
        assert width // SHARPNESS == metadata["width"], f"{where}: {width} px for {metadata}"
        assert metadata["width"] <= MAX_WIDTH_PX, f"{where}: {metadata['width']} px wide"
