"""``ppdm run``: check everything that can be checked, reserve the budget, compute every
output aside, check the inputs did not change, commit in the ledger, then put the
outputs in place.

Order, and why
    1. The pipeline file is validated, the paths the run writes checked against each
       other, the inputs, the secret file and the pipeline file (and that each existing
       one is a regular file: :mod:`polars_ppdm.jobs.paths`), and the secret read; a
       guessable secret is refused here, before anything is reserved or read.
    2. The budget: the pipeline's budgets must be the ledger's (changed on purpose with
       ``ppdm ledger --set-budget``).  When the dataset has less epsilon left than the
       run needs, the run is refused *before any row is read* -- unless it is an
       identical re-run (same pipeline, inputs and secret), which spends nothing;
       telling that needs the inputs' fingerprints, so only then their bytes are hashed.
    3. The inputs are pinned (:class:`~polars_ppdm.jobs.inputs.PinnedInputs`: each
       file's identity and fingerprint) before a row is read; then their metadata and
       schema, every step built over an empty frame of that schema (each dtype check a
       step makes), every CSV field parsed once, and one pass over the key and the
       randomized-response columns (values inside ``categories``, distinct values per
       unit, no null where an ``rr_support`` or ``rr_apriori`` release counts:
       :func:`check_values_per_unit`).  ``ppdm plan`` makes the same checks but the
       passes over rows, with the same messages.
    4. The ledger reserves the epsilon in one transaction (or finds the identical run).
    5. The perturbed table is one lazy query sunk by Polars' streaming engine into a
       temporary file beside its target that only this user can read (mode 0600); each
       release is serialized into memory.  Nothing readable by others exists before the
       commit, so a run withdrawn below has published nothing (attack review 64).
    6. The inputs are checked again (identity and fingerprint): an input changed during
       the run is refused (:class:`~polars_ppdm.jobs.errors.InputChangedError`, exit 6).
    7. The commit: the manifest is written aside, the spiral key files saved, and the
       ledger records every output's SHA-256 and the run's success in one transaction;
       only then is every file written or renamed into place (the table given the mode
       the umask gives), the manifest last.

A run that fails or is interrupted before the commit published nothing: its temporary
files and new key files are removed and its reservation withdrawn (nothing spent; the
error carries a note saying so).  After the commit, or when the process is killed, the
epsilon stays spent.  An identical re-run (a run id already recorded) spends nothing
only if it releases the identical bits: each output is compared with the recorded one,
and other bits are refused with :class:`ReleaseMismatchError` (exit 6).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import io
import json
import math
import os
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, cast

import numpy as np
import polars as pl

from polars_ppdm._durable import file_identity, table_files
from polars_ppdm.exceptions import BudgetExceededError, InvalidParameterError, SecretError
from polars_ppdm.jobs import spark_engine
from polars_ppdm.jobs.atomic import (
    GrowingFileHash,
    file_sha256,
    make_readable,
    private_temporary,
    remove_stale,
    replace_whole,
    temporaries,
    write_bytes_atomic,
)
from polars_ppdm.jobs.config import (
    ENGINES,
    AddNoise,
    DPContinualCounts,
    DPGroupBy,
    DPHistogram,
    DPKMeans,
    DPQuadtree,
    EcdfResample,
    Pipeline,
    RRApriori,
    RRDisguise,
    RRSupport,
    Spiral,
    load_pipeline,
    periods_through,
    step_charge_note,
    step_epsilon,
    step_label,
    step_rho,
)
from polars_ppdm.jobs.errors import (
    EXIT_OK,
    InputChangedError,
    InputError,
    PipelineError,
    ReleaseMismatchError,
    mark_recorded,
)
from polars_ppdm.jobs.inputs import (
    InputFile,
    InputFormat,
    PinnedInputs,
    check_readable,
    combined_fingerprint,
    expand,
    input_format,
    metadata,
    read_schema,
    scan,
    withheld,
)
from polars_ppdm.jobs.manifest import Manifest
from polars_ppdm.jobs.paths import check_paths
from polars_ppdm.jobs.plan import check_columns, ledger_path, open_dataset, published_columns
from polars_ppdm.jobs.progress import Progress
from polars_ppdm.jobs.table_content import content_key, published_content
from polars_ppdm.kernels.repeats import RepeatScreen, passes, screen
from polars_ppdm.perturb._plugin import plugin_errors
from polars_ppdm.secret import Secret, secret_from_env

__all__ = [
    "RunResult",
    "check_strong_secret",
    "check_values_per_unit",
    "read_secret",
    "run_id",
    "run_pipeline",
    "secret_source",
]


@dataclass
class RunResult:
    run_id: str
    dataset: str
    new: bool
    epsilon: float
    spent: float
    left: float
    budget: float
    manifest: Path
    rows: int | None
    outputs: list[Path] = field(default_factory=list)
    reclaimed: list[str] = field(default_factory=list)  # runs killed before publishing, withdrawn
    unit: str = "epsilon"  # of epsilon, spent, left and budget: "epsilon", or "rho" (zCDP)


def secret_source(pipeline: Pipeline) -> str:
    """Where the pipeline's secret comes from, in words (never its value)."""
    source = pipeline.secret
    if source.env is not None:
        return f"[secret], field 'env': the environment variable {source.env!r}"
    assert source.file is not None
    return f"[secret], field 'file': the secret file {str(pipeline.resolve(source.file))!r}"


def check_strong_secret(pipeline: Pipeline, secret: Secret) -> Secret:
    """Refuse a guessable secret (all zeros, one repeated byte, a short repeated pattern):
    whoever guesses it recomputes every coin of the disguise and every draw of the DP
    noise, and undoes them.  The message names where the secret came from, never its
    value.  A pipeline has no test escape: its secret is read as hex, and hex is never
    :meth:`~polars_ppdm.Secret.for_tests`."""
    if secret.guessable:
        msg = (
            f"{secret_source(pipeline)} holds a guessable secret (one repeated byte or a short repeated "
            "pattern, such as all zeros; printable characters only, such as a password; or the key of a public "
            "test seed): anyone could recompute every coin and every noise draw of the run "
            "and undo them. Nothing was reserved or read. Make a new secret with `ppdm secret` (or "
            "`ppdm secret --output PATH` for a 0600 file) and keep it; runs under the new secret are new runs."
        )
        raise PipelineError(msg)
    return secret


def read_secret(pipeline: Pipeline) -> Secret:
    """The secret named by ``[secret]``, refused if guessable (:func:`check_strong_secret`);
    its value never appears in a message."""
    return check_strong_secret(pipeline, _read_secret(pipeline))


# A lost secret is not replaced by a new one where outputs were published under it.
_KEEP_THE_SECRET = (
    "If runs published under it before, restore that secret instead: under a new one every value is "
    "disguised afresh, and two disguises of one value average towards it."
)


def _read_secret(pipeline: Pipeline) -> Secret:
    source = pipeline.secret
    if source.env is not None:
        try:
            return secret_from_env(source.env)
        except SecretError as error:
            text = str(error)
            msg = f"[secret], field 'env': {text[:1].lower()}{text[1:]}"
            if os.environ.get(source.env) is None:
                msg += (
                    f" Set it to the pipeline's secret before the run; the first time, make one with `ppdm secret`. "
                    f"{_KEEP_THE_SECRET}"
                )
            raise PipelineError(msg) from None
    assert source.file is not None
    path = pipeline.resolve(source.file)
    from polars_ppdm.secret_files import read_secret_file

    try:
        return read_secret_file(path)
    except SecretError as error:
        msg = f"[secret], field 'file': {error}"
        raise PipelineError(msg) from None
    except OSError as error:
        msg = f"[secret], field 'file': the secret file {str(path)!r} cannot be read: {error.strerror or type(error).__name__}."
        if isinstance(error, FileNotFoundError):
            msg += f" The first time, make it with: ppdm secret --output {shlex.quote(str(path))}. {_KEEP_THE_SECRET}"
        raise PipelineError(msg) from None


