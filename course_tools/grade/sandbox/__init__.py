"""The sandbox: a fenced kernel that runs code and says what became of it. It knows nothing of
exercises, lessons or grades.

* ``_kernel.py``: :class:`Sandbox`, one kernel under time, memory and process limits, run through
  the launcher; :class:`KernelCache`, the JAX compilation-cache folder a kernel may read (or fill).
* ``_launcher.py``: the launcher every confined kernel starts through (Landlock for files, TCP and
  signals; no capabilities; a pids cgroup or a watchdog; cleanup of every descendant), and the
  probe of what this machine allows. It is one file of standard library only, run as a script
  before ``site``; its grader's side gives the kernel's environment and readable paths.
* ``_kernel_main.py``: what a confined kernel runs, ipykernel on the unix sockets the launcher
  made for it (a script too).
* ``_forkserver.py``: the warm process (a script too) that forks confined kernels with JAX already
  imported; ``_forked.py``: the grader's side of it.
* ``_level.py``: :class:`SandboxLevel`, the level in force, found once per run.
"""

from ._forked import ForkServer as ForkServer
from ._kernel import CellResult as CellResult
from ._kernel import Confinement as Confinement
from ._kernel import KernelCache as KernelCache
from ._kernel import KernelStartError as KernelStartError
from ._kernel import Limits as Limits
from ._kernel import Sandbox as Sandbox
from ._kernel import kernel_env as kernel_env
from ._level import SandboxLevel as SandboxLevel
