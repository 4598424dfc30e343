"""Saving a tree to a ``.npz`` file keyed by key paths, and loading it back with a structure check."""

import os
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import keystr

from ._errors import TreeStructureError, check_array_leaves
from ._typing import PyTree

_STRUCTURE_KEY = "__treedef__"


def save_tree(path: str | os.PathLike[str], tree: PyTree) -> None:
    """Write every leaf of ``tree`` to ``path`` (NumPy ``.npz``), named by its key path.

    The file is written to a temporary name and renamed into place, so a crash never leaves a
    half-written checkpoint.

    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "params.npz"
    >>> save_tree(target, {"w": jnp.ones(2), "b": [jnp.zeros(1)]})
    >>> load_tree(target, like={"w": jnp.zeros(2), "b": [jnp.ones(1)]})
    {'b': [Array([0.], dtype=float32)], 'w': Array([1., 1.], dtype=float32)}
    """
    check_array_leaves(tree, "save_tree")
    arrays = {keystr(p): np.asarray(leaf) for p, leaf in jax.tree_util.tree_leaves_with_path(tree)}
    arrays[_STRUCTURE_KEY] = np.asarray(str(jax.tree.structure(tree)))
    target = Path(path)
    handle, temporary = tempfile.mkstemp(dir=target.parent, suffix=".npz.tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            np.savez(file, **arrays)
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise


def load_tree(path: str | os.PathLike[str], like: PyTree) -> PyTree:
    """Read a tree saved by :func:`save_tree` into the structure of ``like``.

    Every key path of ``like`` must be in the file with the same shape and dtype, and the file
    must hold nothing else; otherwise a :class:`TreeStructureError` lists what differs.
    """
    with np.load(path) as data:
        stored = {name: data[name] for name in data.files if name != _STRUCTURE_KEY}
    with_paths, treedef = jax.tree_util.tree_flatten_with_path(like)
    wanted = {keystr(p): leaf for p, leaf in with_paths}
    problems = [f"{name} is missing from the file" for name in wanted if name not in stored]
    problems += [f"{name} is in the file but not in `like`" for name in stored if name not in wanted]
    for name, leaf in wanted.items():
        if name in stored:
            have, want = stored[name], np.asarray(leaf)
            if have.shape != want.shape or have.dtype != want.dtype:
                problems.append(f"{name} is {have.dtype}{list(have.shape)} in the file, {want.dtype}{list(want.shape)} in `like`")
    if problems:
        listed = "\n".join(f"  - {p}" for p in problems)
        raise TreeStructureError(f"load_tree: {path} does not fit the structure of `like`:\n{listed}")
    return jax.tree.unflatten(treedef, [jnp.asarray(stored[name]) for name in wanted])
