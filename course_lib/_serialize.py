"""Saving a tree to a ``.npz`` file keyed by key paths; loading it back with a structure check."""

import json
import os
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import keystr

from ._atomic import atomic_file
from ._errors import TreeStructureError, check_array_leaves
from ._typing import PyTree

_STRUCTURE_KEY = "__treedef__"
_DTYPES_KEY = "__dtypes__"


def save_tree(path: str | os.PathLike[str], tree: PyTree) -> None:
    """Write every leaf of ``tree`` to ``path`` (NumPy ``.npz``), named by its key path.

    The file is written to a temporary name and renamed into place, so a crash never leaves a
    half-written checkpoint. Dtypes NumPy cannot store itself (``bfloat16``, the float8 types)
    are kept as raw bits and restored by :func:`load_tree`.

    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "params.npz"
    >>> save_tree(target, {"w": jnp.ones(2), "b": [jnp.zeros(1)]})
    >>> load_tree(target, like={"w": jnp.zeros(2), "b": [jnp.ones(1)]})
    {'b': [Array([0.], dtype=float32)], 'w': Array([1., 1.], dtype=float32)}
    """
    check_array_leaves(tree, "save_tree")
    # Any, not np.ndarray: NumPy's stub types savez's **kwds against its keyword allow_pickle too.
    arrays: dict[str, Any] = {}
    extension_dtypes: dict[str, str] = {}
    for key_path, leaf in jax.tree_util.tree_leaves_with_path(tree):
        name, array = keystr(key_path), np.asarray(leaf)
        if array.dtype.kind == "V":  # an ml_dtypes type: .npz would store it as opaque void
            extension_dtypes[name] = array.dtype.name
            array = array.view(np.dtype(f"u{array.dtype.itemsize}"))
        arrays[name] = array
    arrays[_STRUCTURE_KEY] = np.asarray(str(jax.tree.structure(tree)))
    arrays[_DTYPES_KEY] = np.asarray(json.dumps(extension_dtypes))
    with atomic_file(path, binary=True) as file:
        np.savez(file, **arrays)


def load_tree(path: str | os.PathLike[str], like: PyTree) -> PyTree:
    """Read a tree saved by :func:`save_tree` into the structure of ``like``.

    Every key path of ``like`` must be in the file with the same shape and dtype, and the file
    must hold nothing else; otherwise a :class:`TreeStructureError` lists what differs. Only the
    shapes and dtypes of ``like`` are read, so ``jax.eval_shape(init, ...)`` serves as well as
    real arrays.
    """
    with np.load(path) as data:
        stored = {
            name: data[name] for name in data.files if name not in (_STRUCTURE_KEY, _DTYPES_KEY)
        }
        extension_dtypes = json.loads(str(data[_DTYPES_KEY])) if _DTYPES_KEY in data.files else {}
        saved_structure = str(data[_STRUCTURE_KEY]) if _STRUCTURE_KEY in data.files else None
    for name, dtype_name in extension_dtypes.items():
        if name in stored:
            stored[name] = stored[name].view(jnp.dtype(dtype_name))
    with_paths, treedef = jax.tree_util.tree_flatten_with_path(like)
    wanted = {keystr(p): leaf for p, leaf in with_paths}
    problems = [f"{name} is missing from the file" for name in wanted if name not in stored]
    problems += [
        f"{name} is in the file but not in `like`" for name in stored if name not in wanted
    ]
    for name, leaf in wanted.items():
        if name in stored:
            have = stored[name]
            shape = tuple(np.shape(leaf))
            dtype = np.dtype(leaf.dtype) if hasattr(leaf, "dtype") else np.asarray(leaf).dtype
            if have.shape != shape or have.dtype != dtype:
                problems.append(
                    f"{name} is {have.dtype}{list(have.shape)} in the file, {dtype}{list(shape)} "
                    "in `like`"
                )
    if not problems and saved_structure not in (None, str(treedef)):
        # Same key paths, other containers: a tuple saved and read into a list, say.
        problems.append(f"the file holds {saved_structure}, `like` is {treedef}")
    if problems:
        listed = "\n".join(f"  - {p}" for p in problems)
        raise TreeStructureError(
            f"load_tree: {path} does not fit the structure of `like`:\n{listed}"
        )
    return jax.tree.unflatten(treedef, [jnp.asarray(stored[name]) for name in wanted])
