"""Attacks on string privacy-unit keys (an e-mail, an id written as text).

A string key became its row key through FNV-1a 64, a public function: anyone could compute
a victim's 64-bit key from their e-mail.  Released under a table keyed by integers (the
same survey keyed by a numeric id, or a row the attacker adds to another table of the same
pipeline), the integer id equal to FNV-1a(victim's e-mail) drew the victim's coins: on the
earlier version the two releases of 2,000 victims' values agreed in **100%** of rows, where
independent coins at p = 0.6 agree in 52%.  A participant choosing their own text id could
likewise search (~2^32 steps, meet in the middle) for one with a neighbour's 64 bits.

String keys are now hashed under the secret (AES-CBC-MAC with the length first,
:mod:`polars_ppdm.kernels.string_keys`); the tests check the construction against a
reference written from its docstring, that no one without the secret gets the keys, and
that every engine uses it.
"""

from __future__ import annotations

import math

import duckdb
import numpy as np
import polars as pl
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

import polars_ppdm as ppdm
from polars_ppdm._encoding import row_keys
from polars_ppdm.kernels import _native
from polars_ppdm.kernels.prf import stream_id
from polars_ppdm.kernels.string_keys import keyed_string_keys

SECRET = ppdm.Secret.for_tests(23)
HEX = "00112233445566778899aabbccddeeff"


def _fnv1a_64(text: str) -> int:
    """The public hash string keys went through before."""
    h = 0xCBF29CE484222325
    for byte in text.encode():
        h = ((h ^ byte) * 0x100000001B3) % 2**64
    return h


def _reference_key(secret: bytes, text: bytes) -> int:
    """CBC-MAC as the module docstring writes it, one string at a time."""
    aes = Cipher(algorithms.AES(secret), modes.ECB()).encryptor()
    state = aes.update(stream_id("row_key/string").to_bytes(8, "little") + len(text).to_bytes(8, "little"))
    for at in range(0, len(text), 16):
        chunk = text[at : at + 16].ljust(16, b"\0")
        state = aes.update(bytes(a ^ b for a, b in zip(state, chunk, strict=True)))
    return int.from_bytes(state[:8], "little")