def run_id(
    pipeline: Pipeline, input_fingerprints: list[str], secret: Secret, throughs: dict[str, int] | None = None
) -> str:
    """HMAC-SHA256, keyed by the secret, over (canonical pipeline content, the inputs'
    fingerprints[, the periods each continual release publishes through]).

    Keyed by the whole secret, not its 32-bit fingerprint: two secrets whose fingerprints
    collide would otherwise make a run with new noise look like an identical re-run that
    spends nothing.  The HMAC reveals nothing of the secret.  A pipeline without
    continual releases has the run id it always had.
    """
    content = json.dumps(pipeline.canonical(), sort_keys=True, separators=(",", ":"))
    digest = hmac.new(secret.key, b"polars_ppdm/run-id\x00", hashlib.sha256)
    parts = [content, combined_fingerprint(input_fingerprints)]
    if throughs:
        parts.append(json.dumps(throughs, sort_keys=True))
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\x00")
    return digest.hexdigest()


def _leftovers_removed(pipeline: Pipeline, book: Path) -> bool:
    """Remove the temporaries that killed runs left beside the pipeline's outputs; True
    when none is left."""
    from polars_ppdm.jobs.paths import written_paths

    targets = [w.path for w in written_paths(pipeline, book) if w.kind != "ledger"]
    for target in targets:
        remove_stale(target)
    # Any temporary of another process blocks: a pid reused by a live process makes a
    # dead run's leftover look alive.
    return not any(temporaries(target, others_only=True) for target in targets)


def keyed_fingerprint(secret: Secret, fingerprint: str) -> str:
    """An input's fingerprint as the manifest records it: HMAC-SHA256 under the secret of
    its content fingerprint.  It tells whoever holds the secret whether two runs read the
    same bytes; a plain hash of the bytes would tell anyone holding a candidate file
    whether it was the input (a table or its neighbour: which one the DP releases came
    from)."""
    return hmac.new(
        secret.key, b"polars_ppdm/manifest-input\x00" + fingerprint.encode(), hashlib.sha256
    ).hexdigest()


def tree_name(pipeline: Pipeline, label: str) -> str:
    """A continual release's name in the ledger: its step's label and output (two
    pipelines of one dataset may both have a "[[release]] 1 dp_continual_counts(...)")."""
    index = int(label.split()[1]) - 1
    return f"{label} -> {pipeline.resolve(pipeline.release[index].output)}"


def started_trees(pipeline: Pipeline, labels: Iterable[str], book: Any) -> set[str]:
    """The labels of the continual releases whose tree the ledger already holds."""
    if book is None:
        return set()
    return {
        label for label in labels if book.tree(pipeline.dataset.name, tree_name(pipeline, label)) is not None
    }


def continual_throughs(pipeline: Pipeline, as_of: dt.date | int | None) -> dict[str, int]:
    """The last period each continual release publishes as of ``as_of`` (by label);
    :class:`PipelineError` when a release has none complete or its horizon is over."""
    return {
        step_label("release", index, step): periods_through(step, as_of)
        for index, step in enumerate(pipeline.release, 1)
        if isinstance(step, DPContinualCounts)
    }


def _continual(
    pipeline: Pipeline,
    index: int,
    step: DPContinualCounts,
    original: Any,
    secret: Secret,
    through: int,
    book: Any,
) -> tuple[pl.DataFrame, Any]:
    """Publish a continual release through ``through`` from the nodes the ledger keeps:
    the table, and the run's part of the commit (the nodes drawn now)."""
    from polars_ppdm.dp.continual import TreeState, dp_continual_counts
    from polars_ppdm.ledger import TreeUpdate

    label = step_label("release", index, step)
    held = book.tree(pipeline.dataset.name, tree_name(pipeline, label))
    state = None if held is None else TreeState(*held)
    # Its own secret: under the pipeline's, two datasets' trees (a log and a copy without
    # one person) drew one noise, identical exactly when that person had no row.
    secret = continual_secret(secret, pipeline.dataset.name, tree_name(pipeline, label))
    result = dp_continual_counts(
        original,
        step.by,
        period=step.period,
        through=through,
        horizon=step.horizon,
        rho=step.rho,
        public_groups=pl.DataFrame(step.public_groups).select(step.by),
        start=step.start,
        every=step.every,
        privacy_unit=pipeline.dataset.key,
        max_contributions=step.max_contributions,
        secret=secret,
        state=state,
    )
    drawn = result.state.nodes.slice(0 if state is None else state.nodes.height)
    first = result.state.periods.slice(0 if state is None else state.periods.height)
    return result.table, TreeUpdate(tree_name(pipeline, label), result.state.config, drawn, first)


def check_engine(chosen: str | None, in_file: str) -> str:
    """``--engine`` if given, else the file's ``engine``."""
    if chosen is None:
        return in_file
    if chosen not in ENGINES:
        msg = f"The engine must be one of {', '.join(map(repr, ENGINES))}. Got {chosen!r} instead."
        raise PipelineError(msg)
    return chosen


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def _refusal(
    name: str, needed: float, left: float, budget: float, unit: str = "epsilon"
) -> BudgetExceededError:
    return BudgetExceededError(
        f"dataset {name!r}: this run needs {unit} {needed:g} but {left:g} is left of the budget "
        f"{budget:g} (spent {budget - left:g}); nothing was read and nothing was spent. A larger budget "
        "is a decision to publish more about the same people; it is made with `ppdm ledger --pipeline "
        f"FILE --dataset {name} --set-budget TOTAL`."
    )


def _spiral_key(step: Spiral, secret: Secret) -> Any:
    from polars_ppdm.perturb.spiral import spiral_key

    return spiral_key(
        step.columns,
        bounds={c: (b[0], b[1]) for c, b in step.bounds.items()},
        rounds=step.rounds,
        factors=tuple(step.factors),
        angle=(step.angle[0], step.angle[1]),
        growth=step.growth,
        secret=secret,
    )


def _check_key_files(pipeline: Pipeline, secret: Secret, label_of: dict[int, str]) -> list[tuple[Path, Any]]:
    """Each spiral step's key, and its file: absent (to be written) or holding this key."""
    from polars_ppdm.secret_files import read_secret_text

    secret = perturbation_secret(secret, pipeline.dataset.name)
    keys = []
    for index, step in enumerate(pipeline.perturb, 1):
        if not isinstance(step, Spiral):
            continue
        key = _spiral_key(step, secret)
        path = pipeline.resolve(step.path)
        if path.exists() or path.is_symlink():
            try:
                same = read_secret_text(path) == key.to_json()
            except (SecretError, OSError) as error:
                msg = f"{label_of[index]}, field 'path': {error}"
                raise PipelineError(msg) from None
            if not same:
                msg = (
                    f"{label_of[index]}, field 'path': the key file {str(path)!r} holds another key (another "
                    "secret or other parameters); it undoes an earlier release, so it is never overwritten: "
                    "move it away or choose another path."
                )
                raise PipelineError(msg)
        keys.append((path, key))
    return keys


