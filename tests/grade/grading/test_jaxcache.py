"""When the grader fills a lesson's shared compilation cache (grading/_jaxcache.py): at the lesson's
``fill_after``-th submission, once, without making any other submission wait; what a fill leaves."""

import asyncio
from pathlib import Path
from typing import Any

import pytest

from course_tools.grade.grading._jaxcache import SharedCache
from course_tools.grade.sandbox import KernelCache


class CountingCache(SharedCache):
    """A SharedCache whose fill takes ``seconds`` and is counted instead of running a kernel."""

    fills: int = 0
    seconds: float = 0.0

    async def _fill(self, lesson: str, fill: Any) -> KernelCache | None:
        self.fills += 1
        await asyncio.sleep(self.seconds)
        return KernelCache(f"/cache/{lesson}", writable=False)


async def NO_FILL(lesson: str, cache: KernelCache) -> bool:
    raise AssertionError("the counted cache never runs a solution")


def test_the_nth_submission_fills_and_later_ones_read(tmp_path: Path) -> None:
    cache = CountingCache(tmp_path, enabled=True, fill_after=3)

    async def arrivals() -> list[KernelCache | None]:
        return [await cache.for_lesson("02", NO_FILL) for _ in range(5)]

    got = asyncio.run(arrivals())
    assert [c.folder if c else None for c in got] == [None, None, *["/cache/02"] * 3]
    assert cache.fills == 1


def test_submissions_arriving_during_the_fill_do_not_wait(tmp_path: Path) -> None:
    cache = CountingCache(tmp_path, enabled=True, fill_after=1)
    cache.seconds = 0.5

    async def two_at_once() -> tuple[Any, Any]:
        filler = asyncio.create_task(cache.for_lesson("02", NO_FILL))
        await asyncio.sleep(0.05)
        other = await asyncio.wait_for(cache.for_lesson("02", NO_FILL), timeout=0.2)
        return await filler, other

    filled, other = asyncio.run(two_at_once())
    assert filled is not None and other is None and cache.fills == 1


def test_lessons_are_counted_apart(tmp_path: Path) -> None:
    cache = CountingCache(tmp_path, enabled=True, fill_after=2)

    async def mixed() -> list[KernelCache | None]:
        return [await cache.for_lesson(lesson, NO_FILL) for lesson in ("02", "03", "02", "03")]

    assert [c.folder if c else None for c in asyncio.run(mixed())] == [
        None,
        None,
        "/cache/02",
        "/cache/03",
    ]


@pytest.mark.parametrize(("enabled", "fill_after"), [(False, 1), (True, 0)])
def test_no_cache_when_off(tmp_path: Path, enabled: bool, fill_after: int) -> None:
    cache = CountingCache(tmp_path, enabled=enabled, fill_after=fill_after)

    async def many() -> list[KernelCache | None]:
        return [await cache.for_lesson("02", NO_FILL) for _ in range(4)]

    assert asyncio.run(many()) == [None] * 4 and cache.fills == 0


def _filler(writes: bool, answered: bool) -> Any:
    async def fill(lesson: str, cache: KernelCache) -> bool:
        assert cache.writable
        if writes:
            (Path(cache.folder) / "program").write_bytes(b"compiled")
        return answered

    return fill


@pytest.mark.parametrize(
    ("writes", "answered", "kept"), [(True, True, True), (False, True, False), (True, False, False)]
)
def test_a_fill_is_kept_read_only_only_when_it_answered_and_compiled(
    tmp_path: Path, writes: bool, answered: bool, kept: bool
) -> None:
    cache = SharedCache(tmp_path / "caches", enabled=True, fill_after=1)
    got = asyncio.run(cache.for_lesson("02", _filler(writes, answered)))
    folders = list((tmp_path / "caches").iterdir())
    if kept:
        assert got is not None and not got.writable and folders == [Path(got.folder)]
        assert (Path(got.folder) / "program").stat().st_mode & 0o222 == 0
    else:
        assert got is None and folders == []
