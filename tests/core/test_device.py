"""device_report (course_lib/_device.py) against what JAX itself says."""

import jax
import jaxlib

import course_lib as cl


def test_device_report_matches_jax() -> None:
    report = cl.device_report()
    devices = jax.devices()
    assert report.backend == jax.default_backend()
    assert report.device_count == len(devices) == jax.device_count()
    assert report.device_kinds == tuple(d.device_kind for d in devices)
    assert (report.jax_version, report.jaxlib_version) == (jax.__version__, jaxlib.__version__)


def test_device_report_text() -> None:
    report = cl.device_report()
    kinds = ", ".join(sorted({d.device_kind for d in jax.devices()}))
    assert str(report).splitlines() == [
        f"backend: {jax.default_backend()}",
        f"devices: {len(jax.devices())} x {kinds}",
        f"jax {jax.__version__}, jaxlib {jaxlib.__version__}",
    ]


def test_device_report_text_groups_device_kinds() -> None:
    report = cl.DeviceReport("gpu", ("H100", "H100", "A100"), 3, "0.0", "0.0")
    assert str(report).splitlines()[1] == "devices: 3 x A100, H100"
