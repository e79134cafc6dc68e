"""A privacy budget that persists across runs: the ledger, an embedded DuckDB file.

An in-memory :class:`~polars_ppdm.BudgetAccountant` forgets what it spent when the
process ends, so a job that runs every night would spend its epsilon again every night.
A :class:`Ledger` keeps, in one DuckDB database file, the budget of each dataset (the unit
of accounting) and every release charged to it: the run, the step, its epsilon, how it
composed, when, the run's status and its manifest's SHA-256.  ``ppdm run`` charges it;
:meth:`Ledger.accountant` hands notebooks a ``BudgetAccountant`` that charges it too.

Runs
    A run reserves the epsilon of all its releases in one transaction, before it reads a
    row: either all of it fits in what is left, or nothing is recorded and
    :class:`~polars_ppdm.exceptions.BudgetExceededError` says what was needed and what is
    left.  A reserved run is spent: if its process dies, the epsilon stays spent (the
    table shows it as such) until :meth:`Ledger.reclaim`, called by the next ``ppdm
    run`` of the dataset on the same host, finds the process gone and no output
    recorded, and withdraws it.  A run that publishes commits with :meth:`Ledger.publish`
    (its outputs' hashes and its success, in one transaction) before it puts a file in
    place; one that failed before that published nothing and takes its reservation back
    with :meth:`Ledger.withdraw`.  A run id names the run's content (the
    pipeline runner hashes the pipeline, its inputs' fingerprints and the secret's
    fingerprint): reserving a run id that is already recorded spends nothing, since keyed
    randomness makes the identical run release the identical bits.

Several processes
    DuckDB lets one process at a time open a database file for writing.  Every operation
    opens the file, runs one transaction and closes it, so the file is held for
    milliseconds; a process that finds it locked retries with growing pauses, and after
    ``timeout`` seconds raises :class:`~polars_ppdm.exceptions.LedgerBusyError` naming the
    file and what to do.  The check "does it fit" and the record "spent" happen in one
    transaction while the file is held, so processes racing for the last of a budget never
    spend more than the budget between them.  Threads of one process are serialised by a
    lock per file.

Deltas
    A dataset may also have a delta budget (default 0), for releases that spend a delta
    (partition selection of :func:`polars_ppdm.dp_group_by`).  Deltas compose as epsilons
    do (basic composition: they add up across runs), and a run must fit both budgets.

What the file holds
    Dataset names, budgets, epsilons, deltas, step names, run ids, statuses, times and
    manifest hashes: never a secret, never a row of data.  The file carries a schema
    version; a file written by a newer polars_ppdm is refused with a message saying so,
    not misread.  Version 2 adds the deltas; a version-1 file is upgraded in place (its
    runs spent delta 0) only when a dataset is given a delta budget, so a ledger that never
    uses a delta stays readable by older releases.  Version 3 adds the SHA-256 of every
    output a run wrote (:meth:`Ledger.record_output`); a file is upgraded to it (and to 2
    on the way) when a run reserves with ``record_outputs=True`` (every ``ppdm run``).
    Runs recorded before it have no recorded outputs (:meth:`Ledger.recorded_outputs`
    says None).  Version 4 (with 3) adds who reserved a run: host, process id and the
    process's start time, so that :meth:`Ledger.reclaim` can withdraw the reservation
    of a run killed before it published anything.

Identical re-runs must release identical bits
    A run id already recorded spends nothing only because the identical run releases
    the identical bits.  ``ppdm run`` records each output's SHA-256 before it puts the
    output in place, and a re-run of the same run id compares every output it computes
    with the recorded ones before it publishes any: other bits (an input replaced
    between its fingerprint and its read, a step that is not deterministic) are refused,
    not released for free.

References
----------
McSherry, "Privacy integrated queries", SIGMOD 2009 (sequential and parallel
composition).  Dwork and Roth, "The algorithmic foundations of differential privacy",
2014, Thm 3.14 (basic sequential composition, which the ledger applies across runs).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import math
import os
import random
import re
import shlex
import stat
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import EllipsisType
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

import polars as pl

from polars_ppdm._durable import file_kind
from polars_ppdm._validation import check_choice, check_real
from polars_ppdm.dp.accountant import (
    UNITS_DO_NOT_ADD,
    BudgetAccountant,
    _Group,
    check_epsilon,
    check_unit_column,
    unit_label,
    unit_refusal,
)
from polars_ppdm.dp.zcdp import rho_of_pure_epsilon
from polars_ppdm.exceptions import (
    BudgetExceededError,
    InvalidParameterError,
    LedgerBusyError,
    LedgerWriteError,
    PPDMError,
)

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "SCHEMA_VERSION",
    "Budget",
    "Ledger",
    "LedgerAccountant",
    "Reservation",
    "TreeUpdate",
    "format_ledger",
]

#: The version of the tables this module writes; a file with a higher one is refused.
SCHEMA_VERSION = 6

# Version 2: deltas.  Added to a version-1 file when a dataset first gets a delta budget.
_UPGRADE_TO_2 = """
ALTER TABLE ppdm_datasets ADD COLUMN delta_budget DOUBLE DEFAULT 0;
ALTER TABLE ppdm_runs ADD COLUMN delta DOUBLE DEFAULT 0;
ALTER TABLE ppdm_releases ADD COLUMN delta DOUBLE DEFAULT 0;
ALTER TABLE ppdm_releases ADD COLUMN delta_charged DOUBLE DEFAULT 0;
"""

# Version 3: the SHA-256 of every output a run wrote, so that a re-run of the same run id
# that would release other bits is refused (not free).  Added (after version 2's columns)
# when a run first asks for it (Ledger.reserve(..., record_outputs=True): ppdm run).
_UPGRADE_TO_3 = """
ALTER TABLE ppdm_runs ADD COLUMN outputs_recorded BOOLEAN;
CREATE TABLE ppdm_outputs (
    run_id VARCHAR NOT NULL,
    output VARCHAR NOT NULL,
    sha256 VARCHAR NOT NULL,
    recorded_at TIMESTAMP NOT NULL,
    PRIMARY KEY (run_id, output)
);
"""

# Version 4: who reserved a run (host, pid, process start), so that a later run on the
# same host can tell a run whose process died before it published anything.
_UPGRADE_TO_4 = "ALTER TABLE ppdm_runs ADD COLUMN owner VARCHAR;"

# Version 5: zCDP datasets (their amounts are rho) and the state of continual releases
# (the published nodes of each tree mechanism, so that a re-run of a period reproduces it
# and no node is ever noised twice).  Added when a dataset is first given a rho budget or
# a continual release first publishes.
_UPGRADE_TO_5 = """
ALTER TABLE ppdm_datasets ADD COLUMN accounting VARCHAR DEFAULT 'pure';
CREATE TABLE ppdm_trees (
    dataset VARCHAR NOT NULL,
    release VARCHAR NOT NULL,
    config_sha256 VARCHAR NOT NULL,
    run_id VARCHAR NOT NULL,
    created TIMESTAMP NOT NULL,
    PRIMARY KEY (dataset, release)
);
CREATE TABLE ppdm_tree_nodes (
    dataset VARCHAR NOT NULL,
    release VARCHAR NOT NULL,
    grp INTEGER NOT NULL,
    level INTEGER NOT NULL,
    idx BIGINT NOT NULL,
    value BIGINT NOT NULL,
    run_id VARCHAR NOT NULL,
    PRIMARY KEY (dataset, release, grp, level, idx)
);
CREATE TABLE ppdm_tree_periods (
    dataset VARCHAR NOT NULL,
    release VARCHAR NOT NULL,
    period BIGINT NOT NULL,
    digest BIGINT NOT NULL,
    run_id VARCHAR NOT NULL,
    PRIMARY KEY (dataset, release, period)
);
"""

# Version 6: the privacy unit a dataset's budget is counted per (``ppdm run`` records
# "column 'person'" or "each row"): epsilons spent per visit and per person do not add up
# to a budget per person.  Added when a dataset is first opened with its unit.
_UPGRADE_TO_6 = "ALTER TABLE ppdm_datasets ADD COLUMN privacy_unit VARCHAR;"

_UPGRADES = {2: _UPGRADE_TO_2, 3: _UPGRADE_TO_3, 4: _UPGRADE_TO_4, 5: _UPGRADE_TO_5, 6: _UPGRADE_TO_6}

#: How a dataset's budget composes, and the unit of its amounts.
_UNITS = {"pure": "epsilon", "zcdp": "rho"}

# Float sums of budget shares (0.1 + 0.2 ...) must not refuse an exact fit (as the accountant).
_SLACK = 1e-12

_STATUSES = ("reserved", "succeeded", "failed", "accountant")
_SHOWN = {
    "reserved": "reserved (run did not finish; budget kept spent)",
    "succeeded": "succeeded",
    "failed": "failed (budget kept spent)",
    "accountant": "spent by a BudgetAccountant",
}

_SCHEMA = """
CREATE TABLE ppdm_ledger_schema (version INTEGER NOT NULL, written_by VARCHAR NOT NULL, created TIMESTAMP NOT NULL);
CREATE TABLE ppdm_datasets (
    dataset VARCHAR PRIMARY KEY,
    epsilon_budget DOUBLE NOT NULL CHECK (epsilon_budget > 0),
    created TIMESTAMP NOT NULL
);
CREATE TABLE ppdm_runs (
    run_id VARCHAR PRIMARY KEY,
    dataset VARCHAR NOT NULL,
    pipeline VARCHAR NOT NULL,
    epsilon DOUBLE NOT NULL CHECK (epsilon >= 0),
    status VARCHAR NOT NULL,
    reserved_at TIMESTAMP NOT NULL,
    finished_at TIMESTAMP,
    manifest_sha256 VARCHAR
);
CREATE TABLE ppdm_releases (
    run_id VARCHAR NOT NULL,
    seq INTEGER NOT NULL,
    step VARCHAR NOT NULL,
    epsilon DOUBLE NOT NULL CHECK (epsilon > 0),
    composition VARCHAR NOT NULL,
    charged DOUBLE NOT NULL CHECK (charged >= 0),
    PRIMARY KEY (run_id, seq)
);
"""

_TABLE_SCHEMA = pl.Schema(
    [
        ("dataset", pl.String()),
        ("run_id", pl.String()),
        ("step", pl.String()),
        ("epsilon", pl.Float64()),
        ("composition", pl.String()),
        ("status", pl.String()),
        ("time", pl.Datetime("us", "UTC")),
        ("manifest_sha256", pl.String()),
        ("charged", pl.Float64()),
        ("delta", pl.Float64()),
        ("delta_charged", pl.Float64()),
    ]
)

# One lock for the ledger transactions of every thread of this process (DuckDB's file
# lock is per process, so it does not part them).  One for all files, not one per path:
# a path does not name a file (a hard link, a bind mount, a case-insensitive file system),
# and two threads that opened one file by two paths overspent its budget and damaged its
# reads.  A transaction takes milliseconds; runs hold no lock between them.
_LEDGER_LOCK = threading.RLock()


def _process_start(pid: int) -> str:
    """When process ``pid`` started (Linux: clock ticks since boot, /proc/PID/stat field
    22), "" where it cannot be read: a reused pid has another start."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            fields = file.read().rsplit(b")", 1)[1].split()
        return fields[19].decode()
    except (OSError, IndexError):
        return ""


