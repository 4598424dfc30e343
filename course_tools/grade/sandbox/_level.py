"""The sandbox level of a run: found once by probing, then a frozen value every part reads."""

from dataclasses import dataclass

from . import _launcher
from ._kernel import Confinement


@dataclass(frozen=True)
class SandboxLevel:
    """What confines every kernel of a run, as the gradebook records it (see
    ``_launcher.sandbox_level``); a frozen value, safe to send to a Dask worker.

    >>> off = SandboxLevel.probe(enabled=False)
    >>> off.name, off.enabled, off.confinement() is None
    ('off', False, True)
    """

    items: tuple[tuple[str, object], ...]

    @classmethod
    def probe(cls, enabled: bool = True) -> "SandboxLevel":
        """Ask this machine (a subprocess tries Landlock) what it can confine kernels with."""
        return cls(tuple(_launcher.sandbox_level(enabled).items()))

    def as_dict(self) -> dict[str, object]:
        """The level as ``gradebook.json`` records it, keys in the probe's order."""
        return dict(self.items)

    @property
    def name(self) -> str:
        """``landlock``, ``none`` (the machine cannot) or ``off`` (``--sandbox off``)."""
        return str(self.as_dict()["sandbox"])

    @property
    def enabled(self) -> bool:
        """False when the run turned the sandbox off."""
        return self.name != "off"

    @property
    def network(self) -> str:
        """``closed`` (TCP fenced by Landlock, every other socket refused), ``tcp`` (TCP only
        fenced) or ``open``; empty without Landlock."""
        return str(self.as_dict().get("network", ""))

    @property
    def reason(self) -> str:
        """Why kernels are not confined with Landlock; empty when they are."""
        return str(self.as_dict().get("reason", ""))

    def confinement(self) -> Confinement | None:
        """How kernels are started: through the launcher (Landlock or not) wherever it runs."""
        if self.as_dict().get("processes") != "subreaper":
            return None
        level = self.as_dict()
        return Confinement(
            landlock=self.name == "landlock", sockets=level.get("network") == "closed"
        )
