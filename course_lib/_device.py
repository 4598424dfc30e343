"""Which backend and devices JAX found, in one call."""

from dataclasses import dataclass

import jax
import jaxlib


@dataclass(frozen=True)
class DeviceReport:
    """Backend, devices and versions; prints as a few readable lines."""

    backend: str
    device_kinds: tuple[str, ...]
    device_count: int
    jax_version: str
    jaxlib_version: str

    def __str__(self) -> str:
        kinds = ", ".join(sorted(set(self.device_kinds)))
        return (
            f"backend: {self.backend}\n"
            f"devices: {self.device_count} x {kinds}\n"
            f"jax {self.jax_version}, jaxlib {self.jaxlib_version}"
        )


def device_report() -> DeviceReport:
    """Describe what JAX will compute on.

    >>> report = device_report()
    >>> report.device_count == len(jax.devices()) and report.backend == jax.default_backend()
    True
    """
    devices = jax.devices()
    return DeviceReport(
        backend=jax.default_backend(),
        device_kinds=tuple(d.device_kind for d in devices),
        device_count=len(devices),
        jax_version=jax.__version__,
        jaxlib_version=jaxlib.__version__,
    )
