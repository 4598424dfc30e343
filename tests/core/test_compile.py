"""count_compiles, compile_limit and capture_cache_misses (course_lib/_compile.py)."""

import logging
import re
import uuid
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import course_lib as cl
from course_lib import jax_at_least


def fresh_jit() -> Callable[[jax.Array], jax.Array]:
    """A new jitted function each time, so no test sees another's cache."""

    def scaled_sum(x: jax.Array) -> jax.Array:
        return jnp.sum(2 * x)

    return jax.jit(scaled_sum)


# --- count_compiles ------------------------------------------------------------------------------


def test_count_compiles_new_shape_compiles_same_shape_does_not() -> None:
    f = fresh_jit()
    a, b, c = jnp.ones(3), jnp.zeros(3), jnp.ones(4)
    with cl.count_compiles() as counter:
        f(a)
        f(b)  # same shape and dtype: cached
    assert (counter.traces, counter.compiles) == (1, 1)
    with cl.count_compiles() as counter:
        f(c)
        f(c)
    assert (counter.traces, counter.compiles) == (1, 1)
    assert counter.compiled == ["jit(scaled_sum)"] and counter.traced == ["scaled_sum"]
    assert counter.compile_seconds > 0.0


def test_count_compiles_new_dtype_compiles() -> None:
    f = fresh_jit()
    a, b = jnp.ones(3), jnp.ones(3, jnp.int32)
    f(a)
    with cl.count_compiles() as counter:
        f(b)
    assert counter.compiles == 1


def test_count_compiles_new_dict_key_retraces() -> None:
    f = jax.jit(lambda d: sum(jnp.sum(v) for v in d.values()))
    one, two = {"a": jnp.ones(2)}, {"a": jnp.ones(2), "b": jnp.ones(2)}
    same_shape_other_values = {"a": jnp.zeros(2)}
    f(one)
    with cl.count_compiles() as counter:
        f(same_shape_other_values)
    assert (counter.traces, counter.compiles) == (0, 0)
    with cl.count_compiles() as counter:
        f(two)
    assert (counter.traces, counter.compiles) == (1, 1)


def test_count_compiles_nested_counters_each_count() -> None:
    f = fresh_jit()
    a, b, c = jnp.ones(1), jnp.ones(2), jnp.ones(3)
    with cl.count_compiles() as outer:
        f(a)
        with cl.count_compiles() as inner:
            f(b)
        f(c)
    assert (outer.compiles, inner.compiles) == (3, 1)
    assert repr(inner) == "CompileCounter(traces=1, compiles=1)"


def test_count_compiles_stops_counting_after_the_block() -> None:
    f = fresh_jit()
    a, b = jnp.ones(5), jnp.ones(6)
    with cl.count_compiles() as counter:
        f(a)
    f(b)
    assert counter.compiles == 1


def test_count_compiles_stops_counting_after_an_error() -> None:
    f = fresh_jit()
    a = jnp.ones(7)
    with pytest.raises(RuntimeError), cl.count_compiles() as counter:
        raise RuntimeError("boom")
    f(a)
    assert counter.compiles == 0


# --- compile_limit -------------------------------------------------------------------------------


def test_compile_limit_block_within_the_limit() -> None:
    f = fresh_jit()
    a, b = jnp.ones(8), jnp.ones(9)
    with cl.compile_limit(2) as counter:
        f(a)
        f(b)
        f(a)
    assert counter.compiles == 2


def test_compile_limit_block_over_the_limit_explains_why() -> None:
    f = fresh_jit()
    a, b = jnp.ones(10), jnp.ones(11)
    with pytest.raises(cl.TooManyCompilesError) as info, cl.compile_limit(1):
        f(a)
        f(b)
    message = str(info.value)
    assert message.startswith("the block compiled 2 times, more than the limit of 1.")
    assert "TRACING CACHE MISS" in message
    assert "* at x, now f32[11] and before f32[10]" in message


def test_compile_limit_block_lets_other_errors_through() -> None:
    f = fresh_jit()
    a, b = jnp.ones(12), jnp.ones(13)
    with pytest.raises(ZeroDivisionError), cl.compile_limit(0):
        f(a)
        f(b)
        _ = 1 / 0


def test_compile_limit_decorator_counts_over_calls() -> None:
    @cl.compile_limit(2)
    @jax.jit
    def cube(x: jax.Array) -> jax.Array:
        return x**3

    a, b, c = jnp.ones(2), jnp.ones(3), jnp.ones(4)
    np.testing.assert_array_equal(np.asarray(cube(a)), [1.0, 1.0])
    cube(b)
    cube(a)  # cached: still two
    with pytest.raises(cl.TooManyCompilesError) as info:
        cube(c)
    message = str(info.value)
    assert message.startswith("cube compiled 3 times, more than the limit of 2.")
    assert "for cube defined at test_compile.py:" in message
    assert "* at x, now f32[4] and before f32[" in message


def test_compile_limit_decorator_on_a_python_float_then_a_jax_float() -> None:
    @cl.compile_limit(1)
    @jax.jit
    def halve(x: jax.Array) -> jax.Array:
        return x / 2

    halve(1.0)
    halve(2.0)
    x32 = jnp.float32(3.0)
    with pytest.raises(
        cl.TooManyCompilesError,
        match=r"now f32\[\]\{weak_type=False\} and before f32\[\]\{weak_type=True\}",
    ):
        halve(x32)


