#!/usr/bin/env python
"""Benchmark: the SGD update ``p <- p - lr * g`` in course_lib and optax, and memory bandwidth.

Run it with ``make bench`` or ``.venv/bin/python bench/bench_sgd.py`` (``--help`` lists the
options).
It prints a table and writes the same data to ``bench/results/bench_sgd.json``. It is a benchmark,
not a test: it reports PASS/MISS against the targets and always exits 0 when it ran.

Everything is float32 and measured in one process. Each method runs a few warm-up calls, then
its timed calls are interleaved round-robin with the other methods on the same tree (so a burst of
load from another job spreads over every method rather than landing on one); each timed call is
blocked on (``block_until_ready``) and the median is reported. Donated inputs are deleted by the
call, so every loop threads the returned params/state into its next call.

The bandwidth reference is NumPy ``np.add(p, g, out=p)`` over one contiguous buffer of the same
total size as the tree: like SGD it reads two arrays and writes one. NumPy's add is
single-threaded, so it is also run as two halves in two threads (NumPy releases the GIL); the
faster of the two is the reference.
"""

import os
import sys

# OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, when set, slow NumPy down on some machines. They
# are read when NumPy loads OpenBLAS, so they have to go before the first import of NumPy (JAX
# imports it too). Only this process's environment changes; the change is printed in the header.
_OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
_UNSET_VARS = {name: os.environ.pop(name) for name in _OPENBLAS_VARS if name in os.environ}

import argparse
import itertools
import json
import platform
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

import course_lib as cl

LR = 0.01
F32 = np.dtype(np.float32)
RESULTS = Path(__file__).resolve().parent / "results" / "bench_sgd.json"

# Method names, in table order.
CL_TREE = "course_lib tree (donated)"
CL_FLAT = "course_lib flat (donated)"
OPTAX_DONATED = "optax (donated)"
OPTAX_PLAIN = "optax (not donated)"
REF_1 = "ref: numpy add, 1 thread"
REF_2 = "ref: numpy add, 2 threads"
ONE_BUFFER = "jax: one donated buffer"

# The bench's targets, checked on course_lib's best path, the flat one.
TARGET_X_REF = 1.3  # flat time <= 1.3 x the bandwidth reference, on every tree
TARGET_X_ONE_BUFFER = 1.1  # flat time <= 1.1 x one jitted donated update of one device buffer
TARGET_X_OPTAX_MANY_LEAVES = 10.0  # optax time >= 10 x flat time on the 2,000-leaf tree
# FlatTree.from_tree against one jitted concatenate of the same leaves: its first call (compiling
# included) and its later ones.
TARGET_FROM_TREE_FIRST, TARGET_FROM_TREE_WARM = 2.0, 3.0


# ----------------------------------------------------------------------------------------------
# Trees


def _normal_like(rng: np.random.Generator, like: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """Normal noise of ``like``'s shape, as :func:`_normal` draws it."""
    return _normal(rng, like.shape, scale)


def _normal(rng: np.random.Generator, shape: tuple[int, ...], scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)).astype(np.float32)


def tree_big_leaves(rng: np.random.Generator) -> dict:
    """(a) 4 leaves x 4M float32 (64 MiB)."""
    return {f"w{i}": _normal(rng, (4 * 1024 * 1024,)) for i in range(4)}


def mlp_shapes(sizes: list[int]) -> list[tuple[tuple[int, int], tuple[int]]]:
    return [((n_in, n_out), (n_out,)) for n_in, n_out in itertools.pairwise(sizes)]


# Ten Dense layers (20 leaves), 8,421,760 parameters in all: an MLP-shaped tree.
MLP_SIZES = [784, 920, 920, 920, 920, 920, 920, 920, 920, 920, 1000]


