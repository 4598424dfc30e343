"""Fixtures that several test modules ask for by name."""

from collections.abc import Iterator

import pytest

from course_lib import checks


@pytest.fixture
def fresh_checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Checks print rather than raise (``CI`` and ``COURSE_STRICT_CHECKS`` unset), and no hint
    was shown yet. A module of self-check tests asks for it in every test with
    ``pytestmark = pytest.mark.usefixtures("fresh_checks")``."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("COURSE_STRICT_CHECKS", raising=False)
    checks.set_strict(None)
    checks.reset_hints()
    yield
    checks.set_strict(None)
    checks.reset_hints()
