"""Run a test module's kernel tests on both paths: the compiled kernels and the pure
NumPy / pyca-cryptography one (``polars_ppdm.kernels._native.NATIVE`` set to None).

A module opts in with ``from native_paths import kernel_path`` and
``pytestmark = pytest.mark.usefixtures("kernel_path")``; without the extension the
native case skips.
"""

from __future__ import annotations

import pytest

from polars_ppdm.kernels import _native

_INSTALLED = _native.load()


@pytest.fixture(params=["native", "pure"])
def kernel_path(request, monkeypatch):
    """The kernels' path for the test: 'native' (skipped when not installed) or 'pure'."""
    if request.param == "native":
        if _INSTALLED is None:
            pytest.skip("the compiled kernels (polars_ppdm_native) are not installed, or PPDM_NATIVE=0")
        monkeypatch.setattr(_native, "NATIVE", _INSTALLED)
    else:
        monkeypatch.setattr(_native, "NATIVE", None)
    return request.param