def _this_process() -> str:
    import socket

    return f"{socket.gethostname()}\t{os.getpid()}\t{_process_start(os.getpid())}"


def _dead(owner: str | None) -> bool:
    """True only when ``owner`` (:func:`_this_process` of the run's process) surely no
    longer runs: same host, and no process with its pid, or one with another start."""
    import socket

    parts = (owner or "").split("\t")
    if len(parts) != 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # it runs, as another user
    start = _process_start(pid)
    return bool(start and parts[2] and start != parts[2])


def _now() -> _dt.datetime:
    """UTC, naive (the TIMESTAMP columns hold UTC)."""
    return _dt.datetime.now(_dt.UTC).replace(tzinfo=None)


def _fail(name: str, func: str, allowed: str, got: Any) -> NoReturn:
    msg = f"The {name!r} parameter of {func} must be {allowed}. Got {got!r} instead."
    raise InvalidParameterError(msg)


def _check_sha256(name: str, value: Any, func: str) -> None:
    if not isinstance(value, str) or not re.fullmatch(r"[0-9a-fA-F]{64}", value):
        _fail(name, func, "a SHA-256 as 64 hex digits", value)


def _check_name(name: str, value: Any, func: str) -> str:
    if not isinstance(value, str) or not value.strip():
        _fail(name, func, "a non-empty string", value)
    return value


class Reservation(NamedTuple):
    """What :meth:`Ledger.reserve` did: the run, its epsilon, whether it was spent now
    (``new=True``) or by an earlier identical run (``new=False``, nothing spent), and its
    delta."""

    run_id: str
    epsilon: float
    new: bool
    delta: float = 0.0


class TreeUpdate(NamedTuple):
    """A continual release's part of a run's commit (:meth:`Ledger.publish`): its name
    (the step's label and output), configuration digest, the nodes the run drew
    (``group``, ``level``, ``index``, ``value``) and the keyed digests of the periods it
    published first (``period``, ``digest``: no data)."""

    release: str
    config: str
    nodes: pl.DataFrame
    periods: pl.DataFrame


class Budget(NamedTuple):
    """A dataset's budget and what it has spent, in its unit and delta.

    ``accounting`` is "pure" (``epsilon`` and ``spent`` are epsilons; deltas add up) or
    "zcdp" (``epsilon`` and ``spent`` are rho, and ``delta`` is the delta at which the rho
    is stated as an epsilon: :meth:`epsilon_at`)."""

    epsilon: float
    spent: float
    delta: float = 0.0
    spent_delta: float = 0.0
    accounting: str = "pure"
    #: Who one unit of the budget is ("column 'person'", "each row"), None if not recorded.
    privacy_unit: str | None = None

    @property
    def unit(self) -> str:
        """ "epsilon" or "rho": what ``epsilon``, ``spent`` and ``remaining`` count."""
        return _UNITS[self.accounting]

    def epsilon_at(self, rho: float) -> float:
        """zCDP: the epsilon ``rho`` means at the dataset's delta (0 for rho 0)."""
        from polars_ppdm.dp.zcdp import rho_to_epsilon

        return rho_to_epsilon(rho, self.delta) if rho > 0 else 0.0

    def unit_conflict(self, unit: str) -> bool:
        """Whether spending per ``unit`` (a :func:`unit_label`) would mix units: the
        dataset has spent per another (a unit recorded by a run that spent nothing in the
        end, withdrawn, binds nothing)."""
        return self.privacy_unit not in (None, unit) and (self.spent > 0 or self.spent_delta > 0)

    @property
    def remaining(self) -> float:
        return _left(self.epsilon, self.spent)

    @property
    def remaining_delta(self) -> float:
        return _left(self.delta, self.spent_delta)


def unit_differs(dataset: str, path: str, held: str, asked: str) -> str:
    """Why a dataset cannot spend per another privacy unit than the one it was opened with."""
    return (
        f"dataset {dataset!r} of the ledger {path!r} counts its budget per privacy unit {held}, and this run "
        f"would spend it per {asked}: {UNITS_DO_NOT_ADD}. Keep the dataset's unit, or give a new dataset name "
        f"with a budget of its own (what this one spent stays spent, per {held})."
    )


def _left(budget: float, spent: float) -> float:
    """What is left; float dust of an exact fit (1e-5 - (4e-6 + 6e-6)) is nothing left."""
    left = budget - spent
    return left if left > budget * _SLACK else 0.0


