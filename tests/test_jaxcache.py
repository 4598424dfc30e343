"""When the grader fills a lesson's shared compilation cache (course_lib/grade/_jaxcache.py): at the
lesson's ``fill_after``-th submission, once, without making any other submission wait."""

import asyncio
from pathlib import Path
from typing import Any

import pytest

from course_lib.grade._jaxcache import KernelCache, SharedCache

NO_CONTEXT: Any = None  # the counted fill below never reads the grader's context


class CountingCache(SharedCache):
    """A SharedCache whose fill takes ``seconds`` and is counted instead of running a kernel."""

    fills: int = 0
    seconds: float = 0.0

    async def _fill(self, lesson: str, ctx: Any) -> KernelCache | None:
        self.fills += 1
        await asyncio.sleep(self.seconds)
        return KernelCache(f"/cache/{lesson}", writable=False)


def test_the_nth_submission_fills_and_later_ones_read(tmp_path: Path) -> None:
    cache = CountingCache(tmp_path, enabled=True, fill_after=3)

    async def arrivals() -> list[KernelCache | None]:
        return [await cache.for_lesson("02", NO_CONTEXT) for _ in range(5)]

    got = asyncio.run(arrivals())
    assert [c.folder if c else None for c in got] == [None, None, *["/cache/02"] * 3]
    assert cache.fills == 1


def test_submissions_arriving_during_the_fill_do_not_wait(tmp_path: Path) -> None:
    cache = CountingCache(tmp_path, enabled=True, fill_after=1)
    cache.seconds = 0.5

    async def two_at_once() -> tuple[Any, Any]:
        filler = asyncio.create_task(cache.for_lesson("02", NO_CONTEXT))
        await asyncio.sleep(0.05)
        other = await asyncio.wait_for(cache.for_lesson("02", NO_CONTEXT), timeout=0.2)
        return await filler, other

    filled, other = asyncio.run(two_at_once())
    assert filled is not None and other is None and cache.fills == 1


def test_lessons_are_counted_apart(tmp_path: Path) -> None:
    cache = CountingCache(tmp_path, enabled=True, fill_after=2)

    async def mixed() -> list[KernelCache | None]:
        return [await cache.for_lesson(lesson, NO_CONTEXT) for lesson in ("02", "03", "02", "03")]

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
        return [await cache.for_lesson("02", NO_CONTEXT) for _ in range(4)]

    assert asyncio.run(many()) == [None] * 4 and cache.fills == 0
