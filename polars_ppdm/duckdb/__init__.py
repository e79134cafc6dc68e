"""DuckDB front-end: Arrow UDFs over the same kernels, the ``sql/`` macros, a bulk path.

``register(con)`` adds to a connection (arguments named as in Python; DuckDB macros take
them by position or by name, ``epsilon := 1.0``; defaulted ones may be left out):

Row-wise perturbations, the same bits as Polars for the same secret, key and column name
(every coin and noise draw is keyed by the unit ``key``, the stream and the value, so an
unchanged value keeps its bits across runs and a changed one draws anew):

* ``ppdm_rr_disguise(x BOOLEAN, p, secret, key, stream, epsilon := NULL)`` --
  binary randomized response (cast 0/1 integers with ``x::BOOLEAN``; the cast makes any
  non-zero true, where the Polars expression refuses values other than 0 and 1, so check
  ``x IN (0, 1)`` first);
* ``ppdm_rr_disguise_k(x VARCHAR, categories VARCHAR[], p, secret, key, stream,
  epsilon := NULL)`` -- k-ary randomized response over a public domain;
* ``ppdm_rr_disguise_whole_record(x BOOLEAN, columns VARCHAR[], p, secret, key,
  epsilon := NULL, record := [...])`` -- whole-record randomized response: one coin per
  row for the group ``columns`` (its stream is
  :func:`~polars_ppdm.perturb.rr.whole_record_stream` of them), keyed by the unit and
  the row's values in the group, which ``record`` lists (BOOLEAN[], in the order of
  ``columns``; required, and ``x`` must be one of them).  Calling it on each column of
  the group with the same ``columns`` and ``record`` keeps or negates the row's columns
  together, as ``rr_disguise(df, columns, p=..., mode="whole_record", secret=...,
  key=...)``; each call draws the coin again (the same coin: the PRF is a function).
  Not epsilon-LDP for two or more columns (see :func:`polars_ppdm.rr_disguise`);
* ``ppdm_add_noise(x DOUBLE, scale, secret, key, stream, dist := 'gaussian')`` --
  additive noise (``dist`` 'gaussian': ``scale`` is the standard deviation; 'uniform':
  the half-width of [-scale, scale]); DOUBLE out, NULL stays NULL, NaN and infinities
  refused.

``stream`` is the column's name, and is required by ``ppdm_rr_disguise``,
``ppdm_rr_disguise_k`` and ``ppdm_add_noise`` (a NULL or missing stream is an error saying
what to pass): SQL cannot see the column's name, and one default stream for two columns
disguised in one query gave them the same coins (they flipped together).  The library
makes the stream of the draws from the name as the Polars function on that column does
(the name itself for randomized response, ``'add_noise/' + name`` for noise; the table
macros make theirs from their column arguments), so the same column name and secret give
Polars' bits in every engine without knowing how streams are named.  The full stream of
before, ``'add_noise/income'``, is refused with what to pass instead (``'income'``).
Errors name the column by this name.

Randomized response takes exactly one of ``p`` (keep probability, not 1/k) and
``epsilon`` (local DP; p = ``ppdm_rr_p_from_epsilon(epsilon, k)``, the bits of
:func:`polars_ppdm.rr_p_from_epsilon`).  ``ppdm_rr_disguise(smoker, 0.8, secret, id,
'smoker')`` is positional; ``ppdm_rr_disguise(smoker, epsilon := 1.0, secret := secret,
key := id, stream := 'smoker')`` the same with epsilon.  A missing ``secret``, ``key`` or
``stream`` is an error naming it.

The keyed randomness itself, for macros:

* ``ppdm_uniform(secret, stream VARCHAR, key BIGINT) -> DOUBLE`` and
  ``ppdm_prf_word(secret, stream, key) -> UBIGINT``: uniform in [0, 1), and the first
  64-bit word of the PRF block (the ties of ``ppdm_ecdf_resample``);
* ``ppdm_discrete_laplace(secret, stream, key, scale DOUBLE) -> BIGINT``: exact two-sided
  geometric noise of ``scale = sensitivity / epsilon``, keyed by (secret, stream, key)
  only -- a building block, not a release: the same arguments over changed data draw the
  same noise, which then cancels between two releases.  The DP macros
  (``ppdm_dp_histogram``, ``ppdm_dp_count``...) key theirs by a digest of the data they
  release (``ppdm_release_noise``); a query built on this function must put what
  differs between its releases into ``stream``.  Guessable secrets are refused;
* ``ppdm_discrete_gaussian(secret, stream, key, sigma DOUBLE) -> BIGINT``: the same for
  the Gaussian mechanism, exact discrete Gaussian noise of ``sigma = l2 / sqrt(2 rho)``
  (in [2^-7, 2^50]; the Gaussian DP macros draw theirs with ``ppdm_release_gaussian``);
* ``ppdm_key(s VARCHAR, secret) -> BIGINT`` -- the keyed 64-bit reduction of a string key
  under the secret, the one Polars applies to string key columns (``key :=
  ppdm_key(email, secret)`` equals Polars' ``key="email"`` with that secret;
  :func:`polars_ppdm.kernels.string_keys.keyed_string_keys`).  Its value is a
  pseudonym under the secret, not a public id: given as an integer key in another
  release under the same secret it draws that unit's coins, so drop it before publishing.

Every macro of ``sql/`` (pure SQL, each file documents its arguments): the corrections
``ppdm_rr_support_k(tbl, col, categories, p := NULL, epsilon := NULL)`` (k-ary, one
column), ``ppdm_rr_support_patterns(counts, p := NULL, epsilon := NULL)`` (binary,
per attribute; lists), ``ppdm_rr_support_whole_record(counts, p := NULL, epsilon :=
NULL)``, ``ppdm_rr_correct_share(observed_share, p := NULL, epsilon := NULL)``; the
epsilon conversions ``ppdm_rr_epsilon(p, k := 2)``, ``ppdm_rr_p_from_epsilon(epsilon,
k := 2)``; and the table macros ``ppdm_ecdf_resample(tbl, col, key, bins, secret)`` and
``ppdm_dp_histogram(tbl, col, low, high, bins, epsilon, secret, mechanism := 'laplace',
rho := NULL)`` (columns ``<col>_bin, <col>_low, <col>_high, count`` as in Polars); and
the DP aggregates per group with a privacy unit, ``ppdm_dp_count(tbl, group_col, ...)``,
``ppdm_dp_count_units(tbl, group_col, ...)`` (distinct privacy units),
``ppdm_dp_sum(tbl, group_col, value_col, contribution_bounds_per_row := [low, high],
...)``, ``ppdm_dp_avg(...)``, ``ppdm_dp_var_pop(...)``, ``ppdm_dp_stddev_pop(...)`` and
``ppdm_dp_percentile_cont(tbl, group_col, value_col, q, contribution_bounds_per_row :=
[low, high], candidates := 1001, ...)`` (``candidates``: a number of points or a list, as
``dp.quantile``'s) with BigQuery's names and option names (``epsilon``,
``privacy_unit_column``, ``max_groups_contributed``, ``max_rows_per_group``,
``public_groups`` (a list), ``delta``, ``secret``) and ``mechanism``, ``rho``: the same
numbers as :func:`polars_ppdm.dp_group_by` with that one aggregate (their keyed words and
noise come from :mod:`polars_ppdm.duckdb.group_by`).  Every DP macro takes
``mechanism := 'gaussian', rho := ...`` (and no epsilon) for the Gaussian mechanism, as
the Python functions' ``mechanism="gaussian", rho=...``: discrete Gaussian noise, rho-zCDP,
the same bits as Polars (the group-by macros need ``public_groups`` then), e.g.
``FROM ppdm_dp_histogram('t', 'age', 0, 100, 10, mechanism := 'gaussian', rho := 0.5,
secret := 'env:PPDM_SECRET')``.

:func:`register_spiral_key` adds a pure-SQL table macro for one log-spiral key.

``secret`` is a VARCHAR: 32/64 hex digits, ``'env:NAME'`` or ``'file:PATH'`` (a file of
mode 0600 as ``ppdm secret --output`` writes it, checked by
:func:`polars_ppdm.secret_files.read_secret_file`; either way the secret never appears in
SQL text or logs, and the variable's value or the file's identity, size, times and mode
are looked at on every call, per 2048-row vector, so a secret rotated between queries is
read afresh: rotate it between queries, never during one) or decimal digits (a guessable
integer secret, for tests); errors never show it.  ``key`` is a BIGINT row key and is
required: DuckDB has no stable row position in a parallel scan.
``ppdm_rr_disguise(smoker, p, secret, id, 'smoker')`` equals
``pl.col("smoker").ppdm.rr_disguise(p=p, secret=secret, key="id")`` bit for bit.

DuckDB calls a Python UDF once per 2048-row vector: ``ppdm_rr_disguise`` costs ~130 ns
per row on a 2-core EPYC, of which ~70 is DuckDB's own cost of calling any Python UDF of
its signature (``benchmarks/bench_rr.py`` measures both).  For big tables
:func:`rr_disguise_batches` streams Arrow record batches of a query through the kernel
instead, near NumPy speed.

The package's modules, one idea each: :mod:`~polars_ppdm.duckdb.scalar` (the row-wise
UDFs and their SQL faces), :mod:`~polars_ppdm.duckdb.group_by` (the keyed words and noise
of the DP group-by macros), :mod:`~polars_ppdm.duckdb.bulk` (:func:`rr_disguise_batches`),
:mod:`~polars_ppdm.duckdb.spiral` (spiral keys as SQL macros) and
:mod:`~polars_ppdm.duckdb.macros` (:func:`register`, :func:`sql_files`); the helpers
every UDF uses (constant arguments, the secret, Arrow arrays) live in ``_shared``.

Examples
--------
>>> import duckdb
>>> import polars as pl
>>> import polars_ppdm as ppdm
>>> con = ppdm.duckdb.register(duckdb.connect())
>>> df = pl.DataFrame({"id": [1, 2, 3], "a": [True, False, None], "b": [True, True, False]})
>>> sql = con.sql(
...     "SELECT id, ppdm_rr_disguise_whole_record(a, ['a', 'b'], 0.7, '9', id, record := [a, b]) AS a, "
...     "ppdm_rr_disguise_whole_record(b, ['a', 'b'], 0.7, '9', id, record := [a, b]) AS b FROM df ORDER BY id"
... ).pl()
>>> sql.equals(ppdm.rr_disguise(df, ["a", "b"], p=0.7, mode="whole_record", secret=9, key="id"))
True
"""

from __future__ import annotations

from polars_ppdm.duckdb.bulk import rr_disguise_batches
from polars_ppdm.duckdb.macros import register, sql_files
from polars_ppdm.duckdb.spiral import register_spiral_key, spiral_macro_sql

__all__ = ["register", "register_spiral_key", "rr_disguise_batches", "spiral_macro_sql", "sql_files"]