class Ledger:
    """A persistent privacy-budget ledger in an embedded DuckDB database file.

    Parameters
    ----------
    path : str or os.PathLike
        The database file; created (with its tables) by the first operation.  Its folder
        must exist.
    timeout : float
        Seconds to keep retrying while another process holds the file, then
        :class:`~polars_ppdm.exceptions.LedgerBusyError`.  0: try once.

    Notes
    -----
    Every method opens the file, runs one transaction and closes it (see the module's
    documentation); a ``Ledger`` object holds no connection and may be shared by threads.

    Examples
    --------
    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> ledger = Ledger(os.path.join(folder, "ledger.duckdb"))
    >>> ledger.open_dataset("visits", epsilon_budget=1.0)
    >>> ledger.reserve("visits", "run-1", [("histogram", 0.3), ("kmeans", 0.5)])
    Reservation(run_id='run-1', epsilon=0.8, new=True, delta=0.0)
    >>> ledger.reserve("visits", "run-1", [("histogram", 0.3), ("kmeans", 0.5)])  # the same run again
    Reservation(run_id='run-1', epsilon=0.8, new=False, delta=0.0)
    >>> ledger.complete("run-1", manifest_sha256="ab" * 32)
    >>> round(ledger.remaining("visits"), 6)
    0.2
    >>> ledger.reserve("visits", "run-2", [("histogram", 0.3)])
    Traceback (most recent call last):
    ...
    polars_ppdm.exceptions.BudgetExceededError: run 'run-2' needs epsilon 0.3 on dataset 'visits' but the ledger has 0.2 left of 1 (spent 0.8); nothing was spent or released. ...
    >>> ledger.table("visits").select("run_id", "step", "epsilon", "status")
    shape: (2, 4)
    ┌────────┬───────────┬─────────┬───────────┐
    │ run_id ┆ step      ┆ epsilon ┆ status    │
    │ ---    ┆ ---       ┆ ---     ┆ ---       │
    │ str    ┆ str       ┆ f64     ┆ str       │
    ╞════════╪═══════════╪═════════╪═══════════╡
    │ run-1  ┆ histogram ┆ 0.3     ┆ succeeded │
    │ run-1  ┆ kmeans    ┆ 0.5     ┆ succeeded │
    └────────┴───────────┴─────────┴───────────┘
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        if not isinstance(path, str | os.PathLike) or not os.fspath(path):
            _fail("path", "Ledger", "a file path (str or os.PathLike)", path)
        self.path = Path(os.fspath(path)).expanduser()
        if self.path.is_dir():
            _fail("path", "Ledger", "a file path, not a folder", str(path))
        if not self.path.parent.is_dir():
            _fail("path", "Ledger", "a file in an existing folder", str(path))
        self.timeout = check_real("timeout", timeout, "Ledger", low=0)
        self._lock = _LEDGER_LOCK

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    # --- opening the file --------------------------------------------------------------

    def _check_regular(self) -> None:
        """Refuse a path that is not a regular file (or absent): DuckDB's open() of a FIFO
        waits for a writer forever (no timeout applies), and a device is not a ledger."""
        try:
            mode = os.stat(self.path).st_mode
        except FileNotFoundError:
            return
        except OSError as error:
            msg = f"Could not open the ledger file {str(self.path)!r}: {error.strerror or type(error).__name__}."
            raise PPDMError(msg) from None
        if not stat.S_ISREG(mode):
            msg = (
                f"The ledger file {str(self.path)!r} is {file_kind(mode)}, not a regular file: a ledger is a "
                "DuckDB database file. Give the path of a regular file (a new one is created)."
            )
            raise InvalidParameterError(msg)

    def _connect(self, read_only: bool = False) -> duckdb.DuckDBPyConnection:
        """Open the file (read-write, or read-only for a reading operation on an existing
        file, which also works on a read-only mount), retrying while another process holds it."""
        import duckdb

        self._check_regular()
        read_only = read_only and self.path.exists()
        if not self.path.exists():
            self._create_whole()
        deadline = time.monotonic() + self.timeout
        pause = 0.005
        while True:
            try:
                return duckdb.connect(str(self.path), read_only=read_only)
            except duckdb.IOException as err:
                text = str(err)
                if "Could not set lock" not in text and "Conflicting lock" not in text:
                    msg = f"Could not open the ledger file {str(self.path)!r}: {text}"
                    raise PPDMError(msg) from None
                left = deadline - time.monotonic()
                if left <= 0:
                    raise LedgerBusyError(self._busy_message(text)) from None
                time.sleep(min(pause * random.uniform(0.5, 1.5), left))
                pause = min(pause * 2, 0.05)
            except duckdb.Error as err:
                msg = f"Could not open the ledger file {str(self.path)!r}: {err}"
                raise PPDMError(msg) from None

    def _create_whole(self) -> None:
        """Create a new, empty database file in one step.

        DuckDB's connect() creates the file and only then writes its header: a second
        process opening it in between (two runs racing to create one ledger) is told "not a
        valid DuckDB database file". So the file is built under a private name in the same
        folder and hard-linked into place; the link fails if the path exists, and whoever
        comes second opens the first one's complete file. Where it cannot (a folder that is
        not writable, a file system without hard links), DuckDB creates the file itself and
        reports its own error."""
        import duckdb

        draft = self.path.with_name(f".{self.path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.new")
        try:
            duckdb.connect(str(draft)).close()
            with contextlib.suppress(FileExistsError):
                os.link(draft, self.path)
        except (duckdb.Error, OSError):
            pass
        finally:
            for leftover in (draft, draft.with_name(draft.name + ".wal")):
                with contextlib.suppress(OSError):
                    leftover.unlink()

    def _busy_message(self, text: str) -> str:
        holder = re.search(r"PID (\d+)", text)
        who = f"another process (PID {holder.group(1)})" if holder else "another process"
        return (
            f"The ledger file {str(self.path)!r} is held by {who}, still after {self.timeout:g} s (the "
            f"timeout). Another run is probably recording its budget there: try again when it has "
            f"finished, or wait longer (Ledger(path, timeout=SECONDS)). If no run is going on, stop the "
            f"process that holds the file open (a Python session or DuckDB shell connected to it)."
        )

    @contextlib.contextmanager
    def _transaction(self, *, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """One transaction on the file; ``read_only`` for operations that only read.

        A DuckDB error inside it (a full disk, a file that cannot be written) becomes a
        :class:`~polars_ppdm.exceptions.LedgerWriteError` naming the file: the
        transaction was rolled back, so the ledger is as it was before it."""
        import duckdb

        with self._lock:
            con = self._connect(read_only)
            try:
                new = self._check_schema(con)
                if new and read_only:  # a file with no tables yet: made a ledger, as for writing
                    con.close()
                    con = self._connect()
                    new = self._check_schema(con)
                con.execute("BEGIN TRANSACTION")
                if new:
                    self._create_schema(con)
                yield con
                con.execute("COMMIT")
            except duckdb.Error as error:
                with contextlib.suppress(Exception):
                    con.execute("ROLLBACK")
                lines = str(error).strip().splitlines()
                msg = (
                    f"The ledger file {str(self.path)!r} could not be "
                    f"{'read' if read_only else 'written'} ({type(error).__name__}: "
                    f"{lines[0][:300] if lines else ''}); the transaction was rolled back, the ledger is as it was."
                )
                raise LedgerWriteError(msg) from None
            except BaseException:
                with contextlib.suppress(Exception):
                    con.execute("ROLLBACK")
                raise
            finally:
                con.close()

    def _check_schema(self, con: duckdb.DuckDBPyConnection) -> bool:
        """Check the file's schema version (before the transaction: a failed query would end
        it); True if the file is new and needs the tables."""
        import duckdb

        try:
            found = con.execute(
                "SELECT max(version), any_value(written_by) FROM ppdm_ledger_schema"
            ).fetchone()
        except duckdb.CatalogException:
            # Only the first operation on a file gets here (duckdb_tables() is slow to start).
            query = "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
            tables = sorted(row[0] for row in con.execute(query).fetchall())
            if tables:
                msg = (
                    f"The file {str(self.path)!r} is a DuckDB database but not a polars_ppdm ledger (it has "
                    f"the tables {tables} and no ppdm_ledger_schema). Give a new file or an existing ledger."
                )
                raise PPDMError(msg) from None
            return True
        version = found[0] if found else None
        if version is None or version > SCHEMA_VERSION:
            written_by = found[1] if found else "?"
            msg = (
                f"The ledger file {str(self.path)!r} has schema version {version} (written by {written_by}); "
                f"this polars_ppdm reads version {SCHEMA_VERSION} and older. Upgrade polars_ppdm to use it; "
                f"the file was left untouched."
            )
            raise PPDMError(msg)
        return False

    @staticmethod
    def _create_schema(con: duckdb.DuckDBPyConnection) -> None:
        from polars_ppdm import __version__

        # Created as version 1: the delta columns come with the first delta budget, so a
        # ledger that never uses a delta stays readable by older releases.
        con.execute(_SCHEMA)
        con.execute("INSERT INTO ppdm_ledger_schema VALUES (1, ?, ?)", [f"polars_ppdm {__version__}", _now()])

    @staticmethod
    def _version(con: duckdb.DuckDBPyConnection) -> int:
        found = con.execute("SELECT max(version) FROM ppdm_ledger_schema").fetchone()
        return int(found[0]) if found is not None and found[0] is not None else 0

    @classmethod
    def _has_deltas(cls, con: duckdb.DuckDBPyConnection) -> bool:
        return cls._version(con) >= 2

    @classmethod
    def _has_outputs(cls, con: duckdb.DuckDBPyConnection) -> bool:
        return cls._version(con) >= 3

    @classmethod
    def _has_owner(cls, con: duckdb.DuckDBPyConnection) -> bool:
        return cls._version(con) >= 4

    @classmethod
    def _upgrade_to(cls, con: duckdb.DuckDBPyConnection, version: int) -> None:
        """Bring the file to schema ``version``, one version after the other, in the
        transaction: 2 adds the deltas, 3 the outputs' hashes, 4 who reserved a run."""
        from polars_ppdm import __version__

        for step in range(cls._version(con) + 1, version + 1):
            con.execute(_UPGRADES[step])
            con.execute(
                "INSERT INTO ppdm_ledger_schema VALUES (?, ?, ?)",
                [step, f"polars_ppdm {__version__}", _now()],
            )

    @classmethod
    def _upgrade(cls, con: duckdb.DuckDBPyConnection) -> None:
        cls._upgrade_to(con, 2)

    @classmethod
    def _upgrade_outputs(cls, con: duckdb.DuckDBPyConnection) -> None:
        cls._upgrade_to(con, 3)

    @classmethod
    def _upgrade_owner(cls, con: duckdb.DuckDBPyConnection) -> None:
        cls._upgrade_to(con, 4)

    @classmethod
    def _has_zcdp(cls, con: duckdb.DuckDBPyConnection) -> bool:
        return cls._version(con) >= 5

    # --- datasets ------------------------------------------------------------------------

    @classmethod
    def _budget_of(cls, con: duckdb.DuckDBPyConnection, dataset: str) -> Budget | None:
        deltas = cls._has_deltas(con)
        accounting = "coalesce(accounting, 'pure')" if cls._has_zcdp(con) else "'pure'"
        unit = "privacy_unit" if cls._version(con) >= 6 else "NULL"
        row = con.execute(
            f"SELECT epsilon_budget, {'coalesce(delta_budget, 0)' if deltas else '0.0'}, {accounting}, {unit} "
            "FROM ppdm_datasets WHERE dataset = ?",
            [dataset],
        ).fetchone()
        if row is None:
            return None
        # fsum: the same total whatever order DuckDB returns the runs in.
        spent = con.execute(
            f"SELECT epsilon, {'coalesce(delta, 0)' if deltas else '0.0'} FROM ppdm_runs WHERE dataset = ?",
            [dataset],
        ).fetchall()
        return Budget(
            float(row[0]),
            math.fsum(r[0] for r in spent),
            float(row[1]),
            math.fsum(r[1] for r in spent),
            str(row[2]),
            None if row[3] is None else str(row[3]),
        )

    def _known_budget(self, con: duckdb.DuckDBPyConnection, dataset: str, func: str) -> Budget:
        _check_name("dataset", dataset, func)
        budget = self._budget_of(con, dataset)
        if budget is None:
            known = [row[0] for row in con.execute("SELECT dataset FROM ppdm_datasets ORDER BY 1").fetchall()]
            _fail(
                "dataset",
                func,
                f"a dataset of the ledger {str(self.path)!r} ({', '.join(map(repr, known)) or 'it has none yet'}; "
                f"add one with Ledger.open_dataset(dataset, epsilon_budget))",
                dataset,
            )
        return budget

    def open_dataset(
        self,
        dataset: str,
        epsilon_budget: float | None = None,
        delta_budget: float | None = None,
        *,
        rho_budget: float | None = None,
        privacy_unit: str | EllipsisType | None = ...,
    ) -> None:
        """Record ``dataset`` with its total budgets, or check the recorded ones are these.

        ``epsilon_budget`` makes a dataset of pure accounting; ``rho_budget`` one of zCDP
        accounting (amounts in rho: Gaussian releases charge their rho, pure-epsilon ones
        ``epsilon^2 / 2``), exactly one of them.  ``delta_budget`` (in [0, 1)) is, for a
        pure dataset, the total delta its releases may spend; for a zCDP dataset the
        delta at which its rho is stated as an epsilon (default 1e-6).  None (the default)
        checks nothing about it, and a new pure dataset then gets 0.  A different budget
        or accounting is refused: a budget is changed on purpose, with :meth:`set_budget`,
        not by editing a pipeline file.

        ``privacy_unit`` is who one unit of the budget is: the column of the privacy unit
        (``ppdm run`` gives its ``key``), or None for each row, as in the releases'
        ``privacy_unit``.  Refused if the dataset has spent per another unit: epsilons
        spent per visit and per person do not add up to a budget per person.  The unit is
        recorded by the first spend that says it (:meth:`reserve`, :meth:`accountant`).
        Not given (the default), nothing is checked.
        """
        func = "Ledger.open_dataset"
        _check_name("dataset", dataset, func)
        if (epsilon_budget is None) == (rho_budget is None):
            _fail(
                "epsilon_budget",
                func,
                "exactly one of epsilon_budget and rho_budget",
                (epsilon_budget, rho_budget),
            )
        zcdp = rho_budget is not None
        budget_name = "rho_budget" if zcdp else "epsilon_budget"
        budget = check_real(budget_name, rho_budget if zcdp else epsilon_budget, func, low=0, open_low=True)
        delta = (
            None
            if delta_budget is None
            else check_real("delta_budget", delta_budget, func, low=0, high=1, open_high=True)
        )
        if zcdp and delta == 0:
            _fail("delta_budget", func, "in (0, 1) for a zCDP dataset (the delta of its epsilon)", delta)
        accounting = "zcdp" if zcdp else "pure"
        unit: str | None = None  # as recorded: "column 'person'" or "each row"
        if privacy_unit is not ...:
            unit = unit_label(check_unit_column(privacy_unit, func))
        with self._transaction() as con:
            recorded = self._budget_of(con, dataset)
            if recorded is None:
                con.execute(
                    "INSERT INTO ppdm_datasets (dataset, epsilon_budget, created) VALUES (?, ?, ?)",
                    [dataset, budget, _now()],
                )
                if zcdp:
                    delta = 1e-6 if delta is None else delta
                    self._upgrade_to(con, 5)
                    con.execute("UPDATE ppdm_datasets SET accounting = 'zcdp' WHERE dataset = ?", [dataset])
                if delta:
                    self._upgrade(con)
                    con.execute(
                        "UPDATE ppdm_datasets SET delta_budget = ? WHERE dataset = ?", [delta, dataset]
                    )
                return
            if recorded.accounting != accounting:
                msg = (
                    f"Ledger.open_dataset: dataset {dataset!r} of the ledger {str(self.path)!r} has "
                    f"{'a zCDP budget (rho_budget)' if recorded.accounting == 'zcdp' else 'a pure epsilon budget (epsilon_budget)'}, "
                    f"not {'a rho' if zcdp else 'an epsilon'} budget: its spends are counted in {recorded.unit} and "
                    "cannot be converted afterwards. Give the dataset's own kind of budget, or a new dataset name."
                )
                raise InvalidParameterError(msg)
            if unit is not None and recorded.unit_conflict(unit):
                assert recorded.privacy_unit is not None
                raise InvalidParameterError(
                    unit_differs(dataset, str(self.path), recorded.privacy_unit, unit)
                )
            for name, asked, held in (
                (budget_name, budget, recorded.epsilon),
                ("delta_budget", delta, recorded.delta),
            ):
                if asked is not None and not math.isclose(held, asked, rel_tol=_SLACK, abs_tol=0.0):
                    msg = (
                        f"The {name!r} parameter of Ledger.open_dataset must be the budget the ledger "
                        f"{str(self.path)!r} holds for dataset {dataset!r}, {held:g}. Got {asked:g} instead. "
                        f"To change it on purpose, call Ledger.set_budget({dataset!r}, {name}={asked:g}) (it "
                        f"refuses a budget below what is spent)."
                    )
                    raise InvalidParameterError(msg)

    def set_budget(
        self,
        dataset: str,
        epsilon_budget: float | None = None,
        delta_budget: float | None = None,
        *,
        rho_budget: float | None = None,
    ) -> None:
        """Change the total budgets of a recorded dataset (None: keep it); never below what
        it has spent.  ``rho_budget`` for a zCDP dataset, ``epsilon_budget`` for a pure one."""
        func = "Ledger.set_budget"
        budget_name = "rho_budget" if rho_budget is not None else "epsilon_budget"
        asked_budget = rho_budget if rho_budget is not None else epsilon_budget
        if rho_budget is not None and epsilon_budget is not None:
            _fail("rho_budget", func, "one of epsilon_budget and rho_budget", (epsilon_budget, rho_budget))
        budget = (
            None
            if asked_budget is None
            else check_real(budget_name, asked_budget, func, low=0, open_low=True)
        )
        delta = (
            None
            if delta_budget is None
            else check_real("delta_budget", delta_budget, func, low=0, high=1, open_high=True)
        )
        with self._transaction() as con:
            held = self._known_budget(con, dataset, func)
            if budget is not None and budget_name != (
                "rho_budget" if held.accounting == "zcdp" else "epsilon_budget"
            ):
                _fail(
                    budget_name,
                    func,
                    f"{'rho_budget' if held.accounting == 'zcdp' else 'epsilon_budget'}: dataset {dataset!r} counts "
                    f"{held.unit}",
                    asked_budget,
                )
            for name, asked, spent, what in (
                (budget_name, budget, held.spent, held.unit),
                ("delta_budget", delta, held.spent_delta, "delta"),
            ):
                if asked is not None and asked < spent * (1 - _SLACK):
                    _fail(
                        name,
                        func,
                        f"at least what dataset {dataset!r} has spent, {spent:g} (spent {what} cannot be unspent)",
                        asked,
                    )
            if budget is not None:
                con.execute(
                    "UPDATE ppdm_datasets SET epsilon_budget = ? WHERE dataset = ?", [budget, dataset]
                )
            if delta is not None and (delta or self._has_deltas(con)):
                self._upgrade(con)
                con.execute("UPDATE ppdm_datasets SET delta_budget = ? WHERE dataset = ?", [delta, dataset])

    def status(self, dataset: str) -> Budget:
        """The budgets of ``dataset`` and what it has spent (every reserved run, finished or not)."""
        return self._status(dataset, "Ledger.status")

    def _status(self, dataset: str, func: str) -> Budget:
        with self._transaction(read_only=True) as con:
            return self._known_budget(con, dataset, func)

    def budget(self, dataset: str) -> float:
        """The total epsilon budget of ``dataset``."""
        return self._status(dataset, "Ledger.budget").epsilon

    def spent(self, dataset: str) -> float:
        """The epsilon ``dataset`` has spent: every reserved run, finished or not."""
        return self._status(dataset, "Ledger.spent").spent

    def remaining(self, dataset: str) -> float:
        """The epsilon budget of ``dataset`` minus what it has spent."""
        return self._status(dataset, "Ledger.remaining").remaining

    def datasets(self) -> pl.DataFrame:
        """One row per dataset: ``dataset``, ``budget``, ``spent``, ``remaining`` (in its
        ``unit``: epsilon, or rho for a zCDP dataset), ``delta_budget``, ``delta_spent``,
        ``delta_remaining``, ``unit``, ``epsilon_spent`` (a zCDP dataset's spent rho as
        an epsilon at its delta) and ``privacy_unit`` (who one unit of the budget is, as
        recorded by :meth:`open_dataset`; null if never given)."""
        with self._transaction(read_only=True) as con:
            names = [
                row[0] for row in con.execute("SELECT dataset FROM ppdm_datasets ORDER BY dataset").fetchall()
            ]
            rows = []
            for dataset in names:
                b = self._budget_of(con, dataset)
                assert b is not None
                rows.append(
                    (
                        dataset,
                        b.epsilon,
                        b.spent,
                        b.remaining,
                        b.delta,
                        b.spent_delta,
                        b.remaining_delta,
                        b.unit,
                        b.epsilon_at(b.spent) if b.accounting == "zcdp" else b.spent,
                        b.privacy_unit,
                    )
                )
        schema = {
            "dataset": pl.String,
            "budget": pl.Float64,
            "spent": pl.Float64,
            "remaining": pl.Float64,
            "delta_budget": pl.Float64,
            "delta_spent": pl.Float64,
            "delta_remaining": pl.Float64,
            "unit": pl.String,
            "epsilon_spent": pl.Float64,
            "privacy_unit": pl.String,
        }
        return pl.DataFrame(rows, schema=schema, orient="row")

    # --- runs ----------------------------------------------------------------------------

    def run_spent(self, run_id: str) -> float | None:
        """What the run ``run_id`` reserved, or None if the ledger has no such run."""
        _check_name("run_id", run_id, "Ledger.run_spent")
        with self._transaction(read_only=True) as con:
            row = con.execute("SELECT epsilon FROM ppdm_runs WHERE run_id = ?", [run_id]).fetchone()
        return None if row is None else float(row[0])

    def reserve(
        self,
        dataset: str,
        run_id: str,
        releases: Sequence[tuple[str, float] | tuple[str, float, float]],
        *,
        pipeline: str = "",
        record_outputs: bool = False,
        unit: str = "epsilon",
        privacy_unit: str | EllipsisType | None = ...,
    ) -> Reservation:
        """Spend the epsilon of every release of a run, all or nothing, before the run reads a row.

        Parameters
        ----------
        dataset : str
            The dataset charged (recorded by :meth:`open_dataset`).
        run_id : str
            Names the run's content; a run id already recorded spends nothing
            (``Reservation(new=False)``, with the epsilon it spent then).
        releases : sequence of (str, float) or (str, float, float)
            ``(step, epsilon)`` or ``(step, epsilon, delta)`` per release; they compose
            sequentially (their epsilons add up, and their deltas).  Empty: a run that
            releases nothing DP (it is still recorded).
        pipeline : str
            What ran (the pipeline file's name), shown in the table.
        record_outputs : bool
            The run will record the SHA-256 of each output it writes
            (:meth:`record_output`), so that a re-run of the same run id can be checked
            to release the same bits (:meth:`recorded_outputs`).  Upgrades the file to
            schema version 3.
        unit : {"epsilon", "rho"}
            What the releases' amounts are: epsilons (on a zCDP dataset each costs
            ``epsilon^2 / 2`` in rho, as the accountant charges a pure release), or, on a
            zCDP dataset only, their rho.  A zCDP dataset composes no delta: a release
            with one is refused.
        privacy_unit : str or None, optional
            The releases' privacy unit (its column, None for each row): refused if the
            dataset has spent per another, recorded with the dataset by the first run
            that says it.  Not given, nothing is checked.

        Raises
        ------
        BudgetExceededError
            The releases need more epsilon or delta than the dataset has left; nothing
            is recorded.
        """
        func = "Ledger.reserve"
        if unit not in _UNITS.values():
            _fail("unit", func, "'epsilon' or 'rho'", unit)
        _check_name("dataset", dataset, func)
        _check_name("run_id", run_id, func)
        if not isinstance(pipeline, str):
            _fail("pipeline", func, "a string", pipeline)
        if isinstance(releases, str | bytes) or not isinstance(releases, Sequence):
            _fail("releases", func, "a list of (step, epsilon) or (step, epsilon, delta) tuples", releases)
        rows = []
        for release in releases:
            if not isinstance(release, tuple | list) or len(release) not in (2, 3):
                _fail("releases", func, "a list of (step, epsilon) or (step, epsilon, delta) tuples", release)
            step = _check_name("releases", release[0], func)
            epsilon = check_epsilon(release[1], func, name="releases")
            delta = (
                check_real("releases", release[2], func, low=0, high=1, open_high=True)
                if len(release) == 3
                else 0.0
            )
            rows.append((step, epsilon, "sequential", epsilon, delta, delta))
        with self._transaction(read_only=True) as con:
            accounting = self._known_budget(con, dataset, func).accounting
        if accounting == "zcdp" and any(row[4] > 0 for row in rows):
            msg = (
                f"{func}: dataset {dataset!r} counts zCDP (rho), which composes no delta: a release of (epsilon, "
                "delta)-DP is not epsilon^2/2-zCDP (e.g. dp_group_by's partition selection: give it public groups); "
                "nothing was reserved."
            )
            raise BudgetExceededError(msg)
        if unit == "rho" and accounting != "zcdp":
            _fail("unit", func, f"'epsilon' for dataset {dataset!r}, whose budget is a pure epsilon", unit)
        if unit == "epsilon" and accounting == "zcdp":  # a pure release in zCDP: rho = epsilon^2 / 2
            rows = [
                (step, eps, "sequential (zCDP: rho = epsilon^2/2)", rho_of_pure_epsilon(eps), d, d)
                for step, eps, _, _, d, _ in rows
            ]
        return self._reserve(
            dataset,
            run_id,
            rows,
            pipeline=pipeline,
            status="reserved",
            who=f"run {run_id[:12]!r}",  # a pipeline's run id is 64 hex digits: its start, as in the run's messages
            record_outputs=record_outputs,
            unit=None if privacy_unit is ... else unit_label(check_unit_column(privacy_unit, func)),
        )

    def record_output(self, run_id: str, output: str, sha256: str) -> None:
        """Record the SHA-256 of an output (``output`` names it: "perturbed table", a
        release step) of the reserved run ``run_id``; the same again changes nothing.

        A run reserved without ``record_outputs`` (recorded by an older polars_ppdm,
        whose re-run the caller checked otherwise) is marked as recording its outputs
        from now on.

        Raises
        ------
        PPDMError
            The run already recorded other bits for this output (a re-run must release
            what the run released).
        """
        func = "Ledger.record_output"
        _check_name("run_id", run_id, func)
        _check_name("output", output, func)
        _check_sha256("sha256", sha256, func)
        with self._transaction() as con:
            self._record_output(con, run_id, output, sha256, func)

    def _record_output(
        self, con: duckdb.DuckDBPyConnection, run_id: str, output: str, sha256: str, func: str
    ) -> None:
        if con.execute("SELECT 1 FROM ppdm_runs WHERE run_id = ?", [run_id]).fetchone() is None:
            _fail("run_id", func, f"a run reserved in the ledger {str(self.path)!r}", run_id)
        # A run recorded before version 3 (its re-run was checked by its manifest) is
        # marked now: from here on its outputs are recorded.
        self._upgrade_outputs(con)
        con.execute("UPDATE ppdm_runs SET outputs_recorded = TRUE WHERE run_id = ?", [run_id])
        held = con.execute(
            "SELECT sha256 FROM ppdm_outputs WHERE run_id = ? AND output = ?", [run_id, output]
        ).fetchone()
        if held is None:
            con.execute(
                "INSERT INTO ppdm_outputs VALUES (?, ?, ?, ?)", [run_id, output, sha256.lower(), _now()]
            )
        elif held[0] != sha256.lower():
            msg = (
                f"The run {run_id[:12]!r} recorded other bits for {output!r} in the ledger "
                f"{str(self.path)!r}: a run id names one release, and its outputs are never replaced."
            )
            raise PPDMError(msg)

    def recorded_outputs(self, run_id: str) -> dict[str, str] | None:
        """The SHA-256 of each output the run ``run_id`` recorded (outputs a run that
        failed or died did not reach are absent), or None when the run was not reserved
        with ``record_outputs`` (recorded by an older polars_ppdm, or a notebook's
        accountant) or is not in the ledger."""
        _check_name("run_id", run_id, "Ledger.recorded_outputs")
        with self._transaction(read_only=True) as con:
            if not self._has_outputs(con):
                return None
            marked = con.execute(
                "SELECT outputs_recorded FROM ppdm_runs WHERE run_id = ?", [run_id]
            ).fetchone()
            if marked is None or not marked[0]:
                return None
            rows = con.execute(
                "SELECT output, sha256 FROM ppdm_outputs WHERE run_id = ?", [run_id]
            ).fetchall()
        return {str(output): str(digest) for output, digest in rows}

    def run_manifest_sha256(self, run_id: str) -> str | None:
        """The manifest SHA-256 recorded for the run ``run_id`` (None: none, or no such run)."""
        _check_name("run_id", run_id, "Ledger.run_manifest_sha256")
        with self._transaction(read_only=True) as con:
            row = con.execute("SELECT manifest_sha256 FROM ppdm_runs WHERE run_id = ?", [run_id]).fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def _refuse_if_short(
        self, held: Budget, dataset: str, who: str, charge: float, delta_charge: float, why: str = ""
    ) -> None:
        """Raise :class:`BudgetExceededError` if ``charge`` (epsilon) or ``delta_charge``
        does not fit what ``dataset`` has left (``held``)."""
        where = f"(Ledger file {str(self.path)!r}; "
        # The whole command, as it runs (the ledger named), and the file that must agree.
        command = f"`ppdm ledger --ledger {shlex.quote(str(self.path))} --dataset {shlex.quote(dataset)}"
        agree = "; a pipeline file's {} must then say the same"
        if delta_charge and held.spent_delta + delta_charge > held.delta * (1 + _SLACK):
            msg = (
                f"{who} needs delta {delta_charge:g} on dataset {dataset!r} but the ledger has "
                f"{held.remaining_delta:g} left of its delta budget {held.delta:g} (spent {held.spent_delta:g}); "
                f"nothing was spent or released. {where}"
                + (
                    f"the dataset has no delta budget: give it one with {command} --set-delta-budget DELTA` "
                    f"(Ledger.set_budget in Python){agree.format('delta_budget')}; or release with public groups.)"
                    if held.delta == 0
                    else f"{command} --set-delta-budget DELTA` (Ledger.set_budget in Python) "
                    f"raises a budget, if raising it is what you mean{agree.format('delta_budget')}.)"
                )
            )
            raise BudgetExceededError(msg)
        if held.spent + charge > held.epsilon * (1 + _SLACK):
            unit = held.unit
            msg = (
                f"{who} needs {unit} {charge:g}{f' ({why})' if why else ''} on dataset {dataset!r} but the "
                f"ledger has {held.remaining:g} left of {held.epsilon:g}{' rho' if unit == 'rho' else ''} "
                f"(spent {held.spent:g}); nothing was "
                f"spent or released. {where}{command} --set-budget {unit.upper()}` "
                f"(Ledger.set_budget in Python) raises a budget, if raising it is what you mean"
                f"{agree.format(f'{unit}_budget')}.)"
            )
            raise BudgetExceededError(msg)

    def _reserve(
        self,
        dataset: str,
        run_id: str,
        rows: Sequence[tuple[str, float, str, float, float, float]],
        *,
        pipeline: str,
        status: str,
        who: str,
        why: str = "",
        record_outputs: bool = False,
        unit: str | None = None,
    ) -> Reservation:
        """``rows``: (step, epsilon, composition, charged, delta, delta charged); the run
        costs the sums of ``charged`` and ``delta charged``.  ``unit`` (a
        :func:`unit_label`): the releases' privacy unit, refused if the dataset spent per
        another, else recorded with the dataset (in the same transaction as the spend)."""
        charge = math.fsum(row[3] for row in rows)
        delta_charge = math.fsum(row[5] for row in rows)
        with self._transaction() as con:
            deltas = self._has_deltas(con)
            earlier = con.execute(
                f"SELECT dataset, epsilon, {'coalesce(delta, 0)' if deltas else '0.0'} FROM ppdm_runs WHERE run_id = ?",
                [run_id],
            ).fetchone()
            if earlier is not None:
                if earlier[0] != dataset:
                    msg = (
                        f"The run {run_id!r} is recorded in the ledger {str(self.path)!r} for dataset "
                        f"{earlier[0]!r}, not {dataset!r}: a run id names one run over one dataset."
                    )
                    raise InvalidParameterError(msg)
                return Reservation(run_id, float(earlier[1]), False, float(earlier[2]))
            held = self._known_budget(con, dataset, "Ledger.reserve")
            if unit is not None:
                if held.unit_conflict(unit):
                    assert held.privacy_unit is not None
                    raise InvalidParameterError(
                        unit_differs(dataset, str(self.path), held.privacy_unit, unit)
                    )
                if held.privacy_unit != unit:
                    self._upgrade_to(con, 6)
                    con.execute(
                        "UPDATE ppdm_datasets SET privacy_unit = ? WHERE dataset = ?", [unit, dataset]
                    )
            self._refuse_if_short(held, dataset, who, charge, delta_charge, why)
            con.execute(
                "INSERT INTO ppdm_runs (run_id, dataset, pipeline, epsilon, status, reserved_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [run_id, dataset, pipeline, charge, status, _now()],
            )
            if record_outputs:
                self._upgrade_owner(con)
                con.execute(
                    "UPDATE ppdm_runs SET outputs_recorded = TRUE, owner = ? WHERE run_id = ?",
                    [_this_process(), run_id],
                )
            if rows:
                con.executemany(
                    "INSERT INTO ppdm_releases (run_id, seq, step, epsilon, composition, charged) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [[run_id, seq, *row[:4]] for seq, row in enumerate(rows)],
                )
            if delta_charge:  # a delta budget > 0 was checked above: the file has the columns
                con.execute("UPDATE ppdm_runs SET delta = ? WHERE run_id = ?", [delta_charge, run_id])
                con.executemany(
                    "UPDATE ppdm_releases SET delta = ?, delta_charged = ? WHERE run_id = ? AND seq = ?",
                    [[row[4], row[5], run_id, seq] for seq, row in enumerate(rows)],
                )
        return Reservation(run_id, charge, True, delta_charge)

    def complete(self, run_id: str, *, manifest_sha256: str | None, status: str = "succeeded") -> None:
        """Record how a reserved run ended, and its manifest's SHA-256 (64 hex digits).

        ``status`` is ``"succeeded"`` or ``"failed"``; either way the run's epsilon stays
        spent.  A run already recorded as succeeded is left as it is (a re-run of the
        identical run changes nothing in the ledger).  ``manifest_sha256`` may be None
        for a run that failed before it wrote a manifest.
        """
        func = "Ledger.complete"
        _check_name("run_id", run_id, func)
        check_choice("status", status, ("succeeded", "failed"), func)
        if manifest_sha256 is not None and (
            not isinstance(manifest_sha256, str) or not re.fullmatch(r"[0-9a-fA-F]{64}", manifest_sha256)
        ):
            _fail("manifest_sha256", func, "a SHA-256 as 64 hex digits, or None", manifest_sha256)
        with self._transaction() as con:
            self._complete(con, run_id, manifest_sha256, status, func)

    def _complete(
        self, con: duckdb.DuckDBPyConnection, run_id: str, manifest_sha256: str | None, status: str, func: str
    ) -> None:
        row = con.execute("SELECT status FROM ppdm_runs WHERE run_id = ?", [run_id]).fetchone()
        if row is None:
            _fail("run_id", func, f"a run reserved in the ledger {str(self.path)!r}", run_id)
        elif row[0] != "succeeded":
            con.execute(
                "UPDATE ppdm_runs SET status = ?, finished_at = ?, manifest_sha256 = ? WHERE run_id = ?",
                [status, _now(), None if manifest_sha256 is None else manifest_sha256.lower(), run_id],
            )

    def publish(
        self,
        run_id: str,
        outputs: dict[str, str],
        *,
        manifest_sha256: str,
        trees: Sequence[TreeUpdate] = (),
    ) -> None:
        """Record, in one transaction, the SHA-256 of every output of the reserved run
        ``run_id`` and that it succeeded with this manifest: the point after which its
        outputs may be put in place.  An output already recorded with other bits is
        refused (:meth:`record_output`), and so is a run no longer in the ledger
        (withdrawn by another process): nothing is recorded then.

        ``trees``: the continual releases this run published (:class:`TreeUpdate`): a new
        tree is recorded (by this run, which charged it), and the nodes it drew are
        added.  A node the ledger already holds with another value is refused (a
        concurrent run drew it over other data: both would be out), and so is a tree
        recorded with another configuration."""
        func = "Ledger.publish"
        _check_name("run_id", run_id, func)
        for output, digest in outputs.items():
            _check_name("outputs", output, func)
            _check_sha256("outputs", digest, func)
        _check_sha256("manifest_sha256", manifest_sha256, func)
        with self._transaction() as con:
            for output, digest in outputs.items():
                self._record_output(con, run_id, output, digest, func)
            for update in trees:
                self._record_tree(con, run_id, update)
            self._complete(con, run_id, manifest_sha256, "succeeded", func)

    # --- continual releases ------------------------------------------------------------------

    def tree(self, dataset: str, release: str) -> tuple[str, pl.DataFrame, pl.DataFrame] | None:
        """The configuration digest, published nodes (``group``, ``level``, ``index``,
        ``value``) and published periods' digests (``period``, ``digest``) of the continual
        release ``release`` of ``dataset``, or None if no run has started it."""
        with self._transaction(read_only=True) as con:
            if not self._has_zcdp(con):
                return None
            row = con.execute(
                "SELECT config_sha256 FROM ppdm_trees WHERE dataset = ? AND release = ?", [dataset, release]
            ).fetchone()
            if row is None:
                return None
            nodes = con.execute(
                "SELECT grp, level, idx, value FROM ppdm_tree_nodes WHERE dataset = ? AND release = ? "
                "ORDER BY level, idx, grp",
                [dataset, release],
            ).fetchall()
            periods = con.execute(
                "SELECT period, digest FROM ppdm_tree_periods WHERE dataset = ? AND release = ? ORDER BY period",
                [dataset, release],
            ).fetchall()
        frame = pl.DataFrame(
            nodes,
            schema={"group": pl.UInt32, "level": pl.Int32, "index": pl.Int64, "value": pl.Int64},
            orient="row",
        )
        digests = pl.DataFrame(periods, schema={"period": pl.Int64, "digest": pl.Int64}, orient="row")
        return str(row[0]), frame, digests

    def _record_tree(self, con: duckdb.DuckDBPyConnection, run_id: str, update: TreeUpdate) -> None:
        self._upgrade_to(con, 5)
        dataset = con.execute("SELECT dataset FROM ppdm_runs WHERE run_id = ?", [run_id]).fetchone()
        if dataset is None:
            _fail("run_id", "Ledger.publish", f"a run reserved in the ledger {str(self.path)!r}", run_id)
        held = con.execute(
            "SELECT config_sha256 FROM ppdm_trees WHERE dataset = ? AND release = ?",
            [dataset[0], update.release],
        ).fetchone()
        if held is None:
            con.execute(
                "INSERT INTO ppdm_trees VALUES (?, ?, ?, ?, ?)",
                [dataset[0], update.release, update.config, run_id, _now()],
            )
        elif held[0] != update.config:
            msg = (
                f"Ledger.publish: the continual release {update.release!r} of dataset {dataset[0]!r} is recorded with "
                "another configuration (groups, horizon, rho or contribution bound); a release's parameters do not "
                "change over its horizon. Nothing was published."
            )
            raise InvalidParameterError(msg)
        for group, level, index, value in update.nodes.iter_rows():
            found = con.execute(
                "SELECT value FROM ppdm_tree_nodes WHERE dataset = ? AND release = ? AND grp = ? AND level = ? "
                "AND idx = ?",
                [dataset[0], update.release, group, level, index],
            ).fetchone()
            if found is None:
                con.execute(
                    "INSERT INTO ppdm_tree_nodes VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [dataset[0], update.release, group, level, index, value, run_id],
                )
            elif found[0] != value:
                msg = (
                    f"Ledger.publish: node ({level}, {index}) of group {group} of the continual release "
                    f"{update.release!r} is already published with another value (another run drew it over other "
                    "data); publishing both would release it twice. Nothing was published: run again."
                )
                raise PPDMError(msg)
        for period, digest in update.periods.iter_rows():
            found = con.execute(
                "SELECT digest FROM ppdm_tree_periods WHERE dataset = ? AND release = ? AND period = ?",
                [dataset[0], update.release, period],
            ).fetchone()
            if found is None:
                con.execute(
                    "INSERT INTO ppdm_tree_periods VALUES (?, ?, ?, ?, ?)",
                    [dataset[0], update.release, period, digest, run_id],
                )
            elif found[0] != digest:
                msg = (
                    f"Ledger.publish: period {period} of the continual release {update.release!r} was published "
                    "from other rows by another run; nothing was published: run again."
                )
                raise PPDMError(msg)

    def withdraw(self, run_id: str) -> bool:
        """Take back the reservation of a run that published nothing: its epsilon and
        delta are spent no more, and the run id is free (a later run of the same content
        is a new run, charged then).  True if withdrawn; False when the run has recorded
        an output (:meth:`publish` or :meth:`record_output`: something may be out, so it
        stays spent), has succeeded, or is not in the ledger.

        Checked and done in one transaction, so a run racing to publish under the same
        run id either records its outputs first (and the run stays spent) or finds the
        run gone and publishes nothing.
        """
        _check_name("run_id", run_id, "Ledger.withdraw")
        with self._transaction() as con:
            row = con.execute("SELECT status FROM ppdm_runs WHERE run_id = ?", [run_id]).fetchone()
            if row is None or row[0] == "succeeded":
                return False
            if (
                self._has_outputs(con)
                and con.execute("SELECT 1 FROM ppdm_outputs WHERE run_id = ? LIMIT 1", [run_id]).fetchone()
            ):
                return False
            con.execute("DELETE FROM ppdm_releases WHERE run_id = ?", [run_id])
            con.execute("DELETE FROM ppdm_runs WHERE run_id = ?", [run_id])
        return True

    def reclaim(self, dataset: str, *, pipeline: str | None = None) -> list[str]:
        """Withdraw the reservations of ``dataset``'s runs that were reserved on this host
        by a process that no longer runs (killed) and recorded no output: a run puts
        its outputs in place only after :meth:`publish`, so such a run published
        nothing.  ``pipeline``: only the runs of that pipeline (as :meth:`reserve`
        recorded it), whose leftovers the caller has removed.  Returns the run ids
        withdrawn.  Runs of other hosts, of live processes, or reserved by an older
        polars_ppdm (no owner recorded) stay spent."""
        _check_name("dataset", dataset, "Ledger.reclaim")
        if pipeline is not None and not isinstance(pipeline, str):
            _fail("pipeline", "Ledger.reclaim", "a string or None", pipeline)
        with self._transaction() as con:
            if not self._has_owner(con):
                return []
            rows = con.execute(
                "SELECT run_id, owner FROM ppdm_runs r WHERE dataset = ? AND status = 'reserved' "
                "AND (? IS NULL OR pipeline = ?) "
                "AND NOT EXISTS (SELECT 1 FROM ppdm_outputs o WHERE o.run_id = r.run_id)",
                [dataset, pipeline, pipeline],
            ).fetchall()
            dead = [run for run, owner in rows if _dead(owner)]
            for run in dead:
                con.execute("DELETE FROM ppdm_releases WHERE run_id = ?", [run])
                con.execute("DELETE FROM ppdm_runs WHERE run_id = ?", [run])
        return dead

    def table(self, dataset: str | None = None) -> pl.DataFrame:
        """Every release, oldest first (of one dataset, or of all).

        Columns: ``dataset``, ``run_id``, ``step``, ``epsilon``, ``composition``,
        ``status`` (``reserved``: the run has not finished, or died, and keeps its epsilon
        spent; ``succeeded``; ``failed``; ``accountant``: spent by a
        :meth:`accountant`), ``time`` (of the reservation, UTC), ``manifest_sha256``, and
        ``charged``: what the release added to the dataset's spent epsilon (its epsilon,
        or less inside a parallel composition), ``delta`` and ``delta_charged``: the
        release's delta and what it added to the spent delta.  A run
        with no release has one row with a null step.
        """
        query = """
            SELECT r.dataset, r.run_id, l.step, coalesce(l.epsilon, 0.0), l.composition, r.status,
                   r.reserved_at, r.manifest_sha256, coalesce(l.charged, 0.0), {delta}
            FROM ppdm_runs r LEFT JOIN ppdm_releases l USING (run_id)
            {where} ORDER BY r.reserved_at, r.run_id, l.seq
        """
        with self._transaction(read_only=True) as con:
            query = query.replace(
                "{delta}",
                "coalesce(l.delta, 0.0), coalesce(l.delta_charged, 0.0)"
                if self._has_deltas(con)
                else "0.0, 0.0",
            )
            if dataset is None:
                rows = con.execute(query.format(where="")).fetchall()
            else:
                self._known_budget(con, dataset, "Ledger.table")
                rows = con.execute(query.format(where="WHERE r.dataset = ?"), [dataset]).fetchall()
        utc = [(*row[:6], row[6].replace(tzinfo=_dt.UTC), *row[7:]) for row in rows]
        return pl.DataFrame(utc, schema=_TABLE_SCHEMA, orient="row")

    def accountant(self, dataset: str) -> LedgerAccountant:
        """A :class:`~polars_ppdm.BudgetAccountant` of ``dataset`` whose spends go to the ledger.

        Every ``spend`` (every DP release given ``accountant=``) is a run of its own in the
        ledger, so the budget survives the session: a new session's accountant starts
        from what earlier ones spent.
        """
        return LedgerAccountant(self, dataset)


