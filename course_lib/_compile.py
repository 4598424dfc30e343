"""Counting what ``jit`` really does: traces and XLA compilations.

``jitted._cache_size()`` counts dispatch-cache entries, which grow without any compilation (a
Python float, a NumPy float32 and a JAX float32 make three entries and one program). The counter
here listens to JAX's own monitoring events instead: one ``jaxpr_trace`` event per trace, one
``backend_compile`` event per XLA compilation.
"""

import contextlib
import functools
import logging
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import jax

# A trace counts only when no other trace is under way: JAX before 0.10 also reports the traces of
# its own jitted helpers (jnp.sum's `_reduce_sum`, `multiply`) and of a jitted function called from
# another one, while the outer function is being traced. JAX has no public way to ask this.
from jax._src.core import trace_state_clean as _no_outer_trace

_TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(eq=False)  # compared by identity: nested counters may hold equal counts
class CompileCounter:
    """What happened inside a :func:`count_compiles` block, live while the block runs."""

    traces: int = 0
    compiles: int = 0
    traced: list[str] = field(default_factory=list)
    compiled: list[str] = field(default_factory=list)
    compile_seconds: float = 0.0

    def __repr__(self) -> str:
        return f"CompileCounter(traces={self.traces}, compiles={self.compiles})"


_active: list[CompileCounter] = []
_lock = threading.Lock()


def _on_event(event: str, duration_secs: float, **kwargs: str | int) -> None:
    name = str(kwargs.get("fun_name", "?"))
    outermost = event != _TRACE_EVENT or _no_outer_trace()
    with _lock:
        for counter in _active:
            if event == _TRACE_EVENT and outermost:
                counter.traces += 1
                counter.traced.append(name)
            elif event == _COMPILE_EVENT:
                counter.compiles += 1
                counter.compiled.append(name)
                counter.compile_seconds += duration_secs


jax.monitoring.register_event_duration_secs_listener(_on_event)


@contextlib.contextmanager
def count_compiles() -> Iterator[CompileCounter]:
    """Count traces and XLA compilations that happen inside the block (nested blocks each count).

    Everything compiled in the block counts, eager operations on shapes seen for the first time
    too, so build inputs before the block; ``counter.compiled`` names each compiled function.

    >>> f = jax.jit(lambda x: x * 2)
    >>> a, b = jnp.ones(3), jnp.ones(4)
    >>> with count_compiles() as counter:
    ...     _ = f(a); _ = f(a); _ = f(b)
    >>> counter.compiles, counter.compiled
    (2, ['jit(<lambda>)', 'jit(<lambda>)'])
    """
    counter = CompileCounter()
    with _lock:
        _active.append(counter)
    try:
        yield counter
    finally:
        with _lock:
            _active.remove(counter)


class TooManyCompilesError(RuntimeError):
    """A block or function compiled more often than its :func:`compile_limit` allows."""


class compile_limit(contextlib.ContextDecorator):
    """Fail when a block, or all calls of a function together, compile over ``max_compiles`` times.

    As a context manager it checks when the block ends. As a decorator it keeps counting over
    every call and raises on the call that goes over, with JAX's explanation of the cache misses.

    >>> @compile_limit(1)
    ... @jax.jit
    ... def double(x):
    ...     return 2 * x
    >>> two, three = jnp.ones(2), jnp.ones(3)
    >>> _ = double(two); _ = double(two + 1)  # same shape and dtype: still one compilation
    >>> _ = double(three)
    Traceback (most recent call last):
    course_lib._compile.TooManyCompilesError: double compiled 2 times, more than the limit of 1. ...
    """

    def __init__(self, max_compiles: int):
        self.max_compiles = max_compiles
        self._stack: list[tuple[contextlib.ExitStack, CompileCounter, list[str]]] = []

    def __enter__(self) -> CompileCounter:
        stack = contextlib.ExitStack()
        counter = stack.enter_context(count_compiles())
        misses = stack.enter_context(capture_cache_misses())
        self._stack.append((stack, counter, misses))
        return counter

    def __exit__(self, *exc: object) -> None:
        stack, counter, misses = self._stack.pop()
        stack.close()
        if exc[0] is None and counter.compiles > self.max_compiles:
            raise TooManyCompilesError(
                _too_many("the block", counter.compiles, self.max_compiles, misses)
            )

    def __call__(self, fn: F) -> F:
        total = 0
        name = getattr(fn, "__name__", repr(fn))

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            nonlocal total
            with count_compiles() as counter, capture_cache_misses() as misses:
                result = fn(*args, **kwargs)
            total += counter.compiles
            if total > self.max_compiles:
                raise TooManyCompilesError(_too_many(name, total, self.max_compiles, misses))
            return result

        return wrapper  # type: ignore[return-value]  # functools.wraps keeps F's signature


