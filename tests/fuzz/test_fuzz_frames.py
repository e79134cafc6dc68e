"""Fuzz every frame operation, as a free function and as a ``df.ppdm`` / ``lf.ppdm``
method: hostile frames (dtypes, values, 0 and 1 rows, odd names), hostile parameters,
and pyarrow / pandas / dict inputs where a frame is expected (see fuzz_contract.py)."""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from fuzz_contract import checked
from fuzz_strategies import ODD_NAMES, frames, hostile
from fuzz_targets import NAME_PARAMS, SIZE_PARAMS, TARGETS, Target
from hypothesis import given

SMALL_HOSTILE = st.sampled_from(
    [None, True, 0, -1, 1, 2, np.int64(3), np.uint8(2), 2.0, np.float32(2), "3", [], [2, 2]]
)


def _foreign(frame: pl.DataFrame, form: str) -> Any:
    if form == "pyarrow":
        try:
            return frame.to_arrow()
        except pa.ArrowException:  # Int128 has no Arrow type in pyarrow: a plain Arrow table
            return pa.table({"x": [1.0] * frame.height})
    if form == "dict":
        return frame.to_dict(as_series=False)
    if form == "numpy":
        return np.zeros((frame.height, frame.width))
    if form == "pandas":
        pytest.importorskip("pandas")
        return frame.to_pandas()
    raise AssertionError(form)


@st.composite
def calls(draw: st.DrawFn, target: Target) -> tuple[pl.DataFrame, dict[str, str], dict[str, Any], str]:
    frame, slots = draw(frames(target.roles))
    kwargs = target.base(slots)
    params = sorted({*kwargs, *target.alts})
    mutated = draw(st.sampled_from([0, 0, 0, 1, 1, 2]))  # half the calls keep valid parameters
    for name in draw(st.lists(st.sampled_from(params), min_size=mutated, max_size=mutated, unique=True)):
        options = [hostile()] if name not in SIZE_PARAMS else [SMALL_HOSTILE]
        if name in target.alts:
            options.insert(0, target.alts[name])
        if name in NAME_PARAMS:
            names = st.sampled_from([*slots.values(), *ODD_NAMES])
            options += [names, st.lists(names, max_size=3)]
        kwargs[name] = draw(st.one_of(*options))
    forms = ["eager", "lazy"] + (["ns-eager", "ns-lazy"] if target.namespace else [])
    form = draw(st.sampled_from([*forms * 8, "pyarrow", "dict", "numpy"]))
    return frame, slots, kwargs, form


def run(
    target: Target, frame: pl.DataFrame, slots: dict[str, str], kwargs: dict[str, Any], form: str
) -> None:
    subject: Any = frame.lazy() if form.endswith("lazy") else frame
    if form in {"pyarrow", "dict", "numpy", "pandas"}:
        subject = _foreign(frame, form)

    def call() -> Any:
        if form.startswith("ns-"):
            result = getattr(subject.ppdm, target.name)(**kwargs)
        else:
            result = target.func(subject, **kwargs)
        frame_out = result[0] if isinstance(result, tuple) else result  # spiral(..., return_key=True)
        if isinstance(frame_out, pl.LazyFrame):  # errors at collect time count too
            frame_out.collect()
        return result

    check = (
        target.check_result(subject, slots, kwargs)
        if isinstance(subject, pl.DataFrame | pl.LazyFrame)
        else None
    )
    checked(target.name, call, names=[*kwargs, *slots.values(), "frame"], check_result=check)


@pytest.mark.fuzz
@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.name)
@given(data=st.data())
def test_frame_operation_keeps_the_contract(target: Target, data: st.DataObject) -> None:
    run(target, *data.draw(calls(target)))


@pytest.mark.fuzz
@pytest.mark.parametrize(
    "target",
    [t for t in TARGETS if t.name in {"rr_disguise", "add_noise", "dp_histogram"}],
    ids=lambda t: t.name,
)
def test_pandas_frames_get_a_clear_answer(target: Target) -> None:
    pd = pytest.importorskip("pandas")
    frame = pl.DataFrame({"c": [True, False], "k": [1, 2]})
    run(target, frame, {"c": "c", "k": "k"}, target.base({"c": "c", "k": "k"}), "pandas")
    assert isinstance(frame.to_pandas(), pd.DataFrame)


@pytest.mark.fuzz
@given(data=st.data())
def test_expression_namespace_keeps_the_contract(data: st.DataObject) -> None:
    """``pl.col(c).ppdm.rr_disguise`` / ``.add_noise`` in with_columns, eager and lazy."""
    from fuzz_contract import SECRET

    which = data.draw(st.sampled_from(["rr_disguise", "add_noise"]))
    role = "bool" if which == "rr_disguise" else "num"
    frame, slots = data.draw(frames({"c": role, "k": "key"}))
    c, k = slots["c"], slots["k"]
    kwargs: dict[str, Any] = {"secret": SECRET, "key": data.draw(st.sampled_from([k, None, pl.col(k)]))}
    kwargs |= {"p": 0.75} if which == "rr_disguise" else {"scale": 1.0}
    for name in data.draw(
        st.lists(st.sampled_from([*kwargs, "stream", "categories"]), max_size=2, unique=True)
    ):
        kwargs[name] = data.draw(st.one_of(hostile(), st.sampled_from([c, k, "missing", "", "__ppdm_key"])))
    lazy = data.draw(st.booleans())

    def call() -> pl.DataFrame:
        expr = getattr(pl.col(c).ppdm, which)(**kwargs)
        subject = frame.lazy() if lazy else frame
        out = subject.with_columns(expr)
        return out.collect() if lazy else out

    def check(out: pl.DataFrame) -> None:
        from fuzz_contract import rows_kept

        rows_kept(frame, out, [c])

    checked(f"expr.{which}", call, names=[*kwargs, c, k], check_result=check)


def test_foreign_frame_forms_are_known() -> None:
    frame = pl.DataFrame({"a": [1.0]})
    assert isinstance(_foreign(frame, "pyarrow"), pa.Table)
