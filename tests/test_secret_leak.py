"""No error, warning, repr or log line ever holds a secret (issue 14, finding 1).

Table-driven: every error path we can reach, in Python and in DuckDB, is driven with a
known secret given in each accepted form, and every message it produces (the exception
with its chain and traceback, warnings, log records) is searched for the secret in every
encoding: hex (lower and upper), the decimal digits, the raw key bytes' repr, base64, the
value of the 'env:' variable, and the key derived from each of them.  The search is for
any 12-character window of each encoding, so a truncated echo (DuckDB shortens the SQL
text it quotes) is caught too.  Every case must raise: a case that stops raising (and
so checks nothing) fails.

To extend: add a row to ``PYTHON_CASES`` (a function of the secret that must raise), to
``UDF_CASES`` / ``MACRO_CASES`` (SQL with ``{s}`` where the secret goes), or a form to
``PY_FORMS`` / ``SQL_FORMS``.
"""

from __future__ import annotations

import base64
import copy
import io
import logging
import pickle
import subprocess
import sys
import traceback
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pytest
from _helpers import refusal_in_another_process

import polars_ppdm as ppdm
from polars_ppdm.exceptions import PPDMError, SecretError
from polars_ppdm.secret import Secret, resolve_secret

# Distinctive values: no 12-character window of them occurs in any message by chance.
HEX = "3f9a0c7e51d2b86f4a1e9c03d7b5f28e6c4a19d0e7f3b25c8a6d1e4f09b7c3a5"
HEX128 = "9d41c7a2e05b83f6d17a4c9e2b60f8d3"
DECIMAL = "918273645546372819"
ENV_NAME = "PPDM_LEAK_TEST_SECRET"
ENV_HEX = "e8b2d07c4f91a36e5d0b8c27f4a9163e"
RAW = bytes.fromhex("a7c3e91f5b2d86403fe1c9b75a08d2e6")
WINDOW = 12


def _encodings(raw: bytes) -> list[str]:
    return [
        raw.hex(),
        raw.hex().upper(),
        repr(raw),
        str(list(raw)),
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode(),
        base64.b32encode(raw).decode(),
    ]


def needles_for(text: str | None, raw_given: bytes | None) -> list[str]:
    """Every encoding of a secret given as ``text`` (or raw bytes), and of the key it resolves to."""
    found: list[str] = []
    if text is not None and text.startswith("env:"):
        found += [ENV_HEX, ENV_HEX.upper()]  # the variable's name is no secret, its value is
    elif text is not None:
        found += [text, text.upper(), text.lower()]
        if text.isdecimal():
            found.append(f"{int(text):,}")
    if raw_given is not None:
        found += _encodings(raw_given)
    key = (
        Secret.from_hex(ENV_HEX) if text and text.startswith("env:") else resolve_secret(text or raw_given)
    ).key
    found += _encodings(key)
    return [n for n in found if len(n) >= WINDOW]


def leaked(haystack: str, needles: Iterable[str]) -> list[str]:
    """The windows of any needle found in ``haystack``."""
    return [
        needle[i : i + WINDOW]
        for needle in needles
        for i in range(len(needle) - WINDOW + 1)
        if needle[i : i + WINDOW] in haystack
    ]


def exception_text(exc: BaseException) -> str:
    """The exception as anything could print or log it: message, repr, args, notes, chain."""
    parts = ["".join(traceback.format_exception(exc)), repr(exc), str(exc), repr(exc.args)]
    parts += getattr(exc, "__notes__", [])
    seen = exc.__cause__ or exc.__context__
    while seen is not None:
        parts += [repr(seen), str(seen)]
        seen = seen.__cause__ or seen.__context__
    return "\n".join(parts)


def run_and_collect(
    action: Callable[[], Any], caplog: pytest.LogCaptureFixture
) -> tuple[BaseException | None, str]:
    """Run ``action``; return what it raised and every message it produced."""
    caplog.clear()
    raised: BaseException | None = None
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.DEBUG):
        warnings.simplefilter("always")
        try:
            action()
        except Exception as exc:
            raised = exc
    text = [exception_text(raised)] if raised is not None else []
    text += [f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})" for w in caught]
    text += [caplog.text] + [r.getMessage() for r in caplog.records]
    return raised, "\n".join(text)


# -- Python -----------------------------------------------------------------------------