def _too_many(what: str, count: int, limit: int, misses: list[str]) -> str:
    why = (
        "\n".join(misses)
        if misses
        else "(JAX gave no explanation: a new function or a new jit wrapper)"
    )
    return (
        f"{what} compiled {count} times, more than the limit of {limit}. "
        f"JAX's explanation of the cache misses:\n{why}"
    )


# "at /tmp/ipykernel_123/456.py:3:9 (<module>)" (a Jupyter kernel's cell), "at
# <ipython-input-7-1a2b3c>:3:9" (an IPython shell's) and "id=1403..." change on every run, and an
# empty "({})" after a type (no sharding to show) says nothing to a learner.
IPYTHON_CELL = r"<ipython-input-\d+-[0-9a-f]+>"
"""How an IPython shell names a cell's code (a Jupyter kernel's is a file ``ipykernel_N/M.py``)."""
_LOCATION = re.compile(
    rf"(?:/[^\s:()]+/)?(?:ipykernel_\d+/)?([^\s/:()]+\.py|{IPYTHON_CELL}):(\d+)(?::\d+)?"
)
_CELL = re.compile(rf"\d+\.py|{IPYTHON_CELL}")
_OBJECT_ID = re.compile(r" id=\d+")
# JAX before 0.10 also says how long the trace took: a number that changes on every run.
_COSTING = re.compile(r" costing [\d.]+ ms because:")


def _tidy(message: str) -> str:
    message = _COSTING.sub(":", _OBJECT_ID.sub("", message)).replace("({})", "")
    message = _LOCATION.sub(
        lambda m: "<cell>" if _CELL.fullmatch(m[1]) else f"{m[1]}:{m[2]}", message
    )
    return message.replace("}https://", "} see https://")


_TRACING_MISS = "TRACING CACHE MISS"
_PERSISTENT_MISS = "PERSISTENT COMPILATION CACHE MISS"


def _not_a_miss(record: logging.LogRecord) -> bool:
    """A log filter: False for JAX's explanations of a cache miss, of either cache."""
    return not record.getMessage().startswith((_TRACING_MISS, _PERSISTENT_MISS))


class _Collect(logging.Handler):
    def __init__(self, into: list[str]):
        super().__init__(logging.DEBUG)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        # Only the reasons for tracing again. With a persistent compilation cache on (a learner's
        # JAX_COMPILATION_CACHE_DIR, the grader's shared cache), JAX also logs each program missing
        # from it as "PERSISTENT COMPILATION CACHE MISS ... with key ...": no reason, and a key
        # that differs from machine to machine.
        if record.getMessage().startswith(_TRACING_MISS):
            self.into.append(_tidy(record.getMessage()))


@contextlib.contextmanager
def capture_cache_misses() -> Iterator[list[str]]:
    """Collect ``jax.explain_cache_misses`` explanations as strings instead of log warnings.

    File locations from notebook cells become ``<cell>`` and object ids are dropped, so the text
    is the same on every run.

    >>> f = jax.jit(lambda x: x + 1)
    >>> with capture_cache_misses() as misses:
    ...     _ = f(1.0); _ = f(jnp.float32(1.0))
    >>> "at x, now f32[]{weak_type=False} and before f32[]{weak_type=True}" in misses[-1]
    True
    """
    messages: list[str] = []
    handler = _Collect(messages)
    logger = logging.getLogger("jax")
    # JAX 0.7 and 0.8 give the "jax" logger a stream handler of their own, which would print each
    # explanation a second time, raw: it hears everything else, but not the misses.
    jax_own = list(logger.handlers)
    for own in jax_own:
        own.addFilter(_not_a_miss)
    logger.addHandler(handler)
    propagate = logger.propagate
    logger.propagate = False
    try:
        with jax.explain_cache_misses(True):
            yield messages
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
        for own in jax_own:
            own.removeFilter(_not_a_miss)