def _api(engine: str) -> Any:
    """The module whose functions run the steps: ``polars_ppdm`` or ``polars_ppdm.spark``,
    which have the same names and parameters (and give the same bits)."""
    if engine == "spark":
        import polars_ppdm.spark

        return polars_ppdm.spark
    import polars_ppdm

    return polars_ppdm


def _perturbed(pipeline: Pipeline, frame: Any, secret: Secret, ppdm: Any) -> Any:
    """The lazy query of every perturb step, in file order (keep and drop change nothing
    here); ``ppdm`` is the engine's module (see :func:`_api`), under the dataset's own
    secret (:func:`perturbation_secret`)."""
    key = pipeline.dataset.key
    secret = perturbation_secret(secret, pipeline.dataset.name)
    for step in pipeline.perturb:
        if isinstance(step, RRDisguise):
            frame = ppdm.rr_disguise(
                frame,
                step.columns,
                p=step.p,
                epsilon=step.epsilon,
                mode=step.mode,
                categories=cast(Any, step.categories),
                secret=secret,
                key=key,
            )
        elif isinstance(step, AddNoise):
            frame = ppdm.add_noise(
                frame, step.columns, dist=step.dist, scale=step.scale, secret=secret, key=key
            )
        elif isinstance(step, EcdfResample):
            frame = ppdm.ecdf_resample(
                frame,
                step.columns,
                bins=step.bins,
                secret=secret,
                key=key,
                link=step.link,
                shuffle=step.shuffle,
                round_integers=step.round_integers,
            )
        elif isinstance(step, Spiral):
            frame = ppdm.apply_spiral_key(frame, _spiral_key(step, secret))
    return frame


def _rr_design(pipeline: Pipeline, columns: list[str]) -> dict[str, Any]:
    """rr_support / rr_apriori's p or epsilon, mode and categories, from the steps that
    disguised ``columns`` (config checked they agree on mode and kind)."""
    steps = {c: s for s in pipeline.perturb if isinstance(s, RRDisguise) for c in s.columns}
    first = steps[columns[0]]
    kind = "p" if first.p is not None else "epsilon"

    def value(step: RRDisguise, name: str, column: str) -> Any:
        got = getattr(step, name)
        return got.get(column) if isinstance(got, dict) else got

    out: dict[str, Any] = {kind: {c: value(steps[c], kind, c) for c in columns}, "mode": first.mode}
    cats = {c: value(steps[c], "categories", c) for c in columns}
    if any(v is not None for v in cats.values()):
        out["categories"] = {c: v for c, v in cats.items() if v is not None}
    if first.mode == "whole_record":
        out[kind] = out[kind][columns[0]]
    return out


def perturbation_secret(secret: Secret, dataset: str) -> Secret:
    """The secret of a dataset's row-wise steps (randomized response, noise, ECDF, spiral
    keys): HMAC(secret, dataset name), as long as the secret.

    One secret may serve several datasets whose ids overlap (surrogate keys 1..n in each).
    Under the secret itself, the person with id 7 in one survey and the person with id 7
    in another drew the same coins for a column of the same name and the same value: who
    knew their own value and released bit in one learned, for about a quarter of the other
    survey's people, their value with certainty; and every spiral step of one shape shared
    its key.  Per dataset, the same person's value still gets the same coins every night
    (repeats disclose nothing new), and another dataset's people get other coins.
    """
    derived = hmac.new(secret.key, b"polars_ppdm/perturb\x00" + dataset.encode(), hashlib.sha256)
    return Secret(derived.digest()[: len(secret.key)])


def continual_secret(secret: Secret, dataset: str, tree: str) -> Secret:
    """The secret of a continual release's tree: HMAC(secret, dataset name, tree name).
    Not the run's (its nodes are kept and reproduced night after night), and not the
    pipeline's secret itself, which every dataset and tree under it shares."""
    message = b"polars_ppdm/continual\x00" + dataset.encode() + b"\x00" + tree.encode()
    return Secret(hmac.new(secret.key, message, hashlib.sha256).digest()[: len(secret.key)])


def release_secret(secret: Secret, this_run: str) -> Secret:
    """The secret of this run's DP releases: HMAC(secret, run id).

    Noise keyed by the pipeline's secret alone would repeat over tonight's changed data,
    and the difference of two nights' releases would then be the exact difference of the
    true counts (the people who came or left, unprotected).  Keyed by the run id (the
    pipeline, the inputs' content, the secret), an identical re-run draws the same noise
    (and spends nothing) while a run over changed data draws fresh noise.  Randomized
    response and the other row-wise steps keep the dataset's secret
    (:func:`perturbation_secret`): the same person's value gets the same coins every
    night, so repeats disclose nothing new.
    """
    derived = hmac.new(secret.key, b"polars_ppdm/dp-release\x00" + this_run.encode(), hashlib.sha256)
    return Secret(derived.digest())


def dp_arguments(step: DPHistogram | DPQuadtree | DPKMeans, key: str | None) -> dict[str, Any]:
    """The keyword arguments of the step's DP function (``dp_histogram``, ``dp_quadtree``,
    ``dp_kmeans``) and of its schema check (``check_histogram`` ...), but the secret."""
    arguments: dict[str, Any] = {
        "bounds": {c: (b[0], b[1]) for c, b in step.bounds.items()},
        "epsilon": step.epsilon,
        "key": key,
        "max_contributions": step.max_contributions,
    }
    if isinstance(step, DPHistogram):
        return {**arguments, "bins": step.bins, "mechanism": step.mechanism, "rho": step.rho}
    tree = {"gamma": step.gamma, "max_height": step.max_height, "threshold": step.threshold, "n": step.n}
    if isinstance(step, DPQuadtree):
        return {**arguments, **tree}
    return {**arguments, **tree, "k": step.k, "method": step.method, "iterations": step.iterations}


def _release_query(pipeline: Pipeline, step: RRSupport | RRApriori, disguised: Any, ppdm: Any) -> Any:
    """rr_support / rr_apriori over the disguised columns (no new epsilon)."""
    if isinstance(step, RRSupport):
        return ppdm.rr_support(
            disguised, step.columns, itemsets=step.itemsets, **_rr_design(pipeline, step.columns)
        )
    return ppdm.rr_apriori(
        disguised,
        step.columns,
        min_support=step.min_support,
        min_confidence=step.min_confidence,
        max_length=step.max_length,
        **_rr_design(pipeline, step.columns),
    )


def _release(
    pipeline: Pipeline, step: Any, original: Any, disguised: Any, secret: Secret, ppdm: Any
) -> pl.DataFrame:
    key = pipeline.dataset.key
    got: Any
    if isinstance(step, RRSupport | RRApriori):
        got = _release_query(pipeline, step, disguised, ppdm)
    elif isinstance(step, DPGroupBy):
        got = _dp_group_by(step, original, secret, key, ppdm)
    else:
        got = getattr(ppdm, step.step)(original, step.columns, secret=secret, **dp_arguments(step, key))
        if isinstance(step, DPKMeans):
            got = got.centres
    if isinstance(got, pl.LazyFrame):
        return got.collect()
    if isinstance(got, pl.DataFrame):
        return got
    return cast(pl.DataFrame, pl.from_arrow(got.toArrow()))  # Spark: a release is a small aggregate


def _dp_group_by(step: DPGroupBy, original: Any, secret: Secret, key: str | None, ppdm: Any) -> Any:
    got = ppdm.dp_group_by(
        original,
        **step.arguments(key),
        secret=secret,
        intervals=step.intervals,
        non_negative=step.non_negative,
    )
    # The bounding sorts every row: faster in memory (see dp_group_by's Notes).
    return got.collect(engine="in-memory") if isinstance(got, pl.LazyFrame) else got