@dataclass(frozen=True)
class PyForm:
    name: str
    value: Callable[[], Any]  # the secret as the user passes it
    text: str | None
    raw: bytes | None


PY_FORMS = [
    PyForm("hex", lambda: HEX, HEX, None),
    PyForm("hex-upper", lambda: HEX.upper(), HEX.upper(), None),
    PyForm("hex-128", lambda: HEX128, HEX128, None),
    PyForm("decimal-string", lambda: DECIMAL, DECIMAL, None),
    PyForm("int", lambda: int(DECIMAL), DECIMAL, None),
    PyForm("env", lambda: f"env:{ENV_NAME}", f"env:{ENV_NAME}", None),
    PyForm("bytes", lambda: RAW, None, RAW),
    PyForm("Secret", lambda: Secret(RAW), None, RAW),
]


@pytest.fixture(autouse=True)
def _env_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_NAME, ENV_HEX)


def frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "x": [True, False, True, None, False, True],
            "c": ["a", "b", "a", "b", "a", "b"],
            "v": [1.0, 2.0, 3.5, None, 5.0, 8.0],
            "w": [1.0, float("nan"), 2.0, 3.0, 4.0, 5.0],
            "k": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
            "id": [1, 2, None, 4, 5, 6],  # null where x is not: refused as a key
            "rid": [1, 2, 3, 4, 5, 6],
        }
    )


BOUNDS = {"v": (0.0, 10.0), "rid": (0.0, 10.0)}

