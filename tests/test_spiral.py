"""Log-spiral perturbation (paper 002): the distance theorem, the key, the known-I/O
attack, engines and bad input."""

from __future__ import annotations

import json
import math
import os
import re
import stat
import warnings

import duckdb
import numpy as np
import polars as pl
import pytest
from _helpers import refusal_in_another_process
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import polars_ppdm as ppdm
from polars_ppdm.exceptions import InvalidParameterError, PrivacyLeakWarning
from polars_ppdm.kernels.spiral import compose, draw_rounds


def pairwise(x: np.ndarray) -> np.ndarray:
    return np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(axis=-1))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 20), t=st.integers(1, 10), secret=st.integers(0, 2**32))
def test_every_distance_is_multiplied_by_the_product_of_the_ks(n, t, secret):
    cols = [f"c{i}" for i in range(n)]
    key = ppdm.spiral_key(cols, bounds={c: (0, 10) for c in cols}, rounds=t, secret=secret)
    x = np.random.default_rng(secret).uniform(0, 10, (30, n))
    before, after = pairwise(x), pairwise(key.apply(x))
    off = ~np.eye(len(x), dtype=bool)
    assert np.abs(after[off] / (key.scale * before[off]) - 1).max() <= 1e-9
    rounds = draw_rounds(
        ppdm.resolve_secret(secret).key,
        np.zeros(n),
        np.full(n, 10.0),
        t,
        scales=(0.1, 5.0),
        angle=(0.1, 1.0),
        eps=None,
    )
    assert compose(rounds, n)[2] == pytest.approx(math.prod(r.k for r in rounds))
    for r in rounds:  # the groups partition the columns into 2s and 3s
        assert sorted(i for g in r.groups for i in g) == list(range(n))
        assert {len(g) for g in r.groups} <= {2, 3}


def test_key_round_trip_and_json(tmp_path):
    cols = list("abcdefg")
    key = ppdm.spiral_key(cols, bounds={c: (-5, 5) for c in cols}, rounds=7, secret=3)
    x = np.random.default_rng(1).normal(0, 3, (500, 7))
    assert np.abs(key.invert(key.apply(x)) - x).max() <= 1e-9 * np.abs(x).max()
    key.save(tmp_path / "key.json")
    loaded = ppdm.SpiralKey.load(tmp_path / "key.json")
    assert (loaded.apply(x) == key.apply(x)).all()
    assert "secret" in repr(key) and str(key.matrix[0, 0])[:6] not in repr(key)


def test_eps_gives_k_from_the_spiral_parameter():
    rounds = draw_rounds(bytes(16), np.zeros(4), np.ones(4), 3, scales=None, angle=(0.2, 0.9), eps=0.5)
    for r in rounds:
        assert len(set(r.angles)) == 1 and r.k == pytest.approx(math.exp(0.5 * r.angles[0]))


def test_known_io_attack_recovers_every_other_row():
    cols = [f"c{i}" for i in range(8)]
    x = np.random.default_rng(2).uniform(0, 10, (1000, 8))
    frame = pl.DataFrame(x, schema=cols)
    released, _key = ppdm.spiral(
        frame, cols, rounds=7, bounds={c: (0, 10) for c in cols}, secret=9, return_key=True
    )
    y = released.to_numpy()
    attack = ppdm.audit.known_io_attack(x[:9], y[:9])  # n + 1 = 9 known pairs: any affine map
    rmse = np.sqrt(((attack.reconstruct(y[9:]) - x[9:]) ** 2).mean())
    assert rmse < 1e-6


@pytest.mark.parametrize("d", [2, 3, 5, 8])
def test_n_known_rows_undo_the_spiral(d):
    """The spiral is a similarity (a rotation, one scale, an offset): n(n - 1)/2 + n + 1
    unknowns, which n known pairs in general position determine -- one fewer than an
    affine map needs (attack review 57: two people who know their own rows of a
    latitude/longitude pair undo everyone's)."""
    cols = [f"c{i}" for i in range(d)]
    x = np.random.default_rng(d).uniform(0, 10, (2000, d))
    released = ppdm.spiral(
        pl.DataFrame(x, schema=cols), cols, rounds=7, bounds={c: (0, 10) for c in cols}, secret=9
    )
    y = released.to_numpy()
    attack = ppdm.audit.known_io_attack(x[:d], y[:d])
    assert np.abs(attack.reconstruct(y[d:]) - x[d:]).max() < 1e-8
    with pytest.raises(InvalidParameterError, match=f"at least {d} known pairs"):
        ppdm.audit.known_io_attack(x[: d - 1], y[: d - 1])