class LedgerAccountant(BudgetAccountant):
    """A :class:`~polars_ppdm.BudgetAccountant` whose budget and spends live in a :class:`Ledger`.

    Made by :meth:`Ledger.accountant`.  ``epsilon`` and ``delta`` are the dataset's
    budgets in the ledger and ``spent`` / ``spent_delta`` what every run and session spent
    on it; ``spend`` checks and records in one ledger transaction (a run with a random id
    and status ``accountant``), so other processes charging the same dataset are accounted
    for.  ``with accountant.parallel(label) as block:``: each release given the block is
    charged only what it adds to the block's largest release (epsilon and delta alike);
    anything spent on the accountant itself meanwhile, from any thread, is charged in
    full (sequential), as in :meth:`BudgetAccountant.parallel`.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "ledger.duckdb")
    >>> Ledger(path).open_dataset("visits", epsilon_budget=1.0, delta_budget=1e-6)
    >>> acc = Ledger(path).accountant("visits")
    >>> acc.spend(0.4, "histogram of age")
    >>> acc.spend(0.2, "counts per region", delta=1e-7)
    >>> later = Ledger(path).accountant("visits")        # another session
    >>> round(later.spent, 6), round(later.remaining, 6), later.spent_delta
    (0.6, 0.4, 1e-07)
    """

    def __init__(self, ledger: Ledger, dataset: str) -> None:
        if not isinstance(ledger, Ledger):
            _fail("ledger", "LedgerAccountant", "a Ledger", ledger)
        self._ledger = ledger
        self.dataset = dataset
        held = ledger.status(dataset)
        if held.accounting == "zcdp":
            super().__init__(rho=held.epsilon, delta=held.delta)
        else:
            super().__init__(held.epsilon, held.delta)

    def _refuse_unit(self, privacy_unit: str | EllipsisType | None, release: str) -> None:
        """Refuse a release per another privacy unit than the dataset has spent per (the
        ledger's record, whoever spent it; the spend records the first)."""
        if privacy_unit is ...:
            return
        held = self._ledger.status(self.dataset)
        if held.unit_conflict(unit_label(privacy_unit)):
            assert held.privacy_unit is not None
            raise InvalidParameterError(unit_refusal(release, privacy_unit, held.privacy_unit))

    def _held(self, name: str, value: float) -> None:
        # BudgetAccountant.__init__ sets the budgets; the ledger is where a budget changes.
        if value != getattr(self._ledger.status(self.dataset), name):
            msg = f"Change the budget of dataset {self.dataset!r} with Ledger.set_budget, not through its accountant."
            raise InvalidParameterError(msg)

    @property
    def privacy_unit(self) -> str | None:
        """The unit the dataset's budget is counted per, as the ledger records it now
        (the first spend records it, from whichever process; a withdrawn run records none).
        Read-only: assigning it changes nothing (the ledger's record is the unit)."""
        return self._ledger.status(self.dataset).privacy_unit

    @privacy_unit.setter
    def privacy_unit(self, value: str | None) -> None:
        # BudgetAccountant binds its in-memory unit here; the ledger's spend records it.
        pass

    @property
    def epsilon(self) -> float:
        """The dataset's epsilon budget, as the ledger holds it now (a zCDP dataset: the
        epsilon its rho budget means at its delta)."""
        held = self._ledger.status(self.dataset)
        return held.epsilon_at(held.epsilon) if held.accounting == "zcdp" else held.epsilon

    @epsilon.setter
    def epsilon(self, value: float) -> None:
        if self.accounting == "pure":
            self._held("epsilon", value)

    @property
    def rho(self) -> float:
        """A zCDP dataset's rho budget, as the ledger holds it now (nan for a pure one)."""
        held = self._ledger.status(self.dataset)
        return held.epsilon if held.accounting == "zcdp" else math.nan

    @rho.setter
    def rho(self, value: float) -> None:
        if self.accounting == "zcdp":
            self._held("epsilon", value)

    @property
    def delta(self) -> float:
        """The dataset's delta budget, as the ledger holds it now."""
        return self._ledger.status(self.dataset).delta

    @delta.setter
    def delta(self, value: float) -> None:
        self._held("delta", value)

    @property
    def spent(self) -> float:
        """Epsilon spent on the dataset by every run and session (from the ledger)."""
        return self._ledger.spent(self.dataset)

    @property
    def spent_delta(self) -> float:
        """Delta spent on the dataset by every run and session (from the ledger)."""
        return self._ledger.status(self.dataset).spent_delta

    @property
    def ledger(self) -> pl.DataFrame:
        """Every release charged to the dataset, from the ledger, as
        :attr:`BudgetAccountant.ledger` gives them: ``release``, ``epsilon``,
        ``composition``, ``delta``, ``rho`` (a zCDP dataset records amounts in rho: a
        Gaussian release has no epsilon, a Laplace one's is ``sqrt(2 rho)``)."""
        table = self._ledger.table(self.dataset).filter(pl.col("step").is_not_null())
        release = pl.col("step").alias("release")
        if self.accounting != "zcdp":
            return table.select(
                release, "epsilon", "composition", "delta", pl.lit(None, pl.Float64).alias("rho")
            )
        converted = pl.col("composition").str.contains("epsilon^2/2", literal=True)
        return table.select(
            release,
            pl.when(converted).then((2 * pl.col("epsilon")).sqrt()).alias("epsilon"),
            "composition",
            "delta",
            pl.col("epsilon").alias("rho"),
        )

    def _charge(self, group: _Group | None, cost: float, delta: float) -> tuple[float, float, str]:
        """What a release of ``cost`` (in the dataset's unit) adds to the spent budget and
        delta, and how it composed: the open block it was given absorbs it up to its
        largest release; otherwise it is sequential and charged in full."""
        if group is None:
            return cost, delta, "sequential"
        return (
            max(group.cost, cost) - group.cost,
            max(group.delta_cost, delta) - group.delta_cost,
            f"parallel: {group.label}",
        )

    def _check(
        self,
        group: _Group | None,
        epsilon: float | None,
        release: str,
        *,
        why: str = "",
        delta: float = 0.0,
        rho: float | None = None,
        privacy_unit: str | EllipsisType | None = ...,
    ) -> None:
        """Raise :class:`BudgetExceededError` if ``release`` cannot spend ``epsilon`` (or
        ``rho``; and ``delta``) now, in ``group`` (an open block) or in sequence.

        Advisory: another process may spend in between; :meth:`spend` checks again and
        records in one transaction.
        """
        self._refuse_unit(privacy_unit, release)
        delta = check_real("delta", delta, release, low=0, high=1, open_high=True)
        cost = self.cost(epsilon, release, delta=delta, rho=rho)
        with self._lock:
            charge, delta_charge, _ = self._charge(group, cost, delta)
            held = self._ledger.status(self.dataset)
        self._ledger._refuse_if_short(held, self.dataset, repr(release), charge, delta_charge, why)

    def _spend(
        self,
        group: _Group | None,
        epsilon: float | None,
        release: str,
        *,
        why: str = "",
        delta: float = 0.0,
        rho: float | None = None,
        privacy_unit: str | EllipsisType | None = ...,
    ) -> None:
        """Record ``epsilon`` or ``rho`` (and ``delta``) for ``release`` in the ledger, in
        ``group`` (an open block) or in sequence, or refuse it (nothing recorded).  A zCDP
        dataset records the release's rho (a pure-epsilon release's ``epsilon^2 / 2``)."""
        delta = check_real("delta", delta, release, low=0, high=1, open_high=True)
        cost = self.cost(epsilon, release, delta=delta, rho=rho)
        with self._lock:
            charge, delta_charge, composition = self._charge(group, cost, delta)
            self._ledger._reserve(
                self.dataset,
                uuid.uuid4().hex,
                [(release, cost, self._composition(epsilon, rho, composition), charge, delta, delta_charge)],
                pipeline="BudgetAccountant",
                status="accountant",
                who=repr(release),
                why=why,
                unit=None if privacy_unit is ... else unit_label(privacy_unit),
            )
            self._record(group, epsilon, release, delta, rho, privacy_unit)

    def __repr__(self) -> str:
        budget = f"rho={self.rho:g}" if self.accounting == "zcdp" else f"epsilon={self.epsilon:g}"
        return (
            f"LedgerAccountant(dataset={self.dataset!r}, ledger={str(self._ledger.path)!r}, "
            f"{budget}, spent={self.spent:g})"
        )


