"""What a confined kernel runs: ipykernel, as ``python -m ipykernel_launcher ARGUMENTS`` runs it,
on the unix sockets the launcher made for it (``_launcher.listen_on``)::

    python _kernel_main.py -f CONNECTION_FILE

A kernel whose own sockets are closed cannot make the sockets it listens on, so the launcher makes
them before confining it and names them in :data:`SOCKETS_ENV`. Where ipykernel then binds each of
those addresses, ZeroMQ takes over the listening socket made for it (``ZMQ_USE_FD``) instead of
making one. Run as a script, or loaded by the fork server, which calls :func:`main` in its forked
kernels; its only import beyond the standard library is ZeroMQ, inside :func:`adopt_sockets`.
"""

from __future__ import annotations

import json
import os
import runpy
import sys

SOCKETS_ENV = "COURSE_GRADE_KERNEL_SOCKETS"  # {"ipc://PATH": descriptor}, read once
KERNEL_COMMAND = [os.path.abspath(__file__)]  # what follows the interpreter in a kernel command


def adopt_sockets() -> None:
    """Make ZeroMQ bind each address named in :data:`SOCKETS_ENV` to the socket made for it."""
    made: dict[str, int] = json.loads(os.environ.pop(SOCKETS_ENV, "{}"))
    if not made:
        return
    for fd in made.values():
        os.set_inheritable(fd, False)  # ZeroMQ's now: no process the notebook starts gets it
    import zmq

    bind = zmq.Socket.bind

    def bind_made(self: zmq.Socket, addr: str) -> object:
        fd = made.pop(addr, None)
        if fd is not None:
            self.set(zmq.USE_FD, fd)
        return bind(self, addr)

    zmq.Socket.bind = bind_made  # type: ignore[method-assign,assignment]  # this kernel's, for life


def main(arguments: list[str]) -> None:
    """ipykernel with ``arguments``, on the sockets the launcher made."""
    adopt_sockets()
    sys.argv = ["ipykernel_launcher", *arguments]  # runpy puts the module's file first
    runpy.run_module("ipykernel_launcher", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    del sys.path[0]  # this folder: a kernel's imports must not find the grader's modules
    main(sys.argv[1:])