def test_fewer_than_n_rows_in_general_position_do_not_determine_the_spiral():
    """With the n known rows on a line in 3-D, the rotation about that line is free: two
    rotations that agree on the known rows release the others differently."""
    cols = ["a", "b", "c"]
    on_a_line = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    with pytest.raises(InvalidParameterError, match="span only 1 of 3 dimensions"):
        ppdm.audit.known_io_attack(on_a_line, on_a_line)
    released = ppdm.spiral(
        pl.DataFrame(on_a_line, schema=cols), cols, rounds=3, bounds={c: (0, 2) for c in cols}, secret=9
    )
    with pytest.raises(InvalidParameterError, match="span only 1 of 3 dimensions"):
        ppdm.audit.known_io_attack(on_a_line, released.to_numpy())


def test_eager_lazy_and_streaming_agree_and_other_columns_stay():
    rng = np.random.default_rng(4)
    df = pl.DataFrame(
        {
            "id": np.arange(300_000),
            "a": rng.normal(size=300_000),
            "b": rng.normal(size=300_000),
            "c": rng.integers(0, 9, 300_000),
        }
    )
    kwargs = dict(rounds=4, bounds={c: (-3, 9) for c in "abc"}, secret="ef" * 16)
    eager = ppdm.spiral(df, ["a", "b", "c"], **kwargs)
    lazy = df.lazy().ppdm.spiral(["a", "b", "c"], **kwargs)
    assert isinstance(lazy, pl.LazyFrame)
    assert_frame_equal(lazy.collect(engine="streaming"), eager)
    assert_frame_equal(lazy.collect(engine="in-memory"), eager)
    assert eager["id"].equals(df["id"]) and eager.schema["c"] == pl.Float64


def test_nulls_null_the_whole_row_and_bad_input_is_refused():
    df = pl.DataFrame(
        {"a": [1.0, None, 3.0], "b": [1.0, 2.0, 3.0], "s": ["x", "y", "z"], "nan": [1.0, float("nan"), 2.0]}
    )
    out = ppdm.spiral(df, ["a", "b"], rounds=2, bounds={"a": (0, 5), "b": (0, 5)}, secret=1)
    assert out["a"].null_count() == 1 and out["b"].null_count() == 1 and out["b"][1] is None
    bounds = {c: (0, 5) for c in ["a", "b", "s", "nan"]}
    cases = [
        (dict(columns=["a"]), "at least 2 columns"),
        (dict(columns=["a", "s"]), "must be numeric"),
        (dict(columns=["b", "nan"]), "NaN or infinite"),
        (dict(columns=["a", "b"], rounds=0), "'rounds'"),
        (dict(columns=["a", "b"], factors=(0.0, 2.0)), "'factors'"),
        (dict(columns=["a", "b"], factors=(-1.0, 2.0)), "'factors'"),
        (dict(columns=["a", "b"], angle=(1.0, 0.5)), "'angle'"),
        (dict(columns=["a", "b"], rounds=2, factors=[1.0]), "one k > 0 per round"),
    ]
    for kwargs, message in cases:
        with pytest.raises(InvalidParameterError, match=message):
            ppdm.spiral(df, bounds=bounds, secret=1, **kwargs)
    with pytest.warns(PrivacyLeakWarning, match="not public"):
        ppdm.spiral(df, ["b", "a"], rounds=1, secret=1)
    with pytest.raises(InvalidParameterError, match="at least 2 known pairs"):
        ppdm.audit.known_io_attack(np.ones((1, 2)), np.ones((1, 2)))
    one_point = np.ones((4, 2))
    with pytest.raises(InvalidParameterError, match="span only 0 of 2 dimensions"):
        ppdm.audit.known_io_attack(one_point, one_point)  # the map is undetermined off the point
    with pytest.raises(InvalidParameterError, match="null, NaN or infinite"):
        ppdm.audit.known_io_attack(np.array([[0.0, np.nan], [1.0, 0.0], [0.0, 1.0]]), np.ones((3, 2)))
    with pytest.raises(
        InvalidParameterError, match="'x' parameter of mutual_information must be a 1-D sequence"
    ):
        ppdm.audit.mutual_information(["a", "b", "c"], [1.0, 2.0, 3.0])