def tree_mlp(rng: np.random.Generator) -> dict:
    """(b) an MLP-like tree: 10 Dense layers, 20 leaves, ~8.4M parameters."""
    tree = {}
    for i, (w_shape, b_shape) in enumerate(mlp_shapes(MLP_SIZES)):
        tree[f"dense_{i}"] = {
            "w": _normal(rng, w_shape, w_shape[0] ** -0.5),
            "b": _normal(rng, b_shape, 0.1),
        }
    return tree


def tree_many_leaves(rng: np.random.Generator) -> list:
    """(c) 2,000 leaves x 1,000 float32."""
    return [_normal(rng, (1000,)) for _ in range(2000)]


TREES: list[tuple[str, str, Callable[[np.random.Generator], object]]] = [
    ("a", "4 leaves x 4M", tree_big_leaves),
    ("b", "MLP, 20 leaves", tree_mlp),
    ("c", "2,000 leaves x 1,000", tree_many_leaves),
]


# ----------------------------------------------------------------------------------------------
# Timing


@dataclass
class Method:
    """One way of doing the update: ``call()`` runs one step and returns what to block on."""

    name: str
    call: Callable[[], object]
    in_place: bool | None = None  # donated methods: did the params buffer stay where it was?
    calls: int = 0  # timed calls to make, set by measure()
    times: list[float] = field(default_factory=list)

    def run(self, n: int) -> None:
        for _ in range(n):
            start = time.perf_counter()
            out = self.call()
            if out is not None:
                jax.block_until_ready(out)
            self.times.append(time.perf_counter() - start)

    def median(self) -> float:
        return statistics.median(self.times)

    def quantile(self, q: float) -> float:
        ordered = sorted(self.times)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(
    methods: list[Method], budget_s: float, min_calls: int, max_calls: int, rounds: int = 5
) -> None:
    """Warm up every method, then time them round-robin in ``rounds`` rounds.

    The number of timed calls per method is chosen from the warm-up so that each method gets about
    ``budget_s`` seconds of timed calls, within ``[min_calls, max_calls]``.
    """
    for method in methods:
        method.run(3)  # first calls compile and touch memory; not kept
        method.times.clear()
    for method in methods:
        method.run(2)
        estimate = max(min(method.times), 1e-6)
        method.times.clear()
        method.calls = int(min(max(budget_s / estimate, min_calls), max_calls))
    for r in range(rounds):
        for method in methods:
            method.run(method.calls // rounds + (1 if r < method.calls % rounds else 0))


# ----------------------------------------------------------------------------------------------
# The methods


def one_vector(tree: object) -> np.ndarray:
    """Every leaf of a tree of NumPy arrays, raveled and joined in leaf order."""
    return np.concatenate([leaf.ravel() for leaf in jax.tree.leaves(tree)])


def check_first_step(name: str, got: object, expected: object) -> None:
    """The first call of every path must give ``p - lr * g`` (``expected``, computed by NumPy)."""
    if isinstance(got, cl.FlatTree | jax.Array):
        # Compare buffers: slicing a FlatTree eagerly would compile one slice per leaf.
        got_leaves, expected_leaves = (
            [got.buffer if isinstance(got, cl.FlatTree) else got],
            [one_vector(expected)],
        )
    else:
        got_leaves, expected_leaves = jax.tree.leaves(got), jax.tree.leaves(expected)
    for g, e in zip(got_leaves, expected_leaves, strict=True):
        np.testing.assert_allclose(
            np.asarray(g), e, rtol=1e-6, atol=1e-6, err_msg=f"{name} computes a wrong update"
        )


def first_leaf_pointer(tree: object) -> int | None:
    try:
        return jax.tree.leaves(tree)[0].unsafe_buffer_pointer()
    except (AttributeError, NotImplementedError, RuntimeError):  # not every backend exposes it
        return None


def threaded_method(
    name: str, step: Callable, params: object, state: object, expected: object, donated: bool
) -> Method:
    """A method whose ``step(params, state) -> (params, state)`` gets its own last results."""
    box = [params, state]

    def call() -> object:
        box[0], box[1] = step(box[0], box[1])
        return box[0]

    method = Method(name, call)
    call()  # compiles
    check_first_step(name, box[0], expected)
    before = first_leaf_pointer(box[0])
    call()
    after = first_leaf_pointer(box[0])
    method.in_place = None if (before is None or not donated) else before == after
    return method


def course_lib_method(name: str, params: object, grads: object, expected: object) -> Method:
    opt = cl.sgd(LR, donate=True)
    return threaded_method(
        name,
        lambda p, s: opt.apply_gradients(grads, s, p),
        params,
        opt.init(params),
        expected,
        True,
    )


def optax_step(tx: optax.GradientTransformation, donate: bool) -> Callable:
    def step(params: object, opt_state: object, grads: object) -> tuple[object, object]:
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    return jax.jit(step, donate_argnums=(0, 1) if donate else ())


def optax_method(
    name: str, params: object, grads: object, expected: object, donate: bool
) -> Method:
    tx = optax.sgd(LR)
    step = optax_step(tx, donate)
    return threaded_method(
        name, lambda p, s: step(p, s, grads), params, tx.init(params), expected, donate
    )


def one_buffer_method(params_np: object, grads_np: object, expected: object) -> Method:
    """The same update as one jitted, donated ``p - lr * g`` on one device buffer holding every
    leaf: what a `FlatTree` update should cost, on any backend."""
    step = jax.jit(lambda p, g: p - LR * g, donate_argnums=0)
    params, grads = jnp.asarray(one_vector(params_np)), jnp.asarray(one_vector(grads_np))
    return threaded_method(
        ONE_BUFFER, lambda p, s: (step(p, grads), s), params, None, expected, True
    )


def numpy_reference(size: int, pool: ThreadPoolExecutor) -> tuple[Method, Method]:
    """``np.add(p, g, out=p)`` over one buffer of ``size`` float32, in 1 and in 2 threads."""
    rng = np.random.default_rng(1)
    p = _normal(rng, (size,))
    g = _normal(rng, (size,), 1e-3)
    half = size // 2
    p_lo, p_hi, g_lo, g_hi = p[:half], p[half:], g[:half], g[half:]

    def one_thread() -> None:
        np.add(p, g, out=p)

    def two_threads() -> None:
        other = pool.submit(np.add, p_hi, g_hi, out=p_hi)
        np.add(p_lo, g_lo, out=p_lo)
        other.result()

    return Method(REF_1, one_thread), Method(REF_2, two_threads)


# ----------------------------------------------------------------------------------------------
# Full training step: loss, grad and update jitted as one function


def mlp_apply(params: list, x: jax.Array) -> jax.Array:
    for layer in params[:-1]:
        x = jnp.tanh(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def mlp_loss(params: list, x: jax.Array, y: jax.Array) -> jax.Array:
    return jnp.mean((mlp_apply(params, x) - y) ** 2)


def flat_loss(flat: cl.FlatTree, x: jax.Array, y: jax.Array) -> jax.Array:
    return mlp_loss(flat.to_tree(), x, y)


def train_methods(layers: int, width: int, batch: int) -> tuple[list[Method], int, int]:
    rng = np.random.default_rng(2)
    params_np = [
        {"w": _normal(rng, (width, width), width**-0.5), "b": _normal(rng, (width,), 0.1)}
        for _ in range(layers)
    ]
    x = jnp.asarray(_normal(rng, (batch, width)))
    y = jnp.asarray(_normal(rng, (batch, width)))
    n_params = cl.tree_size(params_np)
    n_leaves = len(jax.tree.leaves(params_np))

    def course_lib_train(name: str, loss: Callable, params: object) -> Method:
        opt = cl.sgd(LR, donate=True)

        @partial(jax.jit, donate_argnums=(0, 1))
        def step(params: object, state: object, x: jax.Array, y: jax.Array) -> tuple:
            value, grads = jax.value_and_grad(loss)(params, x, y)
            params, state = opt.apply_gradients(grads, state, params)
            return params, state, value

        box = [params, opt.init(params)]

        def call() -> object:
            box[0], box[1], value = step(box[0], box[1], x, y)
            return value, box[0]

        return Method(name, call)

    def optax_train(name: str, params: object, donate: bool) -> Method:
        tx = optax.sgd(LR)

        def step(params: object, opt_state: object, x: jax.Array, y: jax.Array) -> tuple:
            value, grads = jax.value_and_grad(mlp_loss)(params, x, y)
            updates, opt_state = tx.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state, value

        step = jax.jit(step, donate_argnums=(0, 1) if donate else ())
        box = [params, tx.init(params)]

        def call() -> object:
            box[0], box[1], value = step(box[0], box[1], x, y)
            return value, box[0]

        return Method(name, call)

    methods = [
        course_lib_train(CL_TREE, mlp_loss, jax.tree.map(jnp.array, params_np)),
        course_lib_train(CL_FLAT, flat_loss, cl.FlatTree.from_tree(params_np)),
        optax_train(OPTAX_DONATED, jax.tree.map(jnp.array, params_np), donate=True),
        optax_train(OPTAX_PLAIN, jax.tree.map(jnp.array, params_np), donate=False),
    ]
    # The three paths start from the same params and must agree after one step.
    losses = [float(m.call()[0]) for m in methods]
    if max(losses) - min(losses) > 1e-5 * max(1.0, abs(losses[0])):
        raise AssertionError(f"the training steps disagree on the first loss: {losses}")
    return methods, n_params, n_leaves


# ----------------------------------------------------------------------------------------------
# Reporting


def header() -> dict:
    devices = jax.devices()
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count()
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    env = {
        name: os.environ.get(name)
        for name in (
            "XLA_FLAGS",
            "OMP_NUM_THREADS",
            "OPENBLAS_NUM_THREADS",
            "MKL_NUM_THREADS",
            *_OPENBLAS_VARS,
        )
    }
    return {
        "jax": jax.__version__,
        "jaxlib": cl.device_report().jaxlib_version,
        "optax": optax.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "backend": jax.default_backend(),
        "devices": [str(d) for d in devices],
        "device_kind": devices[0].device_kind,
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "cpus_usable": affinity,
        "env": env,
        "unset_for_this_process": _UNSET_VARS,
        "loadavg_start": list(os.getloadavg()),
    }


def print_header(meta: dict) -> None:
    print("SGD update benchmark: p <- p - lr * g, float32, medians of blocked calls")
    print(
        f"jax {meta['jax']} (jaxlib {meta['jaxlib']}), optax {meta['optax']}, numpy "
        f"{meta['numpy']}, "
        f"python {meta['python']}"
    )
    print(
        f"backend: {meta['backend']}; devices: {', '.join(meta['devices'])} ({meta['device_kind']})"
    )
    print(
        f"cpu: {meta['cpu']}; {meta['cpu_count']} cores, {meta['cpus_usable']} usable by this "
        "process; "
        f"load average {meta['loadavg_start'][0]:.2f}"
    )
    env = ", ".join(f"{k}={v}" for k, v in meta["env"].items() if v is not None) or "none set"
    print(
        f"thread settings: {env}. XLA's CPU client uses its own thread pool; numpy add is "
        "single-threaded,"
    )
    print(
        "  so the reference is run in 1 thread and as 2 halves in 2 threads, and the faster one "
        "counts."
    )
    if _UNSET_VARS:
        unset = ", ".join(f"{k}={v}" for k, v in _UNSET_VARS.items())
        print(f"  NOTE: unset in this process's environment only (they slow numpy): {unset}")
    if meta["backend"] != "cpu":
        print(
            "  NOTE: the numpy reference measures host memory, not the device's: ratios to it are "
            "not meaningful."
        )
    print()


def row_data(
    method: Method, nbytes: int | None, ref: float | None, optax_time: float | None
) -> dict:
    med = method.median()
    return {
        "method": method.name,
        "median_s": med,
        "p25_s": method.quantile(0.25),
        "p75_s": method.quantile(0.75),
        "calls": len(method.times),
        "gb_per_s": 3 * nbytes / med / 1e9 if nbytes else None,
        "x_bandwidth_ref": med / ref if ref else None,
        "x_optax_donated": med / optax_time if optax_time else None,
        "in_place": method.in_place,
    }


def fmt_ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:9.3f}" if ms < 100 else f"{ms:9.1f}"


def fmt(value: float | None, spec: str, width: int) -> str:
    if value is None:
        return "-".rjust(width)
    if spec == ".2f" and value < 0.1:
        spec = ".3f"  # 0.004x, not 0.00x
    return f"{value:{spec}}".rjust(width)


def print_table(sections: list[dict]) -> None:
    head = (
        f"{'tree':<26} {'method':<27} {'median ms':>9} {'p25-p75 ms':>17} {'calls':>5} "
        f"{'GB/s':>6} {'x ref':>6} {'x optax':>7}"
    )
    print(head)
    print("-" * len(head))
    for section in sections:
        label = section["label"]
        for row in section["rows"]:
            spread = f"{row['p25_s'] * 1e3:.3f}-{row['p75_s'] * 1e3:.3f}"
            note = ""
            if row["in_place"] is False:
                note = "  (NOT in place)"
            print(
                f"{label:<26} {row['method']:<27} {fmt_ms(row['median_s'])} {spread:>17} "
                f"{row['calls']:>5} "
                f"{fmt(row['gb_per_s'], '.1f', 6)} {fmt(row['x_bandwidth_ref'], '.2f', 6)} "
                f"{fmt(row['x_optax_donated'], '.2f', 7)}{note}"
            )
            label = ""
        print(f"{'':<26} {section['info']}")
    print(
        "GB/s = 3 x tree bytes / median (read p, read g, write p); x ref = median / bandwidth "
        "reference"
    )
    print("(the faster numpy row); x optax = median / optax (donated) median. Lower x is better.")


def conversion_against_concatenate(tree: object, warm_calls: int = 20) -> dict:
    """``FlatTree.from_tree(tree)`` against one jitted ``concatenate`` of the same (raveled) leaves:
    the first call of each (tracing and compiling included: call it before any other FlatTree of
    these leaf shapes) and the median of ``warm_calls`` later ones."""
    leaves = jax.tree.leaves(tree)
    concatenate = jax.jit(lambda parts: jnp.concatenate([jnp.ravel(p) for p in parts]))

    def timed(call: Callable[[], object]) -> float:
        t0 = time.perf_counter()
        jax.block_until_ready(call())
        return time.perf_counter() - t0

    first = {
        "from_tree": timed(lambda: cl.FlatTree.from_tree(tree).buffer),
        "concatenate": timed(lambda: concatenate(leaves)),
    }
    warm = {
        "from_tree": statistics.median(
            timed(lambda: cl.FlatTree.from_tree(tree).buffer) for _ in range(warm_calls)
        ),
        "concatenate": statistics.median(
            timed(lambda: concatenate(leaves)) for _ in range(warm_calls)
        ),
    }
    return {"first_s": first, "warm_s": warm}


def check_targets(sections: list[dict], on_cpu: bool) -> list[dict]:
    checks = []

    def add(name: str, ok: bool | None, detail: str) -> None:
        checks.append({"target": name, "met": ok, "detail": detail})

    for section in sections:
        rows = {row["method"]: row for row in section["rows"]}
        flat = rows[CL_FLAT]["median_s"]
        best_optax_name = min((OPTAX_DONATED, OPTAX_PLAIN), key=lambda n: rows[n]["median_s"])
        best_optax = rows[best_optax_name]["median_s"]
        tag = section["label"]
        if section["kind"] == "update":
            ref = section["ref_s"]
            ratio = flat / ref
            add(
                f"{tag}: flat <= {TARGET_X_REF}x bandwidth ref",
                ratio <= TARGET_X_REF if on_cpu else None,
                f"flat {flat * 1e3:.3f} ms / ref {ref * 1e3:.3f} ms = {ratio:.2f}x",
            )
        if ONE_BUFFER in rows:
            buffer = rows[ONE_BUFFER]["median_s"]
            add(
                f"{tag}: flat <= {TARGET_X_ONE_BUFFER}x one donated buffer",
                flat <= TARGET_X_ONE_BUFFER * buffer,
                f"flat {flat * 1e3:.3f} ms / one buffer {buffer * 1e3:.3f} ms = "
                f"{flat / buffer:.2f}x",
            )
        add(
            f"{tag}: flat never slower than optax",
            flat <= best_optax,
            f"flat {flat * 1e3:.3f} ms vs {best_optax_name} {best_optax * 1e3:.3f} ms = "
            f"{flat / best_optax:.3g}x",
        )
        conversion = section.get("conversion")
        if conversion:
            for when, limit in (("first", TARGET_FROM_TREE_FIRST), ("warm", TARGET_FROM_TREE_WARM)):
                times = conversion[f"{when}_s"]
                ratio = times["from_tree"] / times["concatenate"]
                add(
                    f"{tag}: FlatTree.from_tree, {when} call, <= {limit:g}x one jitted concatenate",
                    ratio <= limit,
                    f"{times['from_tree'] * 1e3:.1f} ms / {times['concatenate'] * 1e3:.1f} ms = "
                    f"{ratio:.2f}x",
                )
        if section.get("many_leaves"):
            speedup = best_optax / flat
            add(
                f"{tag}: flat >= {TARGET_X_OPTAX_MANY_LEAVES:g}x faster than optax",
                speedup >= TARGET_X_OPTAX_MANY_LEAVES,
                f"{best_optax_name} {best_optax * 1e3:.3f} ms / flat {flat * 1e3:.3f} ms = "
                f"{speedup:.1f}x",
            )
    return checks


def print_targets(checks: list[dict]) -> None:
    print()
    print(
        "Targets (course_lib's best path, the flat one; 'optax' is the faster of its two variants):"
    )
    for check in checks:
        verdict = {True: "PASS", False: "MISS", None: "N/A "}[check["met"]]
        print(f"  {verdict}  {check['target']}: {check['detail']}")


# ----------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--budget",
        type=float,
        default=1.0,
        help="seconds of timed calls per method and tree (default 1.0; a run takes about 2 min)",
    )
    parser.add_argument(
        "--min-calls", type=int, default=20, help="at least this many timed calls per method"
    )
    parser.add_argument(
        "--max-calls", type=int, default=2000, help="at most this many timed calls per method"
    )
    parser.add_argument(
        "--json", type=Path, default=RESULTS, help=f"where to write the results (default {RESULTS})"
    )
    parser.add_argument(
        "--trees", default="abc", help="which update trees to run, by letter (default abc)"
    )
    parser.add_argument("--skip-train", action="store_true", help="skip the full training step")
    parser.add_argument("--train-layers", type=int, default=200)
    parser.add_argument("--train-width", type=int, default=32)
    parser.add_argument("--train-batch", type=int, default=64)
    args = parser.parse_args()

    started = time.perf_counter()
    meta = header()
    print_header(meta)
    on_cpu = meta["backend"] == "cpu"
    sections = []
    pool = ThreadPoolExecutor(max_workers=1)

    for key, title, make in (tree for tree in TREES if tree[0] in args.trees):
        setup = time.perf_counter()
        rng = np.random.default_rng(0)
        params_np = make(rng)
        grads_np = jax.tree.map(partial(_normal_like, rng, scale=1e-3), params_np)
        n_leaves = len(jax.tree.leaves(params_np))
        size = cl.tree_size(params_np)
        nbytes = size * F32.itemsize

        # Every method gets its own params (they are donated); grads are only read, so the tree
        # methods share one copy and the flat method has its flat copy.
        def fresh(params_np: object = params_np) -> object:
            return jax.tree.map(jnp.array, params_np)

        grads = jax.tree.map(jnp.asarray, grads_np)
        expected = jax.tree.map(lambda p, g: p - np.float32(LR) * g, params_np, grads_np)
        # First, before any other FlatTree of these shapes: its first call compiles.
        conversion = conversion_against_concatenate(fresh())
        from_tree_s = conversion["first_s"]["from_tree"]
        flat_params = cl.FlatTree.from_tree(fresh())
        flat_grads = cl.FlatTree.from_tree(grads)

        ref1, ref2 = numpy_reference(size, pool)
        methods = [
            course_lib_method(CL_TREE, fresh(), grads, expected),
            course_lib_method(CL_FLAT, flat_params, flat_grads, expected),
            optax_method(OPTAX_DONATED, fresh(), grads, expected, donate=True),
            optax_method(OPTAX_PLAIN, fresh(), grads, expected, donate=False),
            ref1,
            ref2,
            one_buffer_method(params_np, grads_np, expected),
        ]
        del params_np, grads_np, expected, fresh
        setup_s = time.perf_counter() - setup
        measure(methods, args.budget, args.min_calls, args.max_calls)
        ref = min(ref1.median(), ref2.median())
        optax_time = methods[2].median()
        rows = [row_data(m, nbytes, ref, optax_time) for m in methods]
        info = (
            f"{n_leaves:,} leaves, {size:,} float32 = {nbytes / 2**20:.1f} MiB per tree; "
            f"FlatTree.from_tree {from_tree_s * 1e3:.0f} ms (first call; later ones "
            f"{conversion['warm_s']['from_tree'] * 1e3:.1f} ms, one jitted concatenate "
            f"{conversion['first_s']['concatenate'] * 1e3:.0f} ms first, "
            f"{conversion['warm_s']['concatenate'] * 1e3:.1f} ms later); "
            f"setup+compile {setup_s:.1f} s"
        )
        sections.append(
            {
                "kind": "update",
                "key": key,
                "label": f"({key}) {title}",
                "leaves": n_leaves,
                "size": size,
                "bytes": nbytes,
                "ref_s": ref,
                "rows": rows,
                "info": info,
                "many_leaves": n_leaves >= 1000,
                "from_tree_s": from_tree_s,
                "conversion": conversion,
                "setup_s": setup_s,
            }
        )
        del methods, ref1, ref2, flat_params, flat_grads, grads
        print(
            f"  measured ({key}) {title} ... {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
            flush=True,
        )

    if not args.skip_train:
        setup = time.perf_counter()
        methods, n_params, n_leaves = train_methods(
            args.train_layers, args.train_width, args.train_batch
        )
        setup_s = time.perf_counter() - setup
        measure(methods, args.budget, args.min_calls, args.max_calls)
        optax_time = methods[2].median()
        rows = [row_data(m, None, None, optax_time) for m in methods]
        title = f"train step, {args.train_layers}x{args.train_width}"
        info = (
            f"MLP {args.train_layers} tanh layers of width {args.train_width}, batch "
            f"{args.train_batch}: "
            f"{n_leaves:,} leaves, {n_params:,} params; loss+grad+update in one jit; "
            f"setup+compile {setup_s:.1f} s"
        )
        sections.append(
            {
                "kind": "train",
                "key": "train",
                "label": title,
                "leaves": n_leaves,
                "size": n_params,
                "rows": rows,
                "info": info,
                "setup_s": setup_s,
            }
        )
        print(
            f"  measured {title} ... {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
            flush=True,
        )

    pool.shutdown()
    print_table(sections)
    checks = check_targets(sections, on_cpu)
    print_targets(checks)
    meta["loadavg_end"] = list(os.getloadavg())
    meta["total_s"] = time.perf_counter() - started
    print(
        f"\nwhole run {meta['total_s']:.0f} s; load average at the end {meta['loadavg_end'][0]:.2f}"
    )

    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps({"meta": meta, "sections": sections, "targets": checks}, indent=2) + "\n"
    )
    print(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