#: The perturbed table's names in the ledger: its file's SHA-256 (Polars), its part files'
#: (Spark, in the manifest; the ledger held them until the content digest came) and the
#: digest of its rows (:mod:`polars_ppdm.jobs.table_content`).
TABLE = "perturbed table"
SPARK_PARTS = f"{TABLE} (spark part files)"
TABLE_CONTENT = f"{TABLE} (content)"


class _Publisher:
    """Puts a run's outputs in place, all or none, after the ledger has recorded them.

    Every output is computed and hashed before the commit and kept aside (:meth:`put`):
    the releases and the manifest as bytes in memory, the perturbed table (too large for
    that) in a temporary beside its target that only this user can read
    (:func:`~polars_ppdm._durable.private_temporary`).  So nothing a reader of the
    outputs' folder can take exists before the commit, and a run that fails, is
    interrupted or is killed before it leaves no readable release behind while its
    reservation is withdrawn (attack review 64: a copied temporary was a free release).
    A re-run of a run id already recorded (``recorded`` is what that run recorded)
    compares each hash with the recorded one at once: other bits raise
    :class:`ReleaseMismatchError`.  When every output is computed, :meth:`publish`
    writes the manifest aside too, saves the spiral key files, records every hash and
    the run's success in the ledger in one transaction (the commit point: before it,
    nothing is published and the run's reservation can be withdrawn), and only then
    writes or renames each file into place (the table given its usual mode first), the
    manifest last.
    """

    def __init__(self, book: Any, run: str, recorded: dict[str, str] | None) -> None:
        self.book, self.run, self.recorded = book, run, recorded
        # (label, the bytes or the private temporary, target, SHA-256)
        self.staged: list[tuple[str, bytes | Path, Path, str]] = []
        self.saved_keys: list[Path] = []
        self.contents: dict[str, str] = {}  # content digests recorded beside the outputs'
        self.unrecorded: set[str] = set()  # outputs whose bytes differ run to run (Spark's)
        self.trees: list[Any] = []  # TreeUpdate of each continual release, recorded at the commit
        self.committed = False

    def put(self, label: str, temporary: bytes | Path, target: Path, digest: str) -> None:
        held = None if self.recorded is None else self.recorded.get(label)
        if held is not None and held != digest:
            self._refuse(label, digest, held)
        self.staged.append((label, temporary, target, digest))

    def _refuse(self, label: str, digest: str, held: str) -> None:
        msg = (
            f"run {self.run[:12]} is recorded in the ledger as an identical earlier run, but its {label} now "
            f"has other bits (SHA-256 {digest[:12]}..., recorded {held[:12]}...). An input was replaced between "
            "its fingerprint and its read, or a step is not deterministic: publishing these bits under the "
            "earlier run's charge would release new data for free. Refused: nothing was published and nothing "
            "spent; the outputs and the ledger are as they were. If an input changed, run again: its new "
            "content is a new run, charged. (A continual release is named by its output's full path: in a "
            "moved folder it is another release.)"
        )
        raise ReleaseMismatchError(msg)

    def put_table(
        self, temporary: Path, target: Path, digest: str, *, spark: bool, content: Callable[[Path], str]
    ) -> None:
        """Keep the perturbed table aside (as :meth:`put`); on a re-run, check it by its
        rows where its bytes cannot tell (:mod:`polars_ppdm.jobs.table_content`).

        Polars writes the same file each time: its SHA-256 is recorded and compared, as
        every output's.  Spark's part files are named after the write job, so a Spark
        table is recorded by its content digest (``content``: the digest of the table at
        a path) and a re-run compares that.  A re-run whose bytes are not the recorded
        ones (on the other engine, or another Polars) compares its content with the one
        recorded or, where none was (the run was on Polars, or on an older polars_ppdm),
        with the content of the recorded table in place at ``target``: if that is not
        there, nothing tells whether this run's table is the recorded one, and it is
        refused.
        """
        recorded = self.recorded
        own = SPARK_PARTS if spark else TABLE
        if not spark and (recorded is None or recorded.get(TABLE) == digest):
            self.put(TABLE, temporary, target, digest)
            return
        mine = content(temporary)
        if recorded is not None:
            held = recorded.get(TABLE_CONTENT) or self._content_in_place(target, recorded, content)
            if held != mine:
                self._refuse(TABLE, mine, held)  # by its rows
        self.contents[TABLE_CONTENT] = mine
        self.staged.append((own, temporary, target, digest))
        if spark or (recorded is not None and own in recorded):
            self.unrecorded.add(own)  # the manifest has these bytes; the ledger keeps its own

    def _content_in_place(
        self, target: Path, recorded: dict[str, str], content: Callable[[Path], str]
    ) -> str:
        """The content digest of the recorded table in place at ``target``, whose bytes
        the ledger recorded (Polars' file, or Spark's part files by an older version)."""
        before = [file_identity(f) for f in table_files(target) if f.exists()]
        if target.is_dir() and not target.is_symlink():
            held = recorded.get(SPARK_PARTS)
            in_place = None if held is None else spark_engine.parts_digest(target)
        else:
            held = recorded.get(TABLE)
            in_place = None if held is None or not target.is_file() else file_sha256(target)
        if held is not None and in_place == held:
            digest = content(target)
            # The files hashed are the files read: one swapped in between (review 79: the
            # run's own new table, published free) changes an inode, a size or a ctime.
            if [file_identity(f) for f in table_files(target) if f.exists()] == before:
                return digest
        msg = (
            f"run {self.run[:12]} is recorded in the ledger as an identical earlier run, whose perturbed table "
            "was recorded by its bytes; this run wrote the table with other bytes (on the other engine, or "
            "with another version of it), so its rows are compared with the recorded table's, and "
            f"{str(target)!r} does not hold that table (missing, replaced or changed): nothing tells whether "
            "this run would publish the same rows. Refused rather than published for free: nothing was "
            "published and nothing spent. Put the recorded table back, or run on the engine that wrote it."
        )
        raise ReleaseMismatchError(msg)

    def publish(self, manifest: Manifest, manifest_path: Path, keys: list[tuple[Path, Any]]) -> str:
        """Save the key files, commit in the ledger, put every output in place; returns
        the manifest's SHA-256."""
        for key_path, key in keys:
            if not key_path.exists():
                key_path.parent.mkdir(parents=True, exist_ok=True)
                key.save(key_path)
                self.saved_keys.append(key_path)
        data = manifest.dumps()
        digest = hashlib.sha256(data).hexdigest()
        self.staged.append(("manifest", data, manifest_path, digest))
        outputs = {
            label: sha for label, _, _, sha in self.staged if label not in self.unrecorded | {"manifest"}
        }
        outputs.update(self.contents)
        self.book.publish(self.run, outputs, manifest_sha256=digest, trees=self.trees)
        self.committed = True
        while self.staged:
            label, kept, target, _ = self.staged[0]
            if isinstance(kept, bytes):  # the manifest: the operator's record (exact input counts)
                write_bytes_atomic(target, kept, private=label == "manifest")
            else:
                make_readable(kept, target)
                replace_whole(kept, target)
            self.staged.pop(0)
        return digest

    def discard(self) -> None:
        """Remove what was kept aside, and the key files this run saved, unless the run
        committed (its outputs may be in place: nothing of it is taken back)."""
        import shutil

        for _, temporary, _, _ in self.staged:
            if isinstance(temporary, bytes):
                continue
            if temporary.is_dir() and not temporary.is_symlink():
                shutil.rmtree(temporary, ignore_errors=True)
            else:
                temporary.unlink(missing_ok=True)
        self.staged.clear()
        if not self.committed:
            for key_path in self.saved_keys:
                key_path.unlink(missing_ok=True)
            self.saved_keys.clear()