def test_seeds_bounds_json_and_eps_are_checked():
    cols = ["a", "b", "c"]
    bounds = {c: (0, 1) for c in cols}
    same = ppdm.spiral_key(cols, bounds=bounds, rounds=3, secret=5)
    assert (same.matrix == ppdm.spiral_key(cols, bounds=bounds, rounds=3, secret=5).matrix).all()
    assert not np.allclose(same.matrix, ppdm.spiral_key(cols, bounds=bounds, rounds=3, secret=6).matrix)
    again = ppdm.SpiralKey.from_json(same.to_json())
    assert (
        (again.matrix == same.matrix).all()
        and (again.offset == same.offset).all()
        and again.scale == same.scale
    )
    assert "scale=<secret>" in repr(same)
    for bad, message in [
        ({"a": (1, 0), "b": (0, 1), "c": (0, 1)}, "low < high"),
        ({"a": (0, float("nan")), "b": (0, 1), "c": (0, 1)}, "low < high"),
        ({"a": (0, 1)}, "no \\(low, high\\)"),
        ({"a": "x", "b": (0, 1), "c": (0, 1)}, "pair of numbers"),
    ]:
        with pytest.raises(InvalidParameterError, match=message):
            ppdm.spiral_key(cols, bounds=bad, rounds=2, secret=1)
    with pytest.raises(InvalidParameterError, match="'growth'"):
        ppdm.spiral_key(cols, bounds=bounds, rounds=2, growth=1e6, secret=1)
    with pytest.raises(InvalidParameterError, match="Not a spiral key"):
        ppdm.SpiralKey.from_json('{"format": "other"}')
    with pytest.raises(InvalidParameterError, match="Not a spiral key"):
        ppdm.SpiralKey.from_json("not json")
    stored = json.loads(same.to_json())
    with pytest.raises(
        InvalidParameterError, match="damaged spiral key: 3 columns need a finite 3 x 3 matrix"
    ):
        ppdm.SpiralKey.from_json(json.dumps(stored | {"matrix": [[1.0]]}))
    with pytest.raises(InvalidParameterError, match="damaged spiral key: KeyError"):
        ppdm.SpiralKey.from_json(json.dumps({k: v for k, v in stored.items() if k != "offset"}))
    with pytest.raises(
        InvalidParameterError, match="'key' parameter of apply_spiral_key must be a SpiralKey"
    ):
        ppdm.apply_spiral_key(pl.DataFrame({"a": [1.0]}), None)
    with pytest.raises(InvalidParameterError, match="distinct column names"):
        ppdm.spiral_key(["a", "a"], bounds=bounds, secret=1)
    with pytest.raises(
        InvalidParameterError, match="'bounds' parameter of spiral must be a \\(low, high\\) pair"
    ):
        ppdm.spiral_key(cols, bounds=5, secret=1)
    with pytest.raises(InvalidParameterError, match="one k > 0 per round"):
        ppdm.spiral_key(cols, bounds=bounds, rounds=2, factors=["a", "b"], secret=1)
    empty = pl.DataFrame({"a": [None, None], "b": [1.0, 2.0]}, schema={"a": pl.Float64, "b": pl.Float64})
    with pytest.warns(PrivacyLeakWarning), pytest.raises(InvalidParameterError, match="'bounds'"):
        ppdm.spiral(empty, ["a", "b"], rounds=1, secret=1)


def test_duckdb_macro_matches_polars_bit_for_bit():
    rng = np.random.default_rng(8)
    cols = ["x 1", "y", "z", "w", 'q"uote']
    df = pl.DataFrame({c: rng.normal(0, 5, 20_000) for c in cols}).with_columns(
        pl.int_range(pl.len()).alias("id"),
        pl.when(pl.int_range(pl.len()) % 17 == 0).then(None).otherwise(pl.col("y")).alias("y"),
    )
    key = ppdm.spiral_key(cols, bounds={c: (-10, 10) for c in cols}, rounds=6, secret=12)
    con = ppdm.duckdb.register_spiral_key(duckdb.connect(), key, "perturb")
    con.execute("CREATE TABLE t AS SELECT * FROM df")
    sql = con.sql("FROM perturb('t') ORDER BY id").pl()
    assert_frame_equal(sql, ppdm.apply_spiral_key(df, key))
    con.execute(
        'CREATE TABLE bad AS SELECT \'nan\'::DOUBLE AS "x 1", 1.0 AS y, 1.0 AS z, 1.0 AS w, 1.0 AS "q""uote"'
    )
    with pytest.raises(duckdb.Error, match="NaN or infinite"):
        con.sql("FROM perturb('bad')").fetchall()