# name -> action(secret); every action must raise.  Bad parameters beside a good secret.
PYTHON_CASES: dict[str, Callable[[Any], Any]] = {
    "rr_disguise p > 1": lambda s: ppdm.rr_disguise(frame(), "x", p=1.5, secret=s, key="rid"),
    "rr_disguise p = 0.5": lambda s: ppdm.rr_disguise(frame(), "x", p=0.5, secret=s, key="rid"),
    "rr_disguise epsilon = 0": lambda s: ppdm.rr_disguise(frame(), "x", epsilon=0.0, secret=s, key="rid"),
    "rr_disguise epsilon < 0": lambda s: ppdm.rr_disguise(frame(), "x", epsilon=-1.0, secret=s, key="rid"),
    "rr_disguise p and epsilon": lambda s: ppdm.rr_disguise(frame(), "x", p=0.8, epsilon=1.0, secret=s),
    "rr_disguise p string": lambda s: ppdm.rr_disguise(frame(), "x", p="0.8", secret=s, key="rid"),
    "rr_disguise missing column": lambda s: ppdm.rr_disguise(frame(), "nosuch", p=0.8, secret=s, key="rid"),
    "rr_disguise missing key": lambda s: ppdm.rr_disguise(frame(), "x", p=0.8, secret=s, key="nokey"),
    "rr_disguise null key": lambda s: ppdm.rr_disguise(frame(), "x", p=0.8, secret=s, key="id"),
    "rr_disguise float column": lambda s: ppdm.rr_disguise(frame(), "v", p=0.8, secret=s, key="rid"),
    "rr_disguise outside categories": lambda s: ppdm.rr_disguise(
        frame(), "c", p=0.8, secret=s, key="rid", categories=["a", "z"]
    ),
    "rr_disguise bad mode": lambda s: ppdm.rr_disguise(frame(), "x", p=0.8, secret=s, mode="bogus"),
    "rr_disguise_expr p > 1": lambda s: frame().select(
        pl.col("x").ppdm.rr_disguise(p=2.0, secret=s, key="rid")
    ),
    "rr_disguise_expr epsilon < 0": lambda s: frame().select(
        ppdm.rr_disguise_expr(pl.col("x"), epsilon=-2.0, secret=s, key="rid")
    ),
    "rr_disguise_expr lazy null key": lambda s: (
        frame().lazy().select(pl.col("x").ppdm.rr_disguise(p=0.8, secret=s, key="id")).collect()
    ),
    "namespace rr_disguise p > 1": lambda s: frame().ppdm.rr_disguise("x", p=1.5, secret=s),
    "add_noise scale < 0": lambda s: ppdm.add_noise(frame(), "v", scale=-1.0, secret=s, key="rid"),
    "add_noise bad dist": lambda s: ppdm.add_noise(frame(), "v", dist="cauchy", scale=1.0, secret=s),
    "add_noise string column": lambda s: ppdm.add_noise(frame(), "c", scale=1.0, secret=s),
    "add_noise NaN": lambda s: ppdm.add_noise(frame(), "w", scale=1.0, secret=s),
    "add_noise missing column": lambda s: ppdm.add_noise(frame(), "nosuch", scale=1.0, secret=s),
    "add_noise_expr scale 0": lambda s: frame().select(ppdm.add_noise_expr(pl.col("v"), scale=0.0, secret=s)),
    "ecdf_resample bins 1": lambda s: ppdm.ecdf_resample(frame(), "v", bins=1, secret=s),
    "ecdf_resample bins 1e7 + 1": lambda s: ppdm.ecdf_resample(frame(), "v", bins=10_000_001, secret=s),
    "ecdf_resample string column": lambda s: ppdm.ecdf_resample(frame(), "c", secret=s),
    "ecdf_resample constant": lambda s: ppdm.ecdf_resample(frame(), "k", secret=s),
    "ecdf_resample NaN": lambda s: ppdm.ecdf_resample(frame(), "w", secret=s),
    "ecdf_resample missing key": lambda s: ppdm.ecdf_resample(frame(), "v", secret=s, key="nokey"),
    "ecdf_resample bad link": lambda s: ppdm.ecdf_resample(frame(), "v", secret=s, link="bogus"),
    "dp_histogram epsilon 0": lambda s: ppdm.dp_histogram(frame(), "v", bounds=BOUNDS, epsilon=0.0, secret=s),
    "dp_histogram nulls": lambda s: ppdm.dp_histogram(frame(), "v", bounds=BOUNDS, epsilon=1.0, secret=s),
    "dp_histogram bins 0": lambda s: ppdm.dp_histogram(
        frame(), "rid", bounds=BOUNDS, bins=0, epsilon=1.0, secret=s
    ),
    "dp_histogram data bounds (warns)": lambda s: ppdm.dp_histogram(
        frame(), "w", bounds="data", epsilon=1.0, secret=s
    ),
    "dp_kmeans k 0": lambda s: ppdm.dp_kmeans(frame(), ["rid"], k=0, epsilon=1.0, bounds=BOUNDS, secret=s),
    "dp_kmeans epsilon < 0": lambda s: ppdm.dp_kmeans(
        frame(), ["rid"], k=2, epsilon=-1.0, bounds=BOUNDS, secret=s
    ),
    "dp_quadtree epsilon 0": lambda s: ppdm.dp_quadtree(
        frame(), ["rid"], epsilon=0.0, bounds=BOUNDS, secret=s
    ),
    "spiral rounds 0": lambda s: ppdm.spiral(frame(), ["v", "rid"], rounds=0, bounds=BOUNDS, secret=s),
    "spiral missing column": lambda s: ppdm.spiral(frame(), ["nosuch", "rid"], bounds=BOUNDS, secret=s),
    "spiral data bounds NaN (warns)": lambda s: ppdm.spiral(frame(), ["w", "rid"], bounds="data", secret=s),
    "spiral_key bad bounds": lambda s: ppdm.spiral_key(
        ["a", "b"], bounds={"a": (1, 0), "b": (0, 1)}, secret=s
    ),
    "audit compare_to_additive_noise snr < 0": lambda s: ppdm.audit.compare_to_additive_noise(
        frame().drop_nulls(), frame().drop_nulls(), "rid", snr=[-1.0], secret=s
    ),
    "rr_disguise_batches p > 1": lambda s: ppdm.duckdb.rr_disguise_batches(
        duckdb.connect(), "SELECT true AS x", "x", p=1.5, secret=s
    ),
    "rr_disguise_batches batch_rows 0": lambda s: ppdm.duckdb.rr_disguise_batches(
        duckdb.connect(), "SELECT true AS x", "x", p=0.8, secret=s, batch_rows=0
    ),
}

RAISES = (PPDMError, ValueError, TypeError, pl.exceptions.PolarsError, duckdb.Error)


@pytest.mark.parametrize("form", PY_FORMS, ids=lambda f: f.name)
@pytest.mark.parametrize("case", list(PYTHON_CASES), ids=str)
def test_python_errors_never_hold_the_secret(case, form, caplog):
    raised, text = run_and_collect(lambda: PYTHON_CASES[case](form.value()), caplog)
    assert raised is not None, f"{case}: did not raise, so it checks nothing"
    assert isinstance(raised, RAISES), f"{case}: {type(raised).__name__}: {raised}"
    assert not leaked(text, needles_for(form.text, form.raw)), text


