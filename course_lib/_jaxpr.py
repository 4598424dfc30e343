"""Reading jaxprs: the programs nested inside an equation (a scan's body, a cond's branches).

JAX 0.10.0 added ``jax.extend.core.jaxprs_in_params`` for this; `inner_jaxprs` does the same on
every JAX the course supports, and gives plain ``Jaxpr`` objects whichever form JAX stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jax.extend.core as jex

__all__ = ["inner_jaxprs"]


def inner_jaxprs(eqn: Any) -> Iterator[jex.Jaxpr]:
    """The jaxprs in ``eqn``'s parameters, in parameter order, each as a plain ``Jaxpr``.

    >>> import jax, jax.numpy as jnp
    >>> body = lambda h, _: (jnp.tanh(h), None)
    >>> eqn = jax.make_jaxpr(lambda h: jax.lax.scan(body, h, length=3)[0])(1.0).jaxpr.eqns[0]
    >>> eqn.primitive.name, [len(inner.eqns) for inner in inner_jaxprs(eqn)]
    ('scan', [1])
    """
    # Imported here: jax.extend costs ~30 ms, and `import course_lib` should not pay it.
    import jax.extend.core as jex

    for value in eqn.params.values():
        for item in value if isinstance(value, tuple | list) else (value,):
            if isinstance(item, jex.ClosedJaxpr):
                yield item.jaxpr
            elif isinstance(item, jex.Jaxpr):
                yield item