def test_a_key_needs_public_bounds():
    with pytest.raises(InvalidParameterError, match="there is no data to read"):
        ppdm.spiral_key(["a", "b"], bounds="data", rounds=1, secret=1)


def test_key_columns_from_any_sequence_of_names():
    bounds = {"a": (0, 1), "b": (0, 1)}
    expected = ppdm.spiral_key(["a", "b"], bounds=bounds, rounds=2, secret=3)
    for columns in (np.array(["a", "b"]), iter(["a", "b"]), ("a", "b")):
        key = ppdm.spiral_key(columns, bounds=bounds, rounds=2, secret=3)
        assert key.columns == ("a", "b") and all(type(c) is str for c in key.columns)
        assert (key.matrix == expected.matrix).all()


def test_a_saved_key_is_a_secret_file(tmp_path):
    key = ppdm.spiral_key(["a", "b"], bounds={"a": (0, 1), "b": (0, 1)}, rounds=2, secret=4)
    target = tmp_path / "key.json"
    old_umask = os.umask(0o022)
    try:
        key.save(target)
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    with pytest.raises(FileExistsError, match="already exists"):
        key.save(target)  # the only way back to the data is never replaced by accident
    other = ppdm.spiral_key(["a", "b"], bounds={"a": (0, 1), "b": (0, 1)}, rounds=2, secret=5)
    other.save(target, overwrite=True)
    assert (ppdm.SpiralKey.load(target).matrix == other.matrix).all()
    target.chmod(0o644)
    with pytest.raises(ppdm.SecretError, match=f"mode 0644.*chmod 600 {re.escape(str(target))}"):
        ppdm.SpiralKey.load(target)


def test_a_constant_column_with_bounds_from_the_data_gets_a_zero_width_range():
    # Before: refused ("low < high"), though real data sets have constant columns.
    rng = np.random.default_rng(21)
    x = rng.uniform(0, 10, (400, 3))
    x[:, 1] = 4.25  # constant
    frame = pl.DataFrame(x, schema=["a", "flat", "b"]).with_columns(
        pl.when(pl.int_range(pl.len()) == 7).then(None).otherwise(pl.col("flat")).alias("flat")
    )  # a null does not make it non-constant
    with pytest.warns(PrivacyLeakWarning) as caught:
        out, key = ppdm.spiral(frame, ["a", "flat", "b"], rounds=5, secret=8, return_key=True)
    messages = [str(w.message) for w in caught]
    assert any("not public" in m for m in messages)
    assert any("['flat'] hold one value" in m and "hyperplane" in m for m in messages)
    y = out.drop_nulls().to_numpy()
    kept = np.delete(x, 7, axis=0)
    # Invertible: the data owner gets the constant back.
    assert np.abs(key.invert(y) - kept).max() <= 1e-9 * 10
    # Distances are all multiplied by the scale.
    before, after = pairwise(kept[:50]), pairwise(y[:50])
    off = ~np.eye(50, dtype=bool)
    assert np.abs(after[off] / (key.scale * before[off]) - 1).max() <= 1e-9
    # No released column shows the constant: each varies.
    assert (y.std(axis=0) > 0.1).all()
    # What the docs say it shows: (Q e_j) . y = s c + (Q e_j) . b in every row.
    direction = key.matrix[:, 1] / key.scale
    along = y @ direction
    assert np.abs(along - (key.scale * 4.25 + direction @ key.offset)).max() <= 1e-9 * np.abs(along).max()


def test_public_zero_width_bounds_put_every_centre_on_the_constant():
    bounds = {"a": (0, 10), "flat": (3, 3), "b": (-1, 1)}
    key = ppdm.spiral_key(["a", "flat", "b"], bounds=bounds, rounds=4, secret=2)
    assert np.allclose(key.matrix @ key.matrix.T, key.scale**2 * np.eye(3))  # still a similarity
    rounds = draw_rounds(
        ppdm.resolve_secret(2).key,
        np.array([0.0, 3, -1]),
        np.array([10.0, 3, 1]),
        4,
        scales=(0.1, 5.0),
        angle=(0.1, 1.0),
        eps=None,
    )
    for r in rounds:
        for members, centre in zip(r.groups, r.centres, strict=True):
            assert all(value == 3.0 for m, value in zip(members, centre, strict=True) if m == 1)
    # The same key from a sequence of pairs and from an array.
    as_list = ppdm.spiral_key(["a", "flat", "b"], bounds=[(0, 10), (3, 3), (-1, 1)], rounds=4, secret=2)
    as_array = ppdm.spiral_key(
        ["a", "flat", "b"], bounds=np.array([[0, 10], [3, 3], [-1, 1]]), rounds=4, secret=2
    )
    assert (as_list.matrix == key.matrix).all() and (as_array.offset == key.offset).all()
    every = ppdm.spiral_key(["a", "b"], bounds={"a": (1, 1), "b": (2, 2)}, rounds=2, secret=2)
    assert np.isfinite(every.offset).all()


