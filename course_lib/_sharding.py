"""Where a tree's bytes live: how much of each leaf every device holds, placed or abstract.

A leaf counts when it says where it lives: a ``jax.Array`` always does, a ``jax.ShapeDtypeStruct``
when it carries a ``sharding`` (the abstract target of ``jax.jit(..., out_shardings=...)`` or of a
checkpoint restore). NumPy arrays, Python numbers and shapes without a sharding hold no device
memory and are skipped.
"""

import math
from collections.abc import Mapping
from typing import Any

import jax

from ._typing import PyTree


def leaf_shards(leaf: Any) -> Mapping[jax.Device, tuple[int, ...]] | None:
    """The shape of the block of ``leaf`` each device holds; ``None`` for a leaf that lives nowhere.

    Works from the sharding alone, so an abstract leaf answers as its array would, without data.

    >>> one_device = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    >>> leaf_shards(jax.ShapeDtypeStruct((4, 2), jnp.float32, sharding=one_device))
    {CpuDevice(id=0): (4, 2)}
    """
    sharding = getattr(leaf, "sharding", None)
    shape = getattr(leaf, "shape", None)
    if not isinstance(sharding, jax.sharding.Sharding) or not isinstance(shape, tuple):
        return None
    blocks = {}
    for device, index in sharding.devices_indices_map(shape).items():
        blocks[device] = tuple(
            len(range(*part.indices(n))) for part, n in zip(index, shape, strict=True)
        )
    return blocks


def tree_bytes_per_device(tree: PyTree) -> dict[jax.Device, int]:
    """How many bytes of ``tree`` each device holds, replicated copies counted on every device.

    Devices appear in id order, each with the sum over the leaves of the bytes of its block.

    >>> placed = {"w": jax.device_put(jnp.ones((4, 2))), "lr": 0.1}
    >>> tree_bytes_per_device(placed)
    {CpuDevice(id=0): 32}
    """
    totals: dict[jax.Device, int] = {}
    for leaf in jax.tree.leaves(tree):
        blocks = leaf_shards(leaf)
        for device, block in (blocks or {}).items():
            totals[device] = (
                totals.get(device, 0) + math.prod(block) * jax.numpy.dtype(leaf.dtype).itemsize
            )
    return dict(sorted(totals.items(), key=lambda item: item[0].id))