def _temporary(target: Path) -> Path:
    """A private temporary beside ``target`` (mode 0600), its stale ones removed."""
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(target)
    return private_temporary(target)


def _write_frame(frame: pl.DataFrame, target: Path, label: str, publisher: _Publisher) -> tuple[int, str]:
    """A release's file, as bytes kept in memory until the commit; (rows, SHA-256)."""
    buffer = io.BytesIO()
    if target.suffix.lower() == ".csv":
        lists = [c for c, t in frame.schema.items() if isinstance(t, pl.List)]
        frame.with_columns(pl.col(c).cast(pl.List(pl.String)).list.join(", ") for c in lists).write_csv(
            buffer
        )
    else:
        frame.write_parquet(buffer)
    data = buffer.getvalue()
    digest = hashlib.sha256(data).hexdigest()
    publisher.put(label, data, target, digest)
    return frame.height, digest


def _sink_table(
    query: pl.LazyFrame,
    target: Path,
    count: Callable[[int], None] | None,
    put: Callable[[Path, Path, str], None],
) -> tuple[int, str]:
    """Stream ``query`` into a temporary file beside ``target``, hash it, and hand it to
    the publisher (``put(temporary, target, sha256)``); returns (rows, sha256)."""
    if count is not None and query.collect_schema().names():
        first = query.collect_schema().names()[0]
        dtype = query.collect_schema()[first]

        def counted(series: pl.Series) -> pl.Series:
            count(len(series))
            return series

        query = query.with_columns(
            pl.col(first).map_batches(counted, return_dtype=dtype, is_elementwise=True)
        )
    temporary = _temporary(target)
    try:
        # Hashed while Polars writes it (the sink appends; see GrowingFileHash).
        follow = GrowingFileHash(temporary)
        try:
            with plugin_errors():  # a compiled step's refusal as the library's own error
                if target.suffix.lower() == ".csv":
                    query.sink_csv(temporary)
                else:
                    query.sink_parquet(temporary)
        except BaseException:
            follow.abandon()
            raise
        digest = follow.finish()
        with open(temporary, "rb") as file:
            os.fsync(file.fileno())
        if target.suffix.lower() == ".csv":
            rows = pl.scan_csv(temporary).select(pl.len()).collect().item()
        else:
            rows = pl.scan_parquet(temporary).select(pl.len()).collect().item()
        put(temporary, target, digest)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return int(rows), digest


def _recorded(book: Any, run: str, manifest_path: Path) -> dict[str, str]:
    """What the recorded run ``run`` released (output -> SHA-256), to check a re-run by.

    A run recorded by an older polars_ppdm has no outputs in the ledger: its manifest
    stands in when it is the very file the ledger names (same SHA-256, same run id);
    otherwise the re-run cannot be checked and is refused."""
    recorded = book.recorded_outputs(run)
    if recorded is not None:
        return cast(dict[str, str], recorded)
    held = book.run_manifest_sha256(run)
    if held is not None and manifest_path.is_file() and file_sha256(manifest_path) == held:
        document = json.loads(manifest_path.read_text(encoding="utf-8"))
        if document.get("run_id") == run:
            return {
                str(o["what"]): str(o["sha256"])
                for o in document.get("outputs", ())
                if isinstance(o, dict) and o.get("sha256") and o.get("what")
            }
    msg = (
        f"run {run[:12]} is recorded in the ledger (an identical earlier run, which spends nothing now), but by an "
        "older polars_ppdm that did not record its outputs' hashes, and its manifest is not at hand "
        f"({str(manifest_path)!r} is missing or is another run's): whether this run would release the same bits "
        "cannot be checked, so it is refused rather than released for free. Nothing was published or spent."
    )
    raise ReleaseMismatchError(msg)


def _categories_of(step: RRDisguise, column: str) -> list[Any] | None:
    cats = step.categories
    return cats.get(column) if isinstance(cats, dict) else cats


def check_values_per_unit(
    pipeline: Pipeline, files: list[Path], fmt: InputFormat, rows: int | None = None
) -> None:
    """Refuse, before anything is reserved, data that a randomized-response step would
    refuse or be charged too little for:

    - a value outside the step's ``categories`` (``rr_disguise`` refuses it; the message
      here names the step and column, never the value), in one pass over those columns;
    - some privacy unit with more distinct values of a column than the step's declared
      ``max_values_per_unit`` (default 1): each distinct value is one more epsilon-LDP
      release of the unit's column (the coins are keyed by unit, column and value), and
      the step is charged for ``max_values_per_unit`` of them.  Counted exactly, per unit,
      for the units :func:`repeated_units` finds in more than one row (``rows``: the
      inputs' row count, counted when None);
    - a null in a column that an ``rr_support`` or ``rr_apriori`` release reads: a
      disguised null carries no answer, so the release would refuse it after the
      perturbed table had been written (a pipeline drops no rows);
    - a null in a column of a step that did not say ``nulls = "keep"``: randomized
      response publishes a null as null, so whether a value is missing would go out
      undisguised, which no epsilon bounds;
    - a null, NaN or infinity in a column a DP release bounds (``dp_histogram``,
      ``dp_quadtree``, ``dp_kmeans``, a ``dp_group_by`` aggregate's, in any row, even one
      its groups leave out): the release refuses it, which came after the budget had
      been reserved.

    The messages carry no count or value from the data."""
    key = pipeline.dataset.key
    bounds: dict[str, tuple[str, int]] = {}
    outside: dict[str, tuple[str, list[Any]]] = {}
    missing: dict[str, str] = {}  # a column whose nulls would be published -> its step
    for index, step in enumerate(pipeline.perturb, 1):
        label = step_label("perturb", index, step)
        if getattr(step, "nulls", "keep") == "refuse":  # a perturbation's (attack review 75: noise's too)
            missing.update(dict.fromkeys(step.columns, label))
        if not isinstance(step, RRDisguise):
            continue
        for column in step.columns:
            if key is not None and not step.no_finite_epsilon:
                bounds[column] = (label, step.values_per_unit)
            cats = _categories_of(step, column)
            if cats:
                outside[column] = (label, cats)
    counted: dict[str, str] = {}  # a column a counting release reads -> the first such release
    bounded: dict[str, str] = {}  # a column a DP release bounds -> the first such release
    for index, release in enumerate(pipeline.release, 1):
        if isinstance(release, RRSupport | RRApriori):
            for column in release.columns:
                counted.setdefault(column, step_label("release", index, release))
        read = (
            release.columns
            if isinstance(release, DPHistogram | DPQuadtree | DPKMeans)
            else [a.column for a in release.aggregates if a.column is not None]
            if isinstance(release, DPGroupBy)
            else []
        )
        for column in read:
            bounded.setdefault(column, step_label("release", index, release))
    if not bounds and not outside and not counted and not missing and not bounded:
        return
    stray = {
        c: pl.col(c).is_not_null() & ~pl.col(c).cast(pl.String).is_in([str(v) for v in cats])
        for c, (_, cats) in outside.items()
    }
    found: dict[str, Any] = {}
    over: list[str] = []
    try:
        if outside or counted or missing or bounded:
            nullable = counted.keys() | missing.keys() | bounded.keys()
            frame = scan(files, fmt)
            schema = frame.collect_schema()
            floats = [c for c in bounded if c in schema and schema[c].is_float()]
            query = frame.select(
                *(stray[c].any().alias(f"outside {c}") for c in outside),
                *(pl.col(c).is_null().any().alias(f"null {c}") for c in nullable),
                *(
                    (pl.col(c).is_nan() | pl.col(c).is_infinite()).any().alias(f"nonfinite {c}")
                    for c in floats
                ),
            )
            found = query.collect().row(0, named=True)
        if bounds:
            assert key is not None
            over = columns_over_bound(scan(files, fmt), key, {c: b for c, (_, b) in bounds.items()}, rows)
    except (pl.exceptions.PolarsError, OSError) as error:
        msg = f"[dataset] inputs cannot be read: {withheld(error)}"
        raise InputError(msg) from None
    problems = [
        f"{outside[c][0]}, field 'categories': column {c!r} holds values outside its categories; rr_disguise "
        "disguises only the declared values (a public domain): list every value the column can hold."
        for c in outside
        if found[f"outside {c}"]
    ]
    problems += [
        f"{missing[c]}, field 'nulls': column {c!r} has null values. A perturbation disguises values, not "
        "whether one is missing: a null is published as null, which no epsilon bounds. Fill them before the run "
        "(with a value or category of the column: who did not answer is then disguised like the others), or say "
        'nulls = "keep" on the step to publish them as they are.'
        for c in missing
        if found[f"null {c}"]
    ]
    problems += [
        f"{counted[c]}: column {c!r} has null values, and a disguised null carries no answer for it to count; "
        "a pipeline drops no rows: give it an input without them, or leave the release out."
        for c in counted
        if found[f"null {c}"] and c not in missing
    ]
    problems += [
        f"{bounded[c]}: column {c!r} has null, NaN or infinite values, which a DP release refuses (none is a "
        "value to bound or count); a pipeline drops no rows: give it an input without them."
        for c in bounded
        if found[f"null {c}"] or found.get(f"nonfinite {c}")
    ]
    problems += [
        f"{bounds[c][0]}, field 'max_values_per_unit': some privacy unit ({key!r}) has more distinct values of "
        f"column {c!r} than the bound {bounds[c][1]}{'' if bounds[c][1] > 1 else ' (the default)'}."
        for c in over
    ]
    if problems:
        msg = "\n".join(problems)
        if over:
            msg += (
                "\nEach distinct value of a unit's column is one more epsilon-LDP release of it (the coins are keyed "
                "by unit, column and value) and the step is charged epsilon x max_values_per_unit: declare a public "
                "bound the data keeps (max_values_per_unit = N on the step)."
            )
        raise PipelineError(msg + " Nothing was reserved or released.")