@pytest.mark.parametrize(
    ("bounds", "message"),
    [
        ({"a": (3, 3), "b": (1, 0)}, "column 'b'.*low < high"),
        ({"a": (3, 3), "b": "11"}, "column 'b'.*pair of numbers"),
        ({"a": (float("nan"), float("nan")), "b": (0, 1)}, "column 'a'.*low < high"),
        ({"a": (float("inf"), float("inf")), "b": (0, 1)}, "column 'a'.*low < high"),
        ({"a": (3, 3)}, "no \\(low, high\\)"),
        ([(3, 3)], "one \\(low, high\\) per column"),
    ],
)
def test_zero_width_bounds_do_not_let_bad_bounds_through(bounds, message):
    with pytest.raises(InvalidParameterError, match=message):
        ppdm.spiral_key(["a", "b"], bounds=bounds, rounds=1, secret=1)


def test_rounds_are_capped_so_a_key_is_drawn_fast():
    """rounds=10**11 drew rounds for hours (fuzz finding hang-spiral-rounds)."""
    df = pl.DataFrame({"x": [0.1, 0.5], "y": [0.2, 0.9]})
    with pytest.raises(
        InvalidParameterError, match=r"'rounds' parameter of spiral must be an int in \[1, 1,000\]"
    ):
        ppdm.spiral(df, ["x", "y"], rounds=10**11, bounds={"x": (0, 1), "y": (0, 1)}, secret=1)
    key = ppdm.spiral_key(
        ["x", "y"], bounds={"x": (0, 1), "y": (0, 1)}, rounds=1000, factors=(0.9, 1.1), secret=1
    )
    assert np.allclose(key.invert(key.apply(df.to_numpy())), df.to_numpy())


