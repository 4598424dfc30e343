"""Kernels that the tests start themselves (nbval's, the room's learners) listen on unix sockets.

A free TCP port chosen by the kernel manager can be taken by another process before the kernel
binds it, and the kernel then dies at start ("Address already in use"); `make test` runs many
kernels at once, so that happens. The grader's and ``make notebooks``' kernels do the same.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref

from jupyter_client.manager import KernelManager


class UnixSocketKernelManager(KernelManager):
    """A ``KernelManager`` whose kernel listens on unix sockets in a new private folder (removed
    with the manager), where the platform has them; plain TCP elsewhere."""

    def __init__(self, **kwargs: object) -> None:
        if os.name != "posix":
            super().__init__(**kwargs)
            return
        folder = tempfile.mkdtemp(prefix="test-kernel-")
        weakref.finalize(self, shutil.rmtree, folder, ignore_errors=True)
        connection = os.path.join(folder, "kernel.json")
        super().__init__(transport="ipc", connection_file=connection, **kwargs)