def columns_over_bound(units: pl.LazyFrame, key: str, bounds: dict[str, int], rows: int | None) -> list[str]:
    """The columns of ``bounds`` of which some unit (``key``) of ``units`` holds more
    distinct values (a null counted as one) than its bound: counted exactly for the units
    :func:`repeated_units` finds in more than one of the ``rows`` rows (counted when
    None), as a unit in one row holds one value."""
    if rows is None:
        rows = int(units.select(pl.len()).collect().item())
    repeated = repeated_units(units, key, rows)
    if repeated is not None:
        if not repeated.height:
            return []
        units = units.join(repeated.lazy(), left_on=_unit_hash(key), right_on="hash", how="semi")
    found = (
        units.group_by(key)
        .agg(pl.col(c).n_unique().alias(f"values {c}") for c in bounds)
        .select((pl.col(f"values {c}").max() > bound).alias(c) for c, bound in bounds.items())
        .collect()
        .row(0, named=True)
    )
    return [c for c in bounds if found[c]]


def _unit_hash(key: str) -> pl.Expr:
    """A 64-bit hash of the privacy unit, the same in every pass of one process (equal
    keys, nulls included, hash alike; a collision only adds rows to the exact count)."""
    return pl.col(key).hash(seed=0)


#: The share of rows flagged by the repeat screen past which it gives up: most units
#: repeat (an events table), so the exact count sees most rows anyway, and the semi-join
#: of the flagged units would cost more than it saves (10M units of 10 rows: 12.5 s and
#: 2.5 GB through the screen, 3.6 s and 1.7 GB counting every unit).
REPEATS_WORTH_SCREENING = 0.01


def repeated_units(units: pl.LazyFrame, key: str, rows: int) -> pl.DataFrame | None:
    """The hashes (column ``hash``) of a superset of the units of ``units`` that occur in
    more than one of its ``rows`` rows, found in bounded memory
    (:mod:`polars_ppdm.kernels.repeats`); None without the compiled screen, or where more
    than :data:`REPEATS_WORTH_SCREENING` of the rows are flagged (it stops there): every
    unit is then counted.

    The screen is offered every row of the batches Polars materialises (``sink_batches``),
    never run as a predicate: Polars may push a predicate into the scan and evaluate it
    on a row group's dictionary, or once on a constant column, where a repeated key would
    be offered once.  In several passes, each pass offers the keys of its residue alone,
    to a filter sized for them."""
    count = passes(rows)
    hashed = units.select(_unit_hash(key).alias("hash"))
    flagged: list[np.ndarray] = []
    limit = max(1, int(rows * REPEATS_WORTH_SCREENING))
    for part in range(count):
        screened = screen(math.ceil(rows / count))
        if screened is None:
            return None

        def offer(batch: pl.DataFrame, screened: RepeatScreen = screened, part: int = part) -> bool:
            hashes = batch["hash"].to_numpy()
            if count > 1:
                hashes = hashes[hashes % np.uint64(count) == part]
            flagged.append(hashes[screened.offer(hashes)])
            return sum(f.size for f in flagged) > limit  # True stops the scan

        hashed.sink_batches(offer, chunk_size=1 << 20, maintain_order=False, engine="streaming")
        if sum(f.size for f in flagged) > limit:
            return None
    found = pl.Series("hash", np.concatenate(flagged) if flagged else np.empty(0, np.uint64), pl.UInt64)
    return found.unique().to_frame()


def check_steps_on_schema(pipeline: Pipeline, schema: pl.Schema, fmt: InputFormat | None = None) -> None:
    """Build the run's perturbed query and its randomized-response releases over an
    empty frame of the inputs' schema: every check a step makes from its columns' dtypes
    and its parameters (a k-ary ``rr_disguise`` on a String column without
    ``categories``, a Date column, ...) is made here, before anything is reserved, and
    reported by step.  No row is read; the secret is not needed (a throwaway one).
    For CSV inputs (``fmt``), a column read as text where a step needs numbers gets the
    reader options that would read it as numbers."""
    import polars_ppdm
    from polars_ppdm.exceptions import InvalidParameterError

    throwaway = Secret(os.urandom(32))
    frame: Any = pl.LazyFrame(schema=schema)
    for index, step in enumerate(pipeline.perturb, 1):
        single = pipeline.model_copy(update={"perturb": [step]})
        try:
            frame = _perturbed(single, frame, throwaway, polars_ppdm)
            frame.collect_schema()
        except InvalidParameterError as error:
            msg = f"{step_label('perturb', index, step)}: {error}"
            if fmt is not None and fmt.kind == "csv" and "Got dtype String" in msg:
                msg += (
                    " A CSV column is read as text when some value in it is not a number: a decimal comma needs "
                    "[dataset.csv] decimal_comma = true, a missing-value marker (NA, -) null_values, and a column "
                    "whose first rows misled the inference its type in types."
                )
            raise PipelineError(msg) from None
    for index, release in enumerate(pipeline.release, 1):
        if isinstance(release, RRSupport | RRApriori):
            try:
                got = _release_query(pipeline, release, frame, polars_ppdm)
                if isinstance(got, pl.LazyFrame):
                    got.collect_schema()
            except InvalidParameterError as error:
                msg = f"{step_label('release', index, release)}: {error}"
                raise PipelineError(msg) from None