# Bad secrets that are themselves secret-like: the refusal must not echo them.
BAD_SECRETS: dict[str, tuple[Any, list[str]]] = {
    "63 hex digits": (HEX[:-1], [HEX[:-1]]),
    "hex with a stray letter": (HEX[:-1] + "g", [HEX[:-1]]),
    "hex with 0x": ("0x" + HEX128, [HEX128]),
    "31 bytes": ((RAW * 2)[:31], _encodings(RAW)),
    "15 bytes": (RAW[:15], _encodings(RAW[:15])[:2]),
    "digits with a superscript": (DECIMAL + "\u00b2", [DECIMAL]),
    "5000 digits": ("7" * 5000, ["7" * WINDOW]),
    "env variable not hex": (f"env:{ENV_NAME}_BAD", ["not-hex-but-a-private-phrase"]),
    "env variable unset": ("env:PPDM_LEAK_SURELY_UNSET", []),
    "float": (1.5, []),
    "bool": (True, []),
    "bytearray of 3": (bytearray(b"\x91\x82\x73"), []),
}


@pytest.mark.parametrize("case", list(BAD_SECRETS), ids=str)
@pytest.mark.parametrize(
    "use",
    [
        lambda s: resolve_secret(s),
        lambda s: ppdm.rr_disguise(frame(), "x", p=0.8, secret=s),
        lambda s: frame().select(pl.col("v").ppdm.add_noise(scale=1.0, secret=s)),
    ],
    ids=["resolve_secret", "rr_disguise", "add_noise_expr"],
)
def test_a_bad_secret_is_refused_without_echo(case, use, caplog, monkeypatch):
    monkeypatch.setenv(f"{ENV_NAME}_BAD", "not-hex-but-a-private-phrase")
    value, needles = BAD_SECRETS[case]
    raised, text = run_and_collect(lambda: use(value), caplog)
    assert isinstance(raised, SecretError), f"{case}: {type(raised).__name__}: {raised}"
    assert not leaked(text, needles), text


@pytest.mark.parametrize("form", PY_FORMS, ids=lambda f: f.name)
def test_secret_repr_str_format_copy_pickle(form):
    secret = resolve_secret(form.value())
    needles = needles_for(form.text, form.raw)
    shown = [
        repr(secret),
        str(secret),
        f"{secret}",
        f"{secret!r}",
        format(secret, ""),
        repr([secret]),
        repr({"secret": secret}),
        repr(copy.copy(secret)),
        repr(copy.deepcopy(secret)),
        repr(pickle.loads(pickle.dumps(secret))),
        secret.fingerprint(),
        str(dir(secret)),
    ]
    assert not leaked("\n".join(shown), needles)
    with pytest.raises(TypeError) as info:
        format(secret, "x")
    assert not leaked(exception_text(info.value), needles)
    assert not hasattr(secret, "__dict__")  # no vars(secret) holding the key
    # A pickle carries the key (worker processes need it) and gives back the same secret.
    assert pickle.loads(pickle.dumps(secret)) == secret


@pytest.mark.parametrize("form", PY_FORMS, ids=lambda f: f.name)
def test_expression_reprs_and_plans_never_hold_the_secret(form):
    """Expressions and lazy plans are printed in errors and logs: the key stays in a closure."""
    s = form.value()
    lazy = frame().lazy()
    shown = [
        str(pl.col("x").ppdm.rr_disguise(p=0.8, secret=s, key="rid")),
        str(ppdm.add_noise_expr(pl.col("v"), scale=1.0, secret=s, key="rid")),
        ppdm.rr_disguise(
            lazy, ["x", "c"], p=0.8, secret=s, key="rid", categories={"x": None, "c": ["a", "b"]}
        ).explain(),
        ppdm.rr_disguise(lazy, ["x"], p=0.8, secret=s, key="rid", mode="whole_record").explain(),
        ppdm.add_noise(lazy, "v", scale=1.0, secret=s, key="rid").explain(),
        ppdm.ecdf_resample(lazy, "rid", bins=3, secret=s).explain(),
        repr(ppdm.spiral_key(["a", "b"], bounds={"a": (0, 1), "b": (0, 1)}, secret=s)),
    ]
    try:
        shown.append(ppdm.dp_histogram(lazy, "rid", bounds=BOUNDS, epsilon=1.0, secret=s).explain())
    except SecretError as refused:  # DP releases refuse a guessable secret, without showing it
        shown.append(str(refused))
    assert not leaked("\n".join(shown), needles_for(form.text, form.raw))


