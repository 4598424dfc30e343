"""What the sandbox's tests share: a fork server for each test module that asks for one."""

from collections.abc import Iterator

import pytest

from course_tools.grade.sandbox import kernel_env
from course_tools.grade.sandbox._forked import ForkServer


@pytest.fixture(scope="module")
def forks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkServer]:
    """A warm process that forks kernels, closed after the module's tests."""
    folder = tmp_path_factory.mktemp("fork-server")
    server = ForkServer(kernel_env(folder), folder)
    yield server
    server.close()