def _arrow_layout(texts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.cumsum([0] + [len(t) for t in texts]).astype(np.int64)
    return offsets, np.frombuffer(b"".join(texts), dtype=np.uint8)


# Lengths around every 16-byte boundary, multi-byte UTF-8, NUL bytes, the empty string.
TEXTS = [b"", b"\0", b"a", b"a\0", b"\0" * 16, b"\0" * 17, "é".encode(), "日本".encode()] + [
    bytes((7 * i + j) % 256 for j in range(n))
    for i, n in enumerate([1, 8, 15, 16, 17, 31, 32, 33, 47, 48, 49, 200])
]


@pytest.mark.parametrize("compiled", [True, False])
def test_keys_are_the_cbc_mac_of_the_docstring(compiled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if compiled and _native.NATIVE is None:
        pytest.skip("the compiled kernels are not built here")
    if not compiled:
        monkeypatch.setattr(_native, "NATIVE", None)
    for secret in (bytes(range(16)), bytes(range(32))):
        got = keyed_string_keys(secret, *_arrow_layout(TEXTS))
        assert got.tolist() == [_reference_key(secret, t) for t in TEXTS]
        assert len(set(got.tolist())) == len(set(TEXTS))  # lengths and zero padding kept apart


def test_keys_of_a_slice_and_of_a_buffer_with_no_room_after_it() -> None:
    offsets, data = _arrow_layout(TEXTS)
    whole = keyed_string_keys(HEX.encode()[:16], offsets, data)
    # The buffer ends exactly at the last string (no padding): the last chunk reads no further.
    tight = np.frombuffer(bytes(data), dtype=np.uint8)
    assert keyed_string_keys(HEX.encode()[:16], offsets, tight).tolist() == whole.tolist()
    # A sliced, chunked Series (offsets not from 0) gives each string its own key.
    series = pl.concat([pl.Series("k", [t.decode("latin-1") for t in TEXTS[:9]]), pl.Series("k", ["x", "y"])])
    series = series.slice(2, 9)
    expected = [_reference_key(SECRET.key, t.encode()) for t in series.to_list()]
    assert row_keys(series, secret=SECRET.key, func="test").tolist() == expected


@pytest.mark.parametrize("long_rows", [1, 8, 9, 40])
def test_long_keys_among_short_ones_and_tiny_buffers(long_rows: int) -> None:
    """A few long keys finish in one CBC call each, many advance together: both paths give
    the reference keys, as do buffers shorter than one chunk (every row near the end)."""
    rng = np.random.default_rng(long_rows)
    texts = [rng.bytes(int(n)) for n in rng.integers(0, 40, 300)]
    for at in rng.choice(len(texts), long_rows, replace=False).tolist():
        texts[at] = rng.bytes(int(rng.integers(100, 5_000)))
    secret = bytes(range(16))
    offsets, data = _arrow_layout(texts)
    assert keyed_string_keys(secret, offsets, data).tolist() == [_reference_key(secret, t) for t in texts]
    for tiny in ([b"abc"], [b"a", b"", b"bcdefgh"], [b"0123456789abcde"], [b""]):
        got = keyed_string_keys(secret, *_arrow_layout(tiny))
        assert got.tolist() == [_reference_key(secret, t) for t in tiny], tiny


def test_a_buffer_with_no_room_after_it_is_not_copied() -> None:
    """Polars hands over buffers that end at the last string: the kernel keeps its memory
    to a chunk's temporaries (it copied the whole buffer, 3x the key bytes at peak)."""
    import tracemalloc

    texts = [bytes([i % 251]) * 160 for i in range(100_000)]  # 16 MB of keys, tight buffer
    offsets, data = _arrow_layout(texts)
    tracemalloc.start()
    try:
        keys = keyed_string_keys(SECRET.key, offsets, data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < data.nbytes / 2, f"peak {peak:,} bytes for {data.nbytes:,} bytes of keys"
    assert keys[-1] == _reference_key(SECRET.key, texts[-1])


def test_no_one_without_the_secret_gets_the_keys() -> None:
    emails = [f"person{i}@example.org" for i in range(10_000)]
    keys = pl.Series("email", emails)
    first = row_keys(keys, secret=SECRET.key, func="test")
    again = row_keys(keys, secret=SECRET.key, func="test")
    other = row_keys(keys, secret=ppdm.Secret.for_tests(24).key, func="test")
    assert (first == again).all()  # stable under one secret: a re-run keeps a unit's coins
    assert not (first == other).any()  # another secret: unrelated keys
    public = np.array([_fnv1a_64(e) for e in emails], dtype=np.uint64)
    assert not (first == public).any()
    assert len(np.unique(first)) == len(emails)
    # The categorical and enum faces of the same texts are the same units.
    assert (row_keys(keys.cast(pl.Categorical), secret=SECRET.key, func="test") == first).all()
    enum = pl.Enum(sorted(set(emails)))
    assert (row_keys(keys.cast(enum), secret=SECRET.key, func="test") == first).all()


def test_an_integer_id_cannot_borrow_a_text_units_coins() -> None:
    """The attack of the module docstring: the victims' public hashes as integer ids."""
    n, p = 2_000, 0.6
    rng = np.random.default_rng(5)
    smoker = rng.random(n) < 0.3
    emails = [f"victim{i}@example.org" for i in range(n)]
    by_email = pl.DataFrame({"email": emails, "smoker": smoker})
    by_id = pl.DataFrame({"id": np.array([_fnv1a_64(e) for e in emails], dtype=np.uint64), "smoker": smoker})
    a = ppdm.rr_disguise(by_email, "smoker", p=p, secret=SECRET, key="email")["smoker"].to_numpy()
    b = ppdm.rr_disguise(by_id, "smoker", p=p, secret=SECRET, key="id")["smoker"].to_numpy()
    agree, independent = float((a == b).mean()), p**2 + (1 - p) ** 2
    assert agree <= independent + 5 * math.sqrt(independent * (1 - independent) / n), agree


def test_sql_hashes_text_keys_under_the_secret_as_polars_does() -> None:
    con = ppdm.duckdb.register(duckdb.connect())
    frame = pl.DataFrame({"email": ["a@x", "b@x", None, "é@x"]})
    con.register("t", frame.to_arrow())
    sql = con.sql(f"SELECT ppdm_key(email, '{HEX}') AS k FROM t").pl()["k"]
    secret = ppdm.Secret.from_hex(HEX).key
    polars = row_keys(frame["email"].fill_null(""), secret=secret, func="test").view(np.int64)
    assert sql.to_list() == [int(polars[0]), int(polars[1]), None, int(polars[3])]
    named = con.sql(f"SELECT ppdm_key(key := email, secret := '{HEX}') AS k FROM t").pl()["k"]
    assert named.to_list() == sql.to_list()
    other = con.sql(f"SELECT ppdm_key(email, '{'f' * 32}') AS k FROM t").pl()["k"]
    assert all(x != y for x, y in zip(other.drop_nulls(), sql.drop_nulls(), strict=True))


def test_sql_refuses_a_text_key_without_the_secret() -> None:
    con = ppdm.duckdb.register(duckdb.connect())
    with pytest.raises(duckdb.InvalidInputException) as info:
        con.sql("SELECT ppdm_key(email) FROM (VALUES ('a@x')) t(email)").fetchall()
    message = str(info.value)
    assert "ppdm_key(text, secret) needs the secret of the draws the key selects" in message, message
    assert "a@x" not in message