def check_not_backwards(pipeline: Pipeline, throughs: dict[str, int], book: Any) -> None:
    """Refuse a new run that would publish a continual release through an earlier period
    than the ledger says it has published (``--as-of`` going back would overwrite the
    published table with a shorter one); an identical re-run of an earlier run is fine
    (it reproduces that run's bits and spends nothing)."""
    for label, through in throughs.items():
        held = book.tree(pipeline.dataset.name, tree_name(pipeline, label))
        latest = None if held is None else held[2]["period"].max()
        if latest is not None and through < int(latest):
            msg = (
                f"{label}: the release has published periods up to {latest}; --as-of would publish only up to "
                f"{through}, overwriting its table with an older one. Give --as-of {int(latest) + 1} or later "
                "(or re-run the identical earlier run: same inputs and --as-of, which spends nothing)."
            )
            raise PipelineError(msg)


def check_continual_state(pipeline: Pipeline, schema: pl.Schema, book: Any) -> None:
    """Each continual release's period column against ``start``, and its configuration
    against the tree the ledger keeps (a release's groups, horizon, rho and bound never
    change over its horizon): refused before anything is reserved."""
    from polars_ppdm.dp.continual import release_config

    for index, step in enumerate(pipeline.release, 1):
        if not isinstance(step, DPContinualCounts):
            continue
        label = step_label("release", index, step)
        dtype = schema[step.period]
        dated = dtype == pl.Date or isinstance(dtype, pl.Datetime)
        if dated != (step.start is not None) or not (dated or dtype.is_integer()):
            msg = (
                f"{label}, field 'period': the column {step.period!r} is {dtype}; a date column needs 'start' (the "
                "first day of period 0), an integer column (period numbers) none."
            )
            raise PipelineError(msg)
        held = None if book is None else book.tree(pipeline.dataset.name, tree_name(pipeline, label))
        if held is None:
            continue
        groups = pl.DataFrame(step.public_groups).select(step.by)
        config = release_config(
            step.title,
            groups,
            schema,
            step.horizon,
            step.rho,
            step.max_contributions,
            step.start,
            step.every,
            pipeline.dataset.key,
        )
        if held[0] != config:
            msg = (
                f"{label}: the ledger keeps this continual release with other parameters (groups, horizon, rho, "
                "max_contributions, start, every or the privacy unit); they do not change over its horizon. Restore them, or start a new release "
                "(a new step, charged anew)."
            )
            raise PipelineError(msg)


def _interrupted_note(error: BaseException, note: str) -> None:
    if isinstance(error, BaseException) and hasattr(error, "add_note"):
        error.add_note(note)


def _changed_input(pinned: PinnedInputs, error: BaseException) -> InputChangedError | None:
    """When a re-run's outputs differ from the recorded ones, an input that changed under
    the run is the likelier cause, and the one to report."""
    if not isinstance(error, ReleaseMismatchError) or isinstance(error, InputChangedError):
        return None
    try:
        pinned.check_unchanged()
    except InputChangedError as changed:
        return changed
    return None


def _recorded_as_published(book: Any, run: str) -> bool:
    """Whether the ledger holds ``run`` as published (False when it cannot be read: the
    run then counts as not published, and its reservation as spent)."""
    try:
        runs = book.table().filter(pl.col("run_id") == run)
    except Exception:
        return False
    return bool(runs.height) and bool((runs["status"] == "succeeded").any())


def _settle_failed_run(book: Any, run: str, new: bool, publisher: _Publisher, error: BaseException) -> None:
    """After a run failed (or was interrupted): take back what was kept aside and, when
    nothing was published, the reservation; say which on the error (a note)."""
    if new and not publisher.committed and _recorded_as_published(book, run):
        # Interrupted after the COMMIT, before publish returned.  (An identical re-run's
        # id is recorded as published by the run it repeats: only a new run asks.)
        publisher.committed = True
    if publisher.committed:
        mark_recorded(error)  # before the clean-up, which a second Ctrl-C may cut short
    publisher.discard()
    if publisher.committed:
        _interrupted_note(
            error,
            "The ledger had recorded the run as published when this happened: its epsilon stays spent and some "
            "outputs may be missing; running the same pipeline again puts them in place and spends nothing.",
        )
        return
    if not new:
        _interrupted_note(error, "Nothing was published and nothing spent (an identical earlier run paid).")
        return
    try:
        withdrawn = book.withdraw(run)
    except Exception as failure:  # the ledger itself failed: it keeps the reservation (the safe side)
        _interrupted_note(
            error,
            f"Nothing was published, but the reservation could not be withdrawn ({failure}): the ledger shows "
            "the run reserved and its epsilon spent.",
        )
        return
    _interrupted_note(
        error,
        "Nothing was published and nothing spent (the reservation was withdrawn)."
        if withdrawn
        else "Nothing was published by this run; its epsilon stays spent, as an identical run published under it.",
    )


