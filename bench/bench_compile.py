"""What one small compile costs on each backend: the lessons' fixed price per new program.

    .venv/bin/python bench/bench_compile.py           # the default backend against the CPU's

A lesson compiles 50 to 90 small programs: every eager operation on a new shape or dtype is one,
and so is every jitted function on new inputs. On the CPU each costs a few hundredths of a second;
on an accelerator the same program can cost several times more, and that price, more than any
computation, decides how long a lesson takes there. In one process, for the default backend and
then for the CPU's (the reference), this measures the first compile (the compiler's own start), an
eager operation on a new shape, and a small jitted function, split into JAX's part (tracing and
lowering) and XLA's (compiling), each the median of ``--programs`` new programs.
"""

import argparse
import statistics
import time

import jax
import jax.numpy as jnp


def seconds(call) -> float:
    started = time.perf_counter()
    jax.block_until_ready(call())
    return time.perf_counter() - started


def small_model(x):
    return jnp.tanh(x @ x.T).sum()


def measure(device: jax.Device, programs: int, offset: int) -> dict[str, float]:
    """The seconds of each kind of compile on ``device``; ``offset`` keeps every shape new."""
    with jax.default_device(device):
        first = seconds(lambda: jnp.zeros(offset + 1) + 1)
        sizes = range(offset + 2, offset + 2 + programs)
        eager = [seconds(lambda n=n: jnp.ones(n) * 2) / 2 for n in sizes]  # two programs each
        trace, xla = [], []
        for n in sizes:
            x = jnp.ones((n, 3))  # made on `device`, the default inside this block
            started = time.perf_counter()
            lowered = jax.jit(small_model).lower(x)
            lowered_at = time.perf_counter()
            lowered.compile()
            trace.append(lowered_at - started)
            xla.append(time.perf_counter() - lowered_at)
    return {
        "first compile": first,
        "eager op, new shape": statistics.median(eager),
        "jit: trace + lower": statistics.median(trace),
        "jit: XLA compile": statistics.median(xla),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=20, help="new programs per measurement")
    args = parser.parse_args()
    backends = [jax.default_backend()] + (["cpu"] if jax.default_backend() != "cpu" else [])
    results = {
        name: measure(jax.devices(name)[0], args.programs, offset=1000 * i)
        for i, name in enumerate(backends)
    }
    print(f"JAX {jax.__version__}; seconds, median of {args.programs} new programs each\n")
    print("| | " + " | ".join(backends) + (" | ratio |" if len(backends) > 1 else " |"))
    print("|---" * (len(backends) + 1 + (len(backends) > 1)) + "|")
    for kind in results[backends[0]]:
        row = [results[name][kind] for name in backends]
        ratio = f" | {row[0] / row[1]:.1f}x" if len(row) > 1 else ""
        print(f"| {kind} | " + " | ".join(f"{s:.4f}" for s in row) + ratio + " |")


if __name__ == "__main__":
    main()
