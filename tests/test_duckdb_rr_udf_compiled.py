"""The compiled ``ppdm_rr_disguise`` UDF (``udf_rr_binary``, one call per DuckDB vector,
issue 30) gives the pure path's bits on every layout it serves, hands back to the Python
path what it does not serve, names the faulty parameter as the Python path does, and
never serves a stale secret from its plan cache."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest

import polars_ppdm as ppdm
from polars_ppdm.duckdb import _shared, scalar
from polars_ppdm.kernels import _native

NATIVE = _native.load()
pytestmark = pytest.mark.skipif(
    NATIVE is None, reason="the compiled kernels are not installed (or PPDM_NATIVE=0)"
)

SECRET = "00112233445566778899aabbccddeeff"


def _args(x, key, *, p=0.7, epsilon=None, secret=SECRET, stream="x", chunked=False, text=None):
    n, text = len(x), text or pa.string()
    constants = (
        pa.array([p] * n, type=pa.float64()),
        pa.array([epsilon] * n, type=pa.float64()),
        pa.array([secret] * n, type=text),
        pa.array([stream] * n, type=text),
    )
    args = (x, *constants[:3], key, constants[3])
    return tuple(pa.chunked_array([a]) for a in args) if chunked else args


def _both(monkeypatch, args):
    """The UDF on the compiled path, then on the pure path (``PPDM_NATIVE=0``)."""
    monkeypatch.setattr(_native, "NATIVE", NATIVE)
    fast = scalar._rr_binary_udf(*args)
    monkeypatch.setattr(_native, "NATIVE", None)
    pure = scalar._rr_binary_udf(*args)
    monkeypatch.setattr(_native, "NATIVE", NATIVE)
    return fast, pure


def _no_python_path(monkeypatch):
    def refuse(*args):
        msg = "the Python path was taken"
        raise AssertionError(msg)

    monkeypatch.setattr(scalar, "_disguise_arrow", refuse)


def _layout(case: str, n: int = 3001):
    rng = np.random.default_rng(11)
    mask = rng.random(n) < 0.1 if "nulls" in case else None
    x = pa.array(rng.random(n) < 0.4, mask=mask)
    key = pa.array(rng.integers(-(2**62), 2**62, n), type=pa.int64())
    start = {"offset_8": 8, "offset_16": 16, "offset_5": 5, "offset_13_nulls": 13}.get(case)
    if start is not None:
        x, key = x.slice(start, n - 64), key.slice(start, n - 64)
    if case == "unaligned_keys":
        # Keys at an odd address (a caller's buffer; DuckDB's are aligned): read, not refused.
        raw = pa.py_buffer(b"\0" + key.buffers()[1].to_pybytes())
        key = pa.Array.from_buffers(pa.int64(), n, [None, raw.slice(1)])
    return x, key


@pytest.mark.parametrize(
    "case", ["plain", "nulls", "offset_8", "offset_16", "offset_5", "offset_13_nulls", "unaligned_keys"]
)
@pytest.mark.parametrize("chunked", [False, True])
def test_the_compiled_udf_gives_the_pure_bits(monkeypatch, case, chunked):
    x, key = _layout(case)
    args = _args(x, key, chunked=chunked)
    fast, pure = _both(monkeypatch, args)
    assert fast.equals(pure)
    assert fast.null_count == pure.null_count == x.null_count
    _no_python_path(monkeypatch)
    assert scalar._rr_binary_udf(*args).equals(pure)  # served by the compiled call itself


@pytest.mark.parametrize("epsilon", [None, 0.5])
@pytest.mark.parametrize("text", [pa.string(), pa.large_string()])
def test_epsilon_and_large_strings_take_the_compiled_path(monkeypatch, epsilon, text):
    x, key = _layout("nulls", 2048)
    args = _args(x, key, p=None if epsilon else 0.8, epsilon=epsilon, text=text)
    fast, pure = _both(monkeypatch, args)
    assert fast.equals(pure)
    _no_python_path(monkeypatch)
    assert scalar._rr_binary_udf(*args).equals(pure)


@pytest.mark.parametrize("case", ["two_chunks", "null_key_of_null_value", "empty", "keep_all"])
def test_what_the_compiled_call_does_not_serve_takes_the_python_path(monkeypatch, case):
    """Several chunks, a NULL key (allowed under a NULL value), an empty vector and p = 1
    (nothing to draw) go to the Python path: the same output as the pure path."""
    x, key = _layout("nulls", 2000)
    p = 1.0 if case == "keep_all" else 0.7
    if case == "two_chunks":
        x, key = pa.chunked_array([x[:900], x[900:]]), pa.chunked_array([key[:900], key[900:]])
    if case == "null_key_of_null_value":
        key = pa.array(key.to_numpy(), mask=x.is_null().to_numpy(zero_copy_only=False))
    if case == "empty":
        x, key = x[:0], key[:0]
    args = _args(x, key, p=p)
    assert NATIVE.udf_rr_binary(*args, scalar._rr_plan, pa.allocate_buffer(2 * len(args[0]))) is None
    fast, pure = _both(monkeypatch, args)
    assert fast.equals(pure)
    if case == "keep_all":
        assert fast.equals(x)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"p": 1.5}, r"'p'"),
        ({"p": None}, r"'p' or 'epsilon'|p.*epsilon"),
        ({"stream": None}, r"'stream' argument of ppdm_rr_disguise is required"),
        ({"secret": None}, r"'secret' argument of ppdm_rr_disguise must be one non-null constant"),
        ({"secret": "env:PPDM_TEST_UNSET_VARIABLE"}, r"PPDM_TEST_UNSET_VARIABLE"),
    ],
)
def test_errors_name_the_parameter_on_both_paths(monkeypatch, change, message):
    monkeypatch.delenv("PPDM_TEST_UNSET_VARIABLE", raising=False)
    x, key = _layout("plain", 2048)
    args = _args(x, key, **change)
    for native in (NATIVE, None):
        monkeypatch.setattr(_native, "NATIVE", native)
        for _ in range(2):  # an error is not cached: raised again, not served
            with pytest.raises((ppdm.InvalidParameterError, ppdm.SecretError), match=message):
                scalar._rr_binary_udf(*args)


@pytest.mark.parametrize(
    ("position", "values"), [(1, [0.7, 0.7, 0.6]), (5, ["x", "x", "y"]), (3, ["ab", "a", "bab"])]
)
def test_a_constant_that_varies_is_refused_by_name(position, values):
    """A constant argument that varies within the vector (a string splitting the same bytes
    elsewhere too) is no constant: the compiled call hands it to the Python check."""
    n = 3
    x, key = pa.array([True, False, True]), pa.array([1, 2, 3], type=pa.int64())
    args = list(_args(x, key))
    args[position] = pa.array(values)
    assert NATIVE.udf_rr_binary(*args, scalar._rr_plan, pa.allocate_buffer(2 * len(args[0]))) is None
    name = {1: "p", 3: "secret", 5: "stream"}[position]
    with pytest.raises(ppdm.InvalidParameterError, match=f"'{name}' argument.*one non-null constant"):
        scalar._rr_binary_udf(*args)
    assert len(x) == n


def test_a_changed_variable_is_never_served_from_the_plan_cache(monkeypatch):
    """'env:NAME' is resolved from the variable's value on every vector: after the variable
    changes, the next vector draws with the new secret (the pure path's bits), and back."""
    x, key = _layout("plain", 2048)
    args = _args(x, key, secret="env:PPDM_TEST_ROTATED")
    outputs = []
    for value in ("11" * 16, "22" * 16, "11" * 16):
        monkeypatch.setenv("PPDM_TEST_ROTATED", value)
        fast, pure = _both(monkeypatch, args)
        assert fast.equals(pure)
        expected = scalar._rr_binary_udf(*_args(x, key, secret=value))
        assert fast.equals(expected)
        outputs.append(fast)
    assert not outputs[0].equals(outputs[1])
    assert outputs[0].equals(outputs[2])


def test_the_plan_cache_is_keyed_by_values_and_bounded():
    """The plan holds the resolved key bytes; its cache is keyed by the values and the
    state of what the secret names (never by the text alone: 'env:NAME' is tested above)
    and keeps a handful of plans."""
    scalar._rr_plan_of.cache_clear()
    first = scalar._rr_plan(0.7, None, "11" * 16, "x")
    assert first is not None and first[0] == bytes.fromhex("11" * 16)
    assert scalar._rr_plan(0.7, None, " " + "11" * 16 + " ", "x") == first  # the text stripped
    assert scalar._rr_plan(0.7, None, "22" * 16, "x")[0] == bytes.fromhex("22" * 16)
    assert scalar._rr_plan(0.7, None, "11" * 16, "y")[1] != first[1]
    assert scalar._rr_plan(1.0, None, "11" * 16, "x") is None  # p = 1: nothing to draw
    assert scalar._rr_plan_of.cache_info().maxsize <= 8
    for seed in range(20):
        scalar._rr_plan(0.7, None, f"{seed:032x}", "x")
    assert scalar._rr_plan_of.cache_info().currsize <= 8


def test_the_sql_udf_follows_a_rotated_variable_between_queries(con, monkeypatch):
    con.execute("CREATE TABLE r AS SELECT i AS id, i % 3 = 0 AS x FROM range(5000) r(i)")
    sql = "SELECT ppdm_rr_disguise(x, 0.6, 'env:PPDM_TEST_SQL_ROTATED', id, 'x') AS y FROM r ORDER BY id"
    literal = "SELECT ppdm_rr_disguise(x, 0.6, '{}', id, 'x') AS y FROM r ORDER BY id"
    got = []
    for value in ("33" * 16, "44" * 16):
        monkeypatch.setenv("PPDM_TEST_SQL_ROTATED", value)
        got.append(con.execute(sql).fetchall())
        assert got[-1] == con.execute(literal.format(value)).fetchall()
    assert got[0] != got[1]
    _shared._resolved_secret.cache_clear()


def test_an_output_buffer_too_small_is_refused_by_name():
    x, key = _layout("plain", 2048)
    with pytest.raises(ValueError, match="'out' must hold 512 bytes"):
        NATIVE.udf_rr_binary(*_args(x, key), scalar._rr_plan, pa.allocate_buffer(256))


def _unaligned_strings(values: list[str]) -> pa.Array:
    """A string array whose offsets sit at an odd address (a caller's buffers)."""
    plain = pa.array(values)
    _, offsets, data = plain.buffers()
    shifted = pa.py_buffer(b"\0" + offsets.to_pybytes()).slice(1)
    return pa.Array.from_buffers(pa.string(), len(values), [None, shifted, data])


@pytest.mark.parametrize("layout", ["sliced", "unaligned_offsets"])
def test_string_constants_in_any_layout_are_read(monkeypatch, layout):
    x, key = _layout("plain", 2048)
    args = list(_args(x, key))
    for position, value in ((3, SECRET), (5, "x")):
        if layout == "sliced":
            args[position] = pa.array(["other"] + [value] * 2048).slice(1)
        else:
            args[position] = _unaligned_strings([value] * 2048)
    assert args[5].buffers()[1].address % 4 != 0 or layout == "sliced"
    fast, pure = _both(monkeypatch, tuple(args))
    assert fast.equals(pure)
    _no_python_path(monkeypatch)
    assert scalar._rr_binary_udf(*args).equals(pure)


@pytest.mark.parametrize("unaligned", [False, True])
@pytest.mark.parametrize("last", ["y", "xx", ""])
def test_a_string_that_changes_in_the_last_row_is_refused(unaligned, last):
    x, key = _layout("plain", 2048)
    values = ["x"] * 2047 + [last]
    args = list(_args(x, key))
    args[5] = _unaligned_strings(values) if unaligned else pa.array(values)
    with pytest.raises(ppdm.InvalidParameterError, match=r"'stream' argument.*one non-null constant"):
        scalar._rr_binary_udf(*args)


def test_a_rewritten_secret_file_is_never_served_from_the_plan_cache(tmp_path, monkeypatch):
    """'file:PATH': the file's identity, size and times key the plan, so new content is
    read (and checked) again."""
    path = tmp_path / "secret.hex"
    x, key = _layout("plain", 2048)
    args = _args(x, key, secret=f"file:{path}")
    outputs = []
    for value in ("55" * 16, "66" * 16):
        path.write_text(value + "\n")
        path.chmod(0o600)
        os.utime(path, ns=(len(outputs) * 10**9, len(outputs) * 10**9))  # a new mtime even within a tick
        fast, pure = _both(monkeypatch, args)
        assert fast.equals(pure)
        assert fast.equals(scalar._rr_binary_udf(*_args(x, key, secret=value)))
        outputs.append(fast)
    assert not outputs[0].equals(outputs[1])


@pytest.mark.parametrize("case", ["nulls", "offset_13_nulls"])
def test_the_slots_under_nulls_hold_zeros(monkeypatch, case):
    """The value bits under a NULL are 0, not the hidden value's coin (an Arrow result
    carries them)."""
    x, key = _layout(case)
    _no_python_path(monkeypatch)
    out = scalar._rr_binary_udf(*_args(x, key))
    assert out.offset == 0 and out.null_count == x.null_count > 0
    bits = np.unpackbits(np.frombuffer(out.buffers()[1], np.uint8), bitorder="little")[: len(out)]
    hidden = ~np.asarray(out.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    assert not bits[hidden].any()
