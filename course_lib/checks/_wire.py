"""Plain data as JSON, for the trip from a learner's kernel to the grader.

Never pickle: the grader must not run code that a submission chose. Every value is tagged so that
lists and tuples, integer and string dict keys, and arrays survive, and :func:`loads` accepts only
these shapes, so a malformed or hostile report is an error, not a surprise.

>>> loads(dumps({"n": 3, "paths": ("['a']",), "w": np.arange(3, dtype=np.int32)}))
{'n': 3, 'paths': ("['a']",), 'w': array([0, 1, 2], dtype=int32)}
"""

import base64
import json
import math
from typing import Any

import numpy as np

MAX_DEPTH = 80
_ARRAY_KINDS = "biufc"


class WireError(ValueError):
    """The text is not a valid report."""


def _encode(x: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, int):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else {"f": repr(x)}
    if isinstance(x, complex):
        return {"c": [_encode(x.real, depth + 1), _encode(x.imag, depth + 1)]}
    if isinstance(x, bytes):
        return {"y": base64.b64encode(x).decode("ascii")}
    if isinstance(x, np.generic):
        x = np.asarray(x)
    if isinstance(x, np.ndarray):
        if x.dtype.kind not in _ARRAY_KINDS:
            raise WireError(f"arrays of dtype {x.dtype} cannot be sent")
        data = np.ascontiguousarray(x).tobytes()
        return {"a": [x.dtype.str, list(x.shape), base64.b64encode(data).decode("ascii")]}
    if type(x) is list:
        return {"l": [_encode(v, depth + 1) for v in x]}
    if type(x) is tuple:
        return {"t": [_encode(v, depth + 1) for v in x]}
    if type(x) is dict:
        return {"d": [[_encode(k, depth + 1), _encode(v, depth + 1)] for k, v in x.items()]}
    raise WireError(f"a {type(x).__name__} is not plain data")


def dumps(value: Any) -> str:
    """JSON text for plain data (raises :class:`WireError` for anything else)."""
    return json.dumps(_encode(value, 0), allow_nan=False, separators=(",", ":"))


def _decode(x: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    if x is None or isinstance(x, (bool, str, int, float)):
        return x
    if isinstance(x, list) or not isinstance(x, dict) or len(x) != 1:
        raise WireError("every container must be a tagged object")
    ((tag, body),) = x.items()
    if tag == "l" and isinstance(body, list):
        return [_decode(v, depth + 1) for v in body]
    if tag == "t" and isinstance(body, list):
        return tuple(_decode(v, depth + 1) for v in body)
    if tag == "d" and isinstance(body, list):
        out = {}
        for pair in body:
            if not (isinstance(pair, list) and len(pair) == 2):
                raise WireError("dict items must be [key, value] pairs")
            key = _decode(pair[0], depth + 1)
            try:
                out[key] = _decode(pair[1], depth + 1)
            except TypeError as error:  # an unhashable key
                raise WireError(f"bad dict key: {error}") from None
        return out
    if tag == "f" and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag == "c" and isinstance(body, list) and len(body) == 2:
        real, imag = (_decode(v, depth + 1) for v in body)
        if not all(isinstance(v, (int, float)) for v in (real, imag)):
            raise WireError("complex parts must be numbers")
        return complex(real, imag)
    if tag == "y" and isinstance(body, str):
        return _b64(body)
    if tag == "a" and isinstance(body, list) and len(body) == 3:
        return _decode_array(*body)
    raise WireError(f"unknown tag {tag!r}")


def _b64(text: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise WireError("bad base64 data") from None


def _decode_array(dtype_text: Any, shape: Any, data: Any) -> np.ndarray:
    if not (isinstance(dtype_text, str) and isinstance(shape, list) and isinstance(data, str)):
        raise WireError("an array is [dtype, shape, data]")
    try:
        dtype = np.dtype(dtype_text)
    except TypeError:
        raise WireError(f"unknown dtype {dtype_text!r}") from None
    if dtype.kind not in _ARRAY_KINDS or dtype.hasobject:
        raise WireError(f"arrays of dtype {dtype} are not accepted")
    if (
        not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)
        or len(shape) > 32
    ):
        raise WireError("bad array shape")
    raw = _b64(data)
    if len(raw) != math.prod(shape) * dtype.itemsize:
        raise WireError("array data does not match its shape")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def loads(text: str | bytes) -> Any:
    """Plain data from :func:`dumps` text; raises :class:`WireError` for anything else."""
    try:
        raw = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as error:
        raise WireError(f"not valid JSON: {error}") from None
    try:
        return _decode(raw, 0)
    except RecursionError:
        raise WireError("value nested too deeply") from None


def _refuse_constant(name: str) -> Any:
    raise WireError(f"JSON constant {name} is not accepted")
