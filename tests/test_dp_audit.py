"""The DP audit loop: every DP release of the package, checked the same two ways.

Generated from :data:`polars_ppdm.audit.dp_checks.DP_RELEASES` (a release added to the
package and not to the list fails the first test).
"""

from __future__ import annotations

import numpy as np
import pytest

import polars_ppdm as ppdm
from polars_ppdm.audit.dp_checks import (
    DP_RELEASES,
    AuditedRelease,
    _histogram,
    _point_unit,
    clopper_pearson,
    privacy_loss_lower_bound,
    record_replay,
)

IDS = [r.name for r in DP_RELEASES]


def test_every_dp_release_of_the_package_is_audited():
    released = {name for name in ppdm.__all__ if name.startswith("dp_")}
    audited = {r.name.split()[0] for r in DP_RELEASES}
    assert released <= audited, sorted(released - audited)


@pytest.mark.parametrize("audited", DP_RELEASES, ids=IDS)
def test_record_replay(audited):
    """Same secret, neighbouring tables: untouched cells identical, the touched ones moved
    by at most the declared sensitivity (and by something: the unit is seen)."""
    got = record_replay(audited)
    assert got.cells > 0 and got.untouched_equal
    assert got.touched > 0
    if audited.sensitivity is not None:
        assert 0 < got.l1 <= audited.sensitivity


@pytest.mark.slow
@pytest.mark.parametrize("audited", [r for r in DP_RELEASES if r.touched is not None], ids=lambda r: r.name)
def test_privacy_loss_stays_below_epsilon(audited):
    """600 secrets: the 95% lower confidence bound on the loss of the distinguishing event."""
    assert privacy_loss_lower_bound(audited) <= audited.epsilon


@pytest.mark.slow
def test_half_the_noise_fails_the_audit():
    broken = AuditedRelease(
        "dp_histogram with half the noise",
        1.0,
        lambda f, s, e: _histogram(f, s, 2 * e),
        _point_unit,
        3,
        touched=(4, 4),
    )
    assert privacy_loss_lower_bound(broken) > broken.epsilon


def test_noise_not_keyed_by_the_cell_fails_record_replay():
    """Noise drawn in sequence (seeded by the secret, in cell order, and so shifted when the
    data changes shape) moves cells the unit never touched."""

    def sequential(frame, secret, epsilon):
        cells = _histogram(frame, secret, 1e9)
        rng = np.random.default_rng([secret, frame.height])
        return {cell: value + rng.laplace(0, 3 / epsilon) for cell, value in cells.items()}

    got = record_replay(AuditedRelease("sequential noise", 1.0, sequential, _point_unit, 3))
    assert not got.untouched_equal


def test_clopper_pearson_bounds():
    lower, upper = clopper_pearson(33, 200)
    assert 0.12 < lower < 33 / 200 < upper < 0.22
    assert clopper_pearson(0, 10)[0] == 0 and clopper_pearson(10, 10)[1] == 1