def _lazy_plans(secret: Secret) -> dict[str, pl.LazyFrame]:
    """Every route to a lazy result that holds a secret in a Python function of its plan
    (the compiled plugins hold a handle already: tests/test_plugins.py)."""
    lazy = frame().lazy().with_columns(pl.col("rid").cast(pl.String).alias("email"))
    return {
        "expression rr_disguise": lazy.with_columns(
            pl.col("x").ppdm.rr_disguise(p=0.8, secret=secret, key="rid")
        ),
        "expression add_noise": lazy.with_columns(
            pl.col("v").ppdm.add_noise(scale=1.0, secret=secret, key="rid")
        ),
        "rr_disguise, a string key": ppdm.rr_disguise(lazy, "x", p=0.8, secret=secret, key="email"),
        "rr_disguise, k-ary": ppdm.rr_disguise(
            lazy, "c", p=0.8, secret=secret, key="rid", categories=["a", "b"]
        ),
        "rr_disguise, whole record": ppdm.rr_disguise(
            lazy,
            ["x", "c"],
            p=0.8,
            secret=secret,
            key="rid",
            mode="whole_record",
            categories={"x": None, "c": ["a", "b"]},
        ),
        "add_noise, a string key": ppdm.add_noise(lazy, "v", scale=1.0, secret=secret, key="email"),
        "dp_group_by": ppdm.dp_group_by(
            lazy,
            "c",
            [ppdm.dp.count(), ppdm.dp.sum("rid", bounds=(0, 10))],
            privacy_unit="rid",
            epsilon=1.0,
            secret=secret,
            public_groups=pl.DataFrame({"c": ["a", "b"]}),
        ),
    }


@pytest.mark.parametrize("route", sorted(_lazy_plans(Secret.from_hex(HEX))))
def test_a_serialized_plan_never_holds_the_secret(route):
    """Attack review 63: LazyFrame.serialize() pickles a plan's Python functions, and those
    of the map_batches paths held the 32-byte key (found by trying every 32-byte window of
    the plan against published bits).  They hold a handle (polars_ppdm._held) instead; the
    same process reads the plan back and gets the same bits."""
    secret = Secret.from_hex(HEX)
    lazy = _lazy_plans(secret)[route]
    blob = lazy.serialize()
    key = bytes(secret.key)
    assert key not in blob and key[::-1] not in blob
    assert not leaked(blob.hex() + blob.decode("latin-1"), needles_for(HEX, None))
    again = pl.LazyFrame.deserialize(io.BytesIO(blob))
    assert again.collect().equals(lazy.collect())


def test_a_serialized_plan_does_not_run_in_another_process(tmp_path):
    disguised = frame().lazy().with_columns(pl.col("x").ppdm.rr_disguise(p=0.8, secret=HEX, key="rid"))
    printed = refusal_in_another_process(disguised.serialize(), tmp_path)
    assert "not known in this process" in printed and HEX not in printed


# -- DuckDB -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SqlForm:
    name: str
    sql: str  # the SQL expression of the secret, in the scope of table t
    text: str  # the secret as text
    table_macro_sql: str | None  # for table macros (no row scope); None: not applicable


SQL_FORMS = [
    SqlForm("hex literal", f"'{HEX}'", HEX, f"'{HEX}'"),
    SqlForm("hex upper literal", f"'{HEX.upper()}'", HEX.upper(), f"'{HEX.upper()}'"),
    SqlForm("decimal literal", f"'{DECIMAL}'", DECIMAL, f"'{DECIMAL}'"),
    SqlForm("env literal", f"'env:{ENV_NAME}'", f"env:{ENV_NAME}", f"'env:{ENV_NAME}'"),
    SqlForm("constant column", "s_const", HEX, "(SELECT s FROM vault)"),
    # Per row varying: the secret in some rows, another value in the others.
    SqlForm("varying column", "s_vary", HEX, None),
    SqlForm("varying with nulls", "s_holes", HEX, None),
]