# --- capture_cache_misses ------------------------------------------------------------------------


def test_capture_cache_misses_weak_type_explanation() -> None:
    def add_one(x: jax.Array) -> jax.Array:
        return x + 1

    f = jax.jit(add_one)
    x32 = jnp.float32(1.0)
    with cl.capture_cache_misses() as misses:
        f(1.0)
        f(x32)
    assert len(misses) == 2
    first, second = misses
    assert re.fullmatch(
        r"TRACING CACHE MISS at test_compile\.py:\d+ "
        r"\(test_capture_cache_misses_weak_type_explanation\):\n"
        r"  never seen function:\n    add_one defined at test_compile\.py:\d+",
        first,
    )
    # The wording around the difference changed in JAX 0.10; the difference itself did not.
    assert "now f32[]{weak_type=False} and before f32[]{weak_type=True}" in second
    assert "https://docs.jax.dev/en/latest/type_promotion.html#weak-types" in second
    if jax_at_least("0.10.0"):
        assert second.splitlines()[-1] == (
            "  * at x, now f32[]{weak_type=False} and before f32[]{weak_type=True} "
            "see https://docs.jax.dev/en/latest/type_promotion.html#weak-types"
        )


def test_capture_cache_misses_leaves_out_the_persistent_cache() -> None:
    """With a persistent compilation cache on (conftest.py turns one on for every test), JAX also
    logs each program missing from it, with a key that differs between machines: not a reason for
    tracing again, so not collected. The constant makes a program no earlier run has cached."""
    assert jax.config.values["jax_compilation_cache_dir"], "conftest.py's cache is off"
    unseen = float(uuid.uuid4().int % 1_000_003)
    f = jax.jit(lambda x: x + unseen)
    with cl.capture_cache_misses() as misses:
        f(jnp.ones(3))
    assert len(misses) == 1 and misses[0].startswith("TRACING CACHE MISS"), misses


def test_capture_cache_misses_has_no_ids_or_absolute_paths() -> None:
    f = fresh_jit()
    a, b = jnp.ones(14), jnp.ones((2, 7))
    with cl.capture_cache_misses() as misses:
        f(a)
        f(b)
    text = "\n".join(misses)
    assert "scaled_sum" in text and "now f32[2,7] and before f32[14]" in text
    assert " id=" not in text and "0x" not in text and "({})" not in text
    assert __file__ not in text and not re.search(r"(^|\s)/\S+\.py", text)


@pytest.mark.parametrize(
    ("filename", "size"),
    [("/tmp/ipykernel_4242/2718281828.py", 2), ("<ipython-input-13-2d9c9281e6ff>", 3)],
    ids=["jupyter kernel", "ipython shell"],
)
def test_capture_cache_misses_notebook_cells_read_cell(filename: str, size: int) -> None:
    namespace: dict = {}
    source = "import jax\n\ndef cell_fn(x):\n    return x * 3\n\nf = jax.jit(cell_fn)\n"
    exec(compile(source, filename, "exec"), namespace)
    a = jnp.ones(size)
    with cl.capture_cache_misses() as misses:
        namespace["f"](a)
    assert misses and "cell_fn defined at <cell>" in misses[0]
    assert "ipykernel" not in misses[0] and "2718281828" not in misses[0]
    assert "ipython-input" not in misses[0]


def test_capture_cache_misses_stays_quiet_and_restores_logging(capfd: Any) -> None:
    logger = logging.getLogger("jax")
    handlers, propagate = list(logger.handlers), logger.propagate
    f = fresh_jit()
    a = jnp.ones(15)
    with cl.capture_cache_misses() as misses:
        f(a)
    assert len(misses) == 1
    assert logger.handlers == handlers and logger.propagate == propagate
    assert "CACHE MISS" not in capfd.readouterr().err
    b = jnp.ones(16)
    f(b)  # outside the block nothing is collected
    assert len(misses) == 1


class _Heard(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_capture_cache_misses_keeps_them_from_jax_s_own_handler() -> None:
    """JAX 0.7 and 0.8 give the "jax" logger a stream handler of their own: inside the block it
    must not print the explanations a second time, raw, but it still hears anything else, and
    hears cache misses again after the block."""
    jax_own = _Heard()
    logger = logging.getLogger("jax")
    logger.addHandler(jax_own)
    try:
        f = fresh_jit()
        with cl.capture_cache_misses() as misses:
            f(jnp.ones(17))
            logging.getLogger("jax._src.elsewhere").warning("another warning")
        inside = list(jax_own.messages)
        with jax.explain_cache_misses(True):
            f(jnp.ones(18))
    finally:
        logger.removeHandler(jax_own)
    assert len(misses) == 1
    assert "another warning" in inside
    assert not [message for message in inside if "CACHE MISS" in message], inside
    after = jax_own.messages[len(inside) :]
    assert any(message.startswith("TRACING CACHE MISS") for message in after), after
    assert jax_own.filters == []


def test_count_compiles_nested_counters_with_equal_counts_leave_cleanly() -> None:
    with cl.count_compiles() as outer:
        with cl.count_compiles() as inner:
            pass
        assert outer.compiles == inner.compiles == 0
    f = jax.jit(lambda x: x + 1)
    x = jnp.ones(7)
    with cl.count_compiles() as after:
        f(x).block_until_ready()
    assert after.compiles == 1 and outer.compiles == 0 and inner.compiles == 0