def _short(value: object, width: int = 12) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= width else text[:width]


def format_ledger(table: pl.DataFrame, datasets: pl.DataFrame | None = None) -> str:
    """The ledger as text, for ``ppdm ledger``: one line per release, grouped by dataset.

    Parameters
    ----------
    table : pl.DataFrame
        :meth:`Ledger.table` (all datasets or one).
    datasets : pl.DataFrame, optional
        :meth:`Ledger.datasets`: adds each dataset's budget, spent and remaining above its
        releases (and lists datasets with no release yet).

    Run ids and manifest hashes are shortened to 12 characters; a run that reserved its
    budget and did not finish reads "reserved (run did not finish; budget kept spent)".

    Examples
    --------
    >>> import tempfile, os
    >>> ledger = Ledger(os.path.join(tempfile.mkdtemp(), "ledger.duckdb"))
    >>> ledger.open_dataset("visits", epsilon_budget=1.0)
    >>> _ = ledger.reserve("visits", "0123456789abcdef", [("histogram", 0.25)], pipeline="nightly.toml")
    >>> text = format_ledger(ledger.table(), ledger.datasets())
    >>> print(text.splitlines()[0])
    dataset 'visits': budget 1, spent 0.25, remaining 0.75
    >>> "reserved (run did not finish; budget kept spent)" in text
    True
    """
    missing = sorted(set(_TABLE_SCHEMA) - set(table.columns) - {"charged", "delta", "delta_charged"})
    if missing:
        _fail("table", "format_ledger", "a frame of Ledger.table()", f"a frame without the columns {missing}")
    # The delta column only where some release spent a delta.
    deltas = "delta" in table.columns and bool((table.get_column("delta") > 0).any())
    header = (
        "time (UTC)",
        "run",
        "step",
        "epsilon",
        *(("delta",) if deltas else ()),
        "composition",
        "status",
        "manifest",
    )
    summaries: dict[str, str] = {}
    units: dict[str, str] = {}
    if datasets is not None:
        for row in datasets.iter_rows(named=True):
            per = f"; per privacy unit: {row['privacy_unit']}" if row.get("privacy_unit") else ""
            if row.get("unit") == "rho":
                units[row["dataset"]] = "rho"
                summaries[row["dataset"]] = (
                    f"dataset {row['dataset']!r} (zCDP): rho budget {row['budget']:g}, spent {row['spent']:g} "
                    f"(epsilon {row['epsilon_spent']:.4g} at delta {row['delta_budget']:g}), remaining "
                    f"{row['remaining']:g}{per}"
                )
                continue
            summaries[row["dataset"]] = (
                (
                    f"dataset {row['dataset']!r}: budget {row['budget']:g}, spent {row['spent']:g}, "
                    f"remaining {row['remaining']:g}"
                )
                + (
                    f"; delta budget {row['delta_budget']:g}, spent {row['delta_spent']:g}, "
                    f"remaining {row['delta_remaining']:g}"
                    if row.get("delta_budget")
                    else ""
                )
                + per
            )
    names = list(dict.fromkeys([*table.get_column("dataset").to_list(), *summaries]))
    if not names:
        return "The ledger has no datasets yet."
    blocks = []
    for dataset in names:
        lines = [summaries.get(dataset, f"dataset {dataset!r}")]
        rows = [
            (
                row["time"].strftime("%Y-%m-%d %H:%M:%S") if row["time"] is not None else "",
                _short(row["run_id"]),
                row["step"] if row["step"] is not None else "(no release)",
                f"{row['epsilon']:g}",
                *((f"{row['delta']:g}",) if deltas else ()),
                row["composition"] or "",
                _SHOWN.get(row["status"], row["status"]),
                _short(row["manifest_sha256"]),
            )
            for row in table.filter(pl.col("dataset") == dataset).iter_rows(named=True)
        ]
        if not rows:
            lines.append("  (no releases yet)")
        else:
            head = tuple(units.get(dataset, "epsilon") if c == "epsilon" else c for c in header)
            widths = [max(len(cell) for cell in column) for column in zip(head, *rows, strict=True)]
            for cells in (head, *rows):
                lines.append(
                    "  " + "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()
                )
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