@pytest.mark.parametrize(
    ("bounds", "factors"),
    [({"x": (-1e307, 1e307), "y": (-1e307, 1e307)}, (0.1, 5.0)), ({"x": (0, 1), "y": (0, 1)}, (4.0, 5.0))],
)
def test_a_key_that_overflows_a_float_is_refused_by_name(bounds, factors):
    """The composed offset (bounds near 1e307) or scale (5^1000) overflowed inside NumPy's
    matmul (fuzz findings spiral-overflow, chain-spiral-overflow)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(
            InvalidParameterError, match=r"composed key is not a finite float map.*'rounds'.*'bounds'"
        ):
            ppdm.spiral_key(
                ["x", "y"], bounds=bounds, rounds=1000 if factors[0] > 1 else 7, factors=factors, secret=1
            )


@pytest.mark.parametrize("lazy", [False, True])
def test_data_that_the_key_moves_past_the_largest_float_is_refused(lazy):
    """Finite key, but 1e307 times its scale is inf: Polars gave inf silently, NumPy warned."""
    df = pl.DataFrame({"x": [-1e307, 1e307, None], "y": [1e307, -1e307, 1.0]})
    frame = df.lazy() if lazy else df
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InvalidParameterError, match="hold values too large for the key"):
            out = ppdm.spiral(frame, ["x", "y"], bounds={"x": (0, 1), "y": (0, 1)}, secret=1)
            if lazy:
                out.collect()
        with pytest.warns(PrivacyLeakWarning), pytest.raises(InvalidParameterError, match="'bounds'"):
            ppdm.spiral(frame, ["x", "y"], bounds="data", secret=1)


def test_inverse_of_a_key_with_a_scale_above_1e154():
    """The inverse divided by scale**2, which overflows (OverflowError) for scale > 1.3e154."""
    key = ppdm.spiral_key(
        ["x", "y"], bounds={"x": (0, 1), "y": (0, 1)}, rounds=220, factors=(5.0, 6.0), secret=1
    )
    assert key.scale > 1e154
    x = np.array([[0.25, 0.5], [0.75, 0.125]])
    assert np.allclose(key.invert(key.apply(x)), x, rtol=0, atol=1e-6)


def test_a_key_file_with_a_scale_not_above_zero_is_damaged():
    text = ppdm.spiral_key(["x", "y"], bounds={"x": (0, 1), "y": (0, 1)}, rounds=2, secret=1).to_json()
    for scale in (0.0, -1.0, float("inf")):
        data = json.loads(text) | {"scale": scale}
        with pytest.raises(InvalidParameterError, match=r"damaged spiral key.*scale > 0"):
            ppdm.SpiralKey.from_json(json.dumps(data))


def _key_entries_shown(text: str, key: ppdm.SpiralKey) -> int:
    """How many of the key's matrix and offset entries appear as numbers in ``text``."""
    numbers = [float(v) for v in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", text)]
    entries = [*key.matrix.ravel(), *key.offset]
    return sum(any(abs(v - u) <= 1e-6 * max(1.0, abs(v)) for u in numbers) for v in entries)


def test_a_lazy_spiral_shows_its_key_nowhere(tmp_path):
    """Attack review 63: the composed matrix and offset were literals of the plan, so
    explain(), str() and a Polars error of a later step (its "Resolved plan until
    failure") printed the key: 6 of its 6 entries, enough to undo every row.  The plan
    holds a handle; a plan taken to another process does not run there."""
    rng = np.random.default_rng(63)
    df = pl.DataFrame({"lat": rng.normal(47.4, 0.1, 1000), "lon": rng.normal(8.5, 0.2, 1000)})
    lazy, key = ppdm.spiral(
        df.lazy(),
        ["lat", "lon"],
        bounds={"lat": (47, 48), "lon": (7, 10)},
        secret=ppdm.Secret.generate(),
        return_key=True,
    )
    with pytest.raises(pl.exceptions.ColumnNotFoundError) as typo:
        lazy.select("lat", "lon", "latitude").collect()  # a later step's typo
    shown = "\n".join([str(typo.value), lazy.explain(), lazy.explain(optimized=False), str(lazy)])
    assert _key_entries_shown(shown, key) == 0
    blob = lazy.serialize()
    assert not any(np.float64(v).tobytes() in blob for v in [*key.matrix.ravel(), *key.offset])
    assert_frame_equal(lazy.collect(), ppdm.apply_spiral_key(df, key))
    printed = refusal_in_another_process(blob, tmp_path)
    assert "not known in this process" in printed and _key_entries_shown(printed, key) == 0


def test_a_spiral_keeps_a_column_named_like_its_helper():
    """Review 67: the struct of moved columns went into a fixed "__ppdm_spiral" column,
    which overwrote, then dropped, a user's column of that name."""
    df = pl.DataFrame({"a": [1.0, 2.0, 3.0], "b": [0.5, 1.5, 2.5], "__ppdm_spiral": ["x", "y", "z"]})
    key = ppdm.spiral_key(["a", "b"], bounds={"a": (0, 3), "b": (0, 3)}, secret=ppdm.Secret.generate())
    out = ppdm.apply_spiral_key(df, key)
    assert out.columns == df.columns and out["__ppdm_spiral"].equals(df["__ppdm_spiral"])


def test_a_live_spiral_plan_survives_other_plans_pickled_meanwhile(monkeypatch):
    """Review 67: the map was registered when the query was built, so 4,096 later
    registrations broke a plan that was never serialized.  A live plan holds its map;
    only a pickled one is registered (and may be dropped)."""
    import pickle

    from polars_ppdm import _held

    monkeypatch.setattr(_held, "MAX_HELD", 2)
    df = pl.DataFrame({"a": [1.0, 2.0, 3.0], "b": [0.5, 1.5, 2.5]})
    keys = [
        ppdm.spiral_key(["a", "b"], bounds={"a": (0, 3), "b": (0, 3)}, secret=ppdm.Secret.generate())
        for _ in range(4)
    ]
    live = ppdm.apply_spiral_key(df.lazy(), keys[0])
    pickled = pickle.dumps(live)
    for key in keys[1:]:
        pickle.loads(pickle.dumps(ppdm.apply_spiral_key(df.lazy(), key)))
    assert_frame_equal(live.collect(), ppdm.apply_spiral_key(df, keys[0]))
    with pytest.raises(Exception, match="not known in this process"):  # dropped: the oldest pickled
        pickle.loads(pickled).collect()