# SQL with {s} for the secret, over table t; every one must raise.
UDF_CASES = [
    "ppdm_rr_disguise(x, 1.5, {s}, id, 'x')",
    "ppdm_rr_disguise(x, 0.8, {s}, id)",
    "ppdm_rr_disguise(x, 0.8, {s}, NULL::BIGINT, 'x')",
    "ppdm_rr_disguise(x, 0.8, {s}, id, 'x', epsilon := 1.0)",
    "ppdm_rr_disguise(x, epsilon := -1.0, secret := {s}, key := id, stream := 'x')",
    "ppdm_rr_disguise_k(c, ['a'], 0.8, {s}, id, 'c')",
    "ppdm_rr_disguise_k(c, ['a', 'z'], 0.8, {s}, id, 'c')",
    "ppdm_rr_disguise_k(c, ['a', 'b'], secret := {s}, key := id, stream := 'c')",
    "ppdm_rr_disguise_whole_record(x, []::VARCHAR[], 0.8, {s}, id)",
    "ppdm_rr_disguise_whole_record(x, ['x'], 0.5, {s}, id)",
    "ppdm_rr_disguise_whole_record(x, ['x'], 0.8, {s}, NULL::BIGINT)",
    "ppdm_add_noise(v, -1.0, {s}, id, 'v')",
    "ppdm_add_noise(v, 1.0, {s}, id, 'v', dist := 'cauchy')",
    "ppdm_add_noise(w, 1.0, {s}, id, 'w')",
    "ppdm_add_noise(v, 1.0, {s}, id)",
    "ppdm_uniform({s}, NULL, id)",
    "ppdm_uniform({s}, 's', if(id = 2, NULL, id))",
    "ppdm_prf_word({s}, NULL, id)",
    "ppdm_discrete_laplace({s}, 's', id, -1.0)",
    "ppdm_discrete_laplace({s}, 's', id, NULL)",
]

MACRO_CASES = [
    "FROM ppdm_ecdf_resample('t', 'nosuch', 'id', 5, {s})",
    "FROM ppdm_ecdf_resample('t', 'v', 'nokey', 5, {s})",
    "FROM ppdm_ecdf_resample('t', 'v', 'id', 1, {s})",
    "FROM ppdm_ecdf_resample('t', 'v', 'id', 10000001, {s})",
    "FROM ppdm_ecdf_resample('t', 'v', 'id', 'many', {s})",
    "FROM ppdm_ecdf_resample('t', 'c', 'id', 5, {s})",
    "FROM ppdm_ecdf_resample('t', 'k', 'id', 5, {s})",
    "FROM ppdm_ecdf_resample('t', 'w', 'id', 5, {s})",
    "FROM ppdm_ecdf_resample('t', NULL, 'id', 5, {s})",
    "FROM ppdm_dp_histogram('t', 'nosuch', 0, 10, 5, 1.0, {s})",
    "FROM ppdm_dp_histogram('t', 'v', 0, 10, 5, 0, {s})",
    "FROM ppdm_dp_histogram('t', 'v', 10, 0, 5, 1.0, {s})",
    "FROM ppdm_dp_histogram('t', 'v', 0, 10, 50000001, 1.0, {s})",
    "FROM ppdm_dp_histogram('t', 'v', 0, 10, NULL, 1.0, {s})",
    "FROM ppdm_dp_histogram('t', 'holes', 0, 10, 5, 1.0, {s})",
    "FROM ppdm_dp_histogram('t', 'c', 0, 10, 5, 1.0, {s})",
]


@pytest.fixture
def leak_con() -> duckdb.DuckDBPyConnection:
    con = ppdm.duckdb.register(duckdb.connect())
    con.execute(
        f"""CREATE TABLE t AS SELECT i AS id, i % 2 = 0 AS x, ['a', 'b'][i % 2 + 1] AS c, i * 1.5 AS v,
        if(i = 3, 'nan'::DOUBLE, i) AS w, 1.0 AS k, if(i = 4, NULL, i::DOUBLE) AS holes,
        '{HEX}' AS s_const, if(i % 3 = 0, '{HEX}', '12345') AS s_vary, if(i % 3 = 0, '{HEX}', NULL) AS s_holes
        FROM range(12) r(i)"""
    )
    con.execute(f"CREATE TABLE vault AS SELECT '{HEX}' AS s")
    return con


