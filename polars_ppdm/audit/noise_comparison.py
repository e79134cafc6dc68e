"""Paper 000's comparison: a release against additive uniform and Gaussian noise at given SNRs."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import cast

import numpy as np
import polars as pl

from polars_ppdm._validation import is_real
from polars_ppdm.audit._aligned import aligned_numeric
from polars_ppdm.audit.information import privacy_q
from polars_ppdm.audit.linkage import rank_linkage
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.noise import gaussian_noise, scale_for_snr, uniform_noise
from polars_ppdm.kernels.prf import stream_id
from polars_ppdm.secret import SecretLike, resolve_secret

__all__ = ["compare_to_additive_noise"]


def compare_to_additive_noise(
    original: pl.DataFrame | pl.LazyFrame,
    released: pl.DataFrame | pl.LazyFrame,
    columns: str | Sequence[str],
    *,
    snr: float | Sequence[float] = (1.0, 4.0, 16.0),
    secret: SecretLike = None,
    bins: int | None = None,
) -> pl.DataFrame:
    """Privacy Q per column and rank linkage of a release, beside additive noise.

    For every SNR = Var(X) / Var(noise), each column gets uniform and Gaussian noise from
    the keyed randomness (stream ``"audit_noise/<dist>/<column>"``, key = row position),
    and the same two measures are computed, as paper 000 compares its method.  The
    tables must be aligned row by row (no shuffle) and free of nulls in ``columns``.

    Returns
    -------
    polars.DataFrame
        ``method`` ("released", "uniform noise", "gaussian noise"), ``snr`` (null for the
        release), ``rank_linkage`` and one ``privacy_q_<column>`` per column.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> import polars_ppdm as ppdm
    >>> df = pl.DataFrame({"x": np.random.default_rng(0).normal(size=2000)})
    >>> out = ppdm.audit.compare_to_additive_noise(df, ppdm.ecdf_resample(df, "x", bins=20, secret=1), "x", snr=[1.0], secret=2)
    >>> out["method"].to_list()
    ['released', 'uniform noise', 'gaussian noise']
    >>> bool(out["rank_linkage"][0] > 0.99 > out["rank_linkage"][2])
    True
    """
    func = "compare_to_additive_noise"
    snrs: list[float] = (
        [cast(float, snr)]  # a real number (NumPy's too), checked just here
        if is_real(snr)
        else list(snr)
        if isinstance(snr, Sequence | np.ndarray) and not isinstance(snr, str)
        else []
    )
    if not snrs or any(not is_real(s) or not 0 < s < np.inf for s in snrs):
        msg = f"The 'snr' parameter of {func} must be a float > 0 or a sequence of them. Got {snr!r} instead."
        raise InvalidParameterError(msg)
    original, released, cols = aligned_numeric(original, released, columns, func)
    secret = resolve_secret(secret).key
    values = {c: original[c].cast(pl.Float64).to_numpy() for c in cols}
    keys = np.arange(original.height, dtype=np.uint64)
    scales = _noise_scales(values, snrs, func)

    def row(method: str, level: float | None, frame: pl.DataFrame) -> dict:
        out = {"method": method, "snr": level, "rank_linkage": rank_linkage(original, frame, cols)}
        out.update({f"privacy_q_{c}": privacy_q(values[c], frame[c], bins=bins) for c in cols})
        return out

    rows = [row("released", None, released)]
    for level in snrs:
        for dist, draw in (("uniform", uniform_noise), ("gaussian", gaussian_noise)):
            noisy = pl.DataFrame(
                {
                    c: values[c]
                    + draw(secret, stream_id(f"audit_noise/{dist}/{c}"), keys, scales[level, dist, c])
                    for c in cols
                }
            )
            rows.append(row(f"{dist} noise", float(level), noisy))
    return pl.DataFrame(rows)


def _noise_scales(
    values: dict[str, np.ndarray], snrs: list[float], func: str
) -> dict[tuple[float, str, str], float]:
    """The noise scale per (snr, dist, column), refused by name where a variance or a
    scale is not a finite float (e.g. snr 5e-324: Var(X) / snr overflows).  A finite
    scale is at most ~2.3e154 and a finite variance keeps |x| below ~1e308 / n, so
    ``x + noise`` stays finite."""
    scales = {}
    for c, x in values.items():
        with np.errstate(over="ignore", invalid="ignore"):
            variance = float(x.var())
        if not math.isfinite(variance):
            msg = f"{func}: the variance of column {c!r} is not a finite float (values too large or not finite)."
            raise InvalidParameterError(msg)
        for level in snrs:
            for dist in ("uniform", "gaussian"):
                noise_variance = variance / float(level)  # Python floats: inf, not a NumPy warning
                scale = (
                    scale_for_snr(variance, float(level), dist) if math.isfinite(noise_variance) else math.inf
                )
                if not math.isfinite(scale):
                    msg = (
                        f"The 'snr' parameter of {func} must be large enough that the noise variance "
                        f"Var(X) / snr of column {c!r} is a finite float. Got {level!r}, which is not; "
                        "use a larger snr."
                    )
                    raise InvalidParameterError(msg)
                scales[level, dist, c] = scale
    return scales