def run_pipeline(
    path: str | os.PathLike[str],
    *,
    ledger: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    engine: str | None = None,
    as_of: dt.date | int | None = None,
) -> RunResult:
    """Run the pipeline file at ``path`` (see the module's docstring for the order).

    ``engine`` (``"polars"`` or ``"spark"``) overrides the file's ``engine``; both give the
    same outputs bit for bit, the same run id, and charge the same ledger (a run on one
    engine is an identical re-run of the same run on the other).  ``as_of`` (the run's
    date, default today in UTC; or the current period's number) says which periods the
    continual releases publish: those complete before it.

    Raises
    ------
    PipelineError
        An invalid pipeline, secret source, path or column set (exit 2).
    BudgetExceededError
        Not enough budget left (exit 3); nothing read, nothing spent.
    InputError
        An input missing or unreadable (exit 4).
    ReleaseMismatchError
        An input changed while the run read it (:class:`InputChangedError`), or a re-run
        computed other bits than recorded (exit 6); nothing published, nothing spent.
    """
    progress = progress or Progress()
    started = _now()
    source = Path(path)
    pipeline = load_pipeline(source)
    engine = check_engine(engine, pipeline.engine)
    pipeline_sha256 = file_sha256(source)
    book_path = ledger_path(pipeline, ledger)
    check_paths(pipeline, pipeline_file=source, ledger=book_path)
    secret = read_secret(pipeline)
    name = pipeline.dataset.name
    budget, unit = pipeline.dataset.budget, pipeline.dataset.unit
    throughs = continual_throughs(pipeline, as_of)

    from polars_ppdm.ledger import Ledger

    book_path.parent.mkdir(parents=True, exist_ok=True)
    book = Ledger(book_path)
    open_dataset(book, pipeline, book_path)
    # A continual release is charged by the run that starts its tree, once.
    spends = pipeline.spends(started=started_trees(pipeline, throughs, book))
    needed = math.fsum(eps for _, eps, _ in spends)
    # A run of this pipeline killed on this host before its commit published nothing: its
    # reservation is taken back before this run's budget is counted, once nothing of it is
    # left on disk (its temporaries beside the outputs may hold whole releases; one that
    # cannot be removed keeps the reservation spent).  Another pipeline's killed runs left
    # theirs beside its own outputs: that pipeline's next run takes them back.
    # The pipeline by its real path: as typed, "pipeline.toml" in two folders was one
    # pipeline, and one file by two spellings was two.
    reclaimed = (
        book.reclaim(name, pipeline=str(source.resolve())) if _leftovers_removed(pipeline, book_path) else []
    )
    left = book.remaining(name)
    pinned: PinnedInputs | None = None
    if needed > left * (1 + 1e-12) + 1e-15:
        # Short of budget: only an identical re-run may go on; an input that cannot even
        # be opened cannot be one.
        try:
            pinned = PinnedInputs(expand(pipeline))
            candidate = run_id(pipeline, pinned.fingerprints, secret, throughs)
        except (InputError, OSError):
            raise _refusal(name, needed, left, budget, unit) from None
        if book.run_spent(candidate) is None:
            raise _refusal(name, needed, left, budget, unit)
    files = expand(pipeline) if pinned is None else pinned.files
    fmt = input_format(pipeline, files)
    if engine == "spark":
        spark_engine.check_for_spark(pipeline, fmt)
    # Fingerprinted before any row is read; checked again before anything is published.
    pinned = pinned or PinnedInputs(files)
    inputs: list[InputFile] = metadata(files, fmt)
    schema = read_schema(files, fmt)
    check_columns(pipeline, schema)
    check_steps_on_schema(pipeline, schema, fmt)
    check_continual_state(pipeline, schema, book)
    check_readable(files, fmt)
    if engine == "spark":
        spark_engine.check_types_for_spark(schema)
        spark_engine.check_csv_values(files, fmt, schema)
    label_of = {i: step_label("perturb", i, s) for i, s in enumerate(pipeline.perturb, 1)}
    keys = _check_key_files(pipeline, secret, label_of)
    counts = [item.rows for item in inputs]
    check_values_per_unit(pipeline, files, fmt, None if None in counts else sum(cast(list[int], counts)))
    for item, digest in zip(inputs, pinned.fingerprints, strict=True):
        item.fingerprint = digest
    this_run = run_id(pipeline, pinned.fingerprints, secret, throughs)
    if book.run_spent(this_run) is None:
        check_not_backwards(pipeline, throughs, book)

    manifest = Manifest(
        pipeline=str(source),
        pipeline_sha256=pipeline_sha256,
        dataset=name,
        run_id=this_run,
        secret_fingerprint=secret.fingerprint(),
        started=started,
        inputs=[
            {
                "path": str(i.path),
                "bytes": i.bytes,
                "rows": i.rows,
                "fingerprint": keyed_fingerprint(secret, str(i.fingerprint)),
            }
            for i in inputs
        ],
        steps=[
            {
                "step": step_label(section, index, step),
                "parameters": step.parameters(),
                "epsilon": step_epsilon(step),
                **({"rho": rho} if (rho := step_rho(step)) is not None else {}),
                # A continual release: the periods this run published (from --as-of).
                **(
                    {"periods_published": [0, throughs[label]]}
                    if (label := step_label(section, index, step)) in throughs
                    else {}
                ),
                **(
                    {"charge": note}
                    if (note := step_charge_note(step, pipeline.dataset.key)) is not None
                    else {}
                ),
            }
            for section, index, step in pipeline.steps()
        ],
        releases=[{"step": label, unit: cost, "delta": delta} for label, cost, delta in spends],
        unit=unit,
        epsilon_delta=book.status(name).delta if unit == "rho" else None,
    )
    manifest_path = pipeline.resolve(pipeline.output.manifest)
    reservation = book.reserve(
        name,
        this_run,
        spends,
        pipeline=str(source.resolve()),
        record_outputs=True,
        unit=unit,
        privacy_unit=pipeline.dataset.key,
    )
    manifest.spent = needed if reservation.new else 0.0
    manifest.identical_rerun = not reservation.new
    publisher = _Publisher(book, this_run, None)
    total_rows = (
        sum(i.rows for i in inputs if i.rows is not None) if all(i.rows is not None for i in inputs) else None
    )
    table_rows: int | None = None
    written: list[Path] = []
    try:
        if not reservation.new:
            publisher.recorded = _recorded(book, this_run, manifest_path)
        for (key_path, _), step in zip(
            keys, [s for s in pipeline.perturb if isinstance(s, Spiral)], strict=True
        ):
            manifest.outputs.append(
                {
                    "path": str(key_path),
                    "what": f"spiral key of {step.title} (mode 0600; its content is not recorded)",
                }
            )
        api = _api(engine)
        if engine == "spark":
            original = spark_engine.scan(spark_engine.session(), files, fmt, schema)
            spark_engine.check_rows(original, total_rows, files, fmt)
        else:
            original = scan(files, fmt)
        disguised = _perturbed(pipeline, original, secret, api)
        if pipeline.output.table is not None:
            target = pipeline.resolve(pipeline.output.table)
            label = TABLE
            columns = published_columns(pipeline, schema)
            query = disguised.select(columns)
            # The table's rows by their values, for a re-run that cannot compare bytes;
            # Polars' types of them (a Spark run's too) to read a CSV by.
            content = partial(
                published_content,
                content_key(secret),
                csv=target.suffix.lower() == ".csv",
                schema=(
                    _perturbed(pipeline, scan(files, fmt), secret, _api("polars")).select(columns)
                    if engine == "spark"
                    else query
                ).collect_schema(),
            )
            spark = engine == "spark"
            put = partial(publisher.put_table, spark=spark, content=content)
            if spark:  # written by the executors: no row count on the way
                progress.start(label, None)
                table_rows, digest = spark_engine.sink_table(query, target, put=put)
            else:
                advance = progress.start(label, total_rows) if progress.active else None
                table_rows, digest = _sink_table(query, target, advance, put)
            progress.done(label)
            written.append(target)
            manifest.outputs.append(
                {"path": str(target), "what": "perturbed table", "rows": table_rows, "sha256": digest}
            )
        for index, release in enumerate(pipeline.release, 1):
            label = step_label("release", index, release)
            progress.start(label, None)
            if isinstance(release, DPContinualCounts):
                # Its nodes are drawn once and kept: keyed by its tree's secret
                # (continual_secret) and their data, not the run, so the same night
                # reproduces them.
                frame, update = _continual(pipeline, index, release, original, secret, throughs[label], book)
                publisher.trees.append(update)
            else:
                try:
                    with plugin_errors():
                        frame = _release(
                            pipeline, release, original, disguised, release_secret(secret, this_run), api
                        )
                except InvalidParameterError as error:  # the function's words: say which step
                    error.add_note(f"(In {label}.)")
                    raise
            target = pipeline.resolve(release.output)
            rows, digest = _write_frame(frame, target, label, publisher)
            progress.done(label)
            written.append(target)
            manifest.outputs.append({"path": str(target), "what": label, "rows": rows, "sha256": digest})
        pinned.check_unchanged()
        manifest.status, manifest.finished, manifest.exit_code = "succeeded", _now(), EXIT_OK
        publisher.publish(manifest, manifest_path, keys)
    except BaseException as error:
        cause = _changed_input(pinned, error)
        _settle_failed_run(book, this_run, reservation.new, publisher, cause or error)
        if cause is not None:
            raise cause from None
        raise
    return RunResult(
        run_id=this_run,
        dataset=name,
        new=reservation.new,
        epsilon=needed,
        spent=manifest.spent,
        left=book.remaining(name),
        budget=budget,
        manifest=manifest_path,
        rows=table_rows,
        outputs=written,
        reclaimed=reclaimed,
        unit=unit,
    )