@pytest.mark.parametrize("form", SQL_FORMS, ids=lambda f: f.name)
@pytest.mark.parametrize("call", UDF_CASES, ids=str)
def test_duckdb_udf_errors_never_hold_the_secret(leak_con, call, form, caplog):
    sql = f"SELECT {call.format(s=form.sql)} FROM t"
    raised, text = run_and_collect(lambda: leak_con.execute(sql).fetchall(), caplog)
    assert isinstance(raised, duckdb.Error), f"{sql}: did not raise ({raised!r})"
    assert not leaked(text, needles_for(form.text, None)), text


@pytest.mark.parametrize("form", [f for f in SQL_FORMS if f.table_macro_sql], ids=lambda f: f.name)
@pytest.mark.parametrize("call", MACRO_CASES, ids=str)
def test_duckdb_macro_errors_never_hold_the_secret(leak_con, call, form, caplog):
    sql = call.format(s=form.table_macro_sql)
    raised, text = run_and_collect(lambda: leak_con.execute(sql).fetchall(), caplog)
    assert isinstance(raised, duckdb.Error), f"{sql}: did not raise ({raised!r})"
    assert not leaked(text, needles_for(form.text, None)), text


def test_macros_never_put_the_secret_into_their_error_text():
    """The SQL text of every macro: no error(...) call concatenates the secret argument."""
    for path in ppdm.duckdb.sql_files():
        for statement in path.read_text(encoding="utf-8").split("error(")[1:]:
            message = statement[: statement.find("')") + 2] if "')" in statement else statement
            assert "secret" not in message.replace("'secret'", ""), (path.name, message[:200])


def test_duckdb_own_errors_quote_the_sql_text_so_keep_the_secret_out_of_it(leak_con, caplog):
    """DuckDB's parser, binder and catalog errors quote the SQL text (LINE 1: ...), which we
    cannot intercept: with 'env:NAME' (or a column) that text holds no secret."""
    for sql in (
        f"SELECT ppdm_rr_disguise(x, 0.8, 'env:{ENV_NAME}', id, 'x') FROM no_such_table",
        f"SELECT ppdm_rr_disguise(x, 0.8, 'env:{ENV_NAME}', id, 'x', 1, 2, 3) FROM t",
        f"SELECT ppdm_uniform('env:{ENV_NAME}', 's', id) FROM t WHERE",
        "SELECT ppdm_rr_disguise(x, 0.8, s_const, id, 'x') FROM no_such_table, t",
    ):
        raised, text = run_and_collect(lambda sql=sql: leak_con.execute(sql).fetchall(), caplog)
        assert isinstance(raised, duckdb.Error), sql
        # DuckDB 1.5's parser error at the end of input quotes no line; later ones do.
        assert "LINE 1" in text or isinstance(raised, duckdb.ParserException), sql
        assert not leaked(text, needles_for(f"env:{ENV_NAME}", None) + needles_for(HEX, None)), text


def test_the_needles_catch_a_leak():
    """The search itself works: each encoding, and a truncated echo, is found."""
    key = resolve_secret(HEX).key
    for shown in (HEX, HEX.upper(), HEX[:15] + "...", repr(key), base64.b64encode(key).decode()):
        assert leaked(f"Error: got {shown} instead", needles_for(HEX, None)), shown
    assert leaked(f"got {DECIMAL}", needles_for(DECIMAL, None))
    assert leaked(f"value {ENV_HEX}", needles_for(f"env:{ENV_NAME}", None))
    assert leaked(f"{list(RAW)}", needles_for(None, RAW))
    assert not leaked("Secret(fingerprint='0a1b2c3d')", needles_for(HEX, None))
    assert np.isfinite(len(PYTHON_CASES))  # the tables are not empty
    assert PYTHON_CASES and UDF_CASES and MACRO_CASES


def test_a_handle_is_salted_per_process():
    """Review 67: an unsalted SHA-256 handle of the key let anyone holding a serialized
    plan confirm a guess of a weak secret (secret=4711, in milliseconds)."""
    from polars_ppdm._held import handle_of

    code = "from polars_ppdm._held import handle_of; print(handle_of(b'key', bytes(16)))"
    other = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert int(other.stdout) != handle_of(b"key", bytes(16))
