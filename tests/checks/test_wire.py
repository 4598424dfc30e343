"""The wire (``course_lib.checks._wire``): plain data as JSON from a kernel to the grader, never
pickle.

``dumps`` has no public name (only the kernel writes reports), so these tests import the module.
"""

from __future__ import annotations

import numpy as np
import pytest

from course_lib.checks import _wire


def test_wire_round_trip_keeps_types() -> None:
    value = {
        "list": [1, 2.5, None, True],
        "tuple": ("a", b"raw", 1 + 2j),
        (1, "k"): np.arange(6, dtype=np.int32).reshape(2, 3),
        "special": [float("nan"), float("inf")],
        "scalar": np.float32(1.5),
    }
    back = _wire.loads(_wire.dumps(value))
    assert type(back["tuple"]) is tuple and type(back["list"]) is list
    np.testing.assert_array_equal(back[(1, "k")], value[(1, "k")])
    assert back[(1, "k")].dtype == np.int32 and back["scalar"].dtype == np.float32
    assert np.isnan(back["special"][0]) and back["special"][1] == float("inf")


@pytest.mark.parametrize(
    "text",
    [
        "{",
        "[1, 2]",
        '{"x": 1}',
        '{"a": ["|O8", [1], "AAAAAAAAAAA="]}',
        '{"a": ["<f4", [3], "AAAAAA=="]}',
        '{"f": "1e400"}',
        "NaN",
        '{"d": [[{"l": []}, 1]]}',
    ],
)
def test_wire_rejects_malformed_reports(text: str) -> None:
    with pytest.raises(_wire.WireError):
        _wire.loads(text)


def test_wire_refuses_objects() -> None:
    with pytest.raises(_wire.WireError):
        _wire.dumps({"f": print})
