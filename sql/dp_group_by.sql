-- name: ppdm_dp_count, ppdm_dp_count_units, ppdm_dp_sum, ppdm_dp_avg, ppdm_dp_var_pop, ppdm_dp_stddev_pop, ppdm_dp_percentile_cont
-- Differentially private COUNT / COUNT(DISTINCT privacy unit) / SUM / AVG / VAR_POP /
-- STDDEV_POP / PERCENTILE_CONT per group with a privacy unit, as polars_ppdm.dp_group_by
-- with one aggregate (dp.count, dp.count_units, dp.sum, dp.mean, dp.variance, dp.std,
-- dp.quantile): the same numbers, bit for bit, for the same secret.  BigQuery's names:
--
--   SELECT * FROM ppdm_dp_count('visits', 'region', epsilon := 1.0,
--       privacy_unit_column := 'person', max_groups_contributed := 1,
--       public_groups := ['north', 'south'], secret := 'env:PPDM_SECRET');
--   SELECT * FROM ppdm_dp_sum('visits', 'region', 'spend', contribution_bounds_per_row := [0, 100],
--       epsilon := 1.0, privacy_unit_column := 'person', delta := 1e-6, secret := 'env:PPDM_SECRET');
--   SELECT * FROM ppdm_dp_percentile_cont('visits', 'region', 'spend', 0.5,
--       contribution_bounds_per_row := [0, 100], candidates := 201, epsilon := 1.0,
--       privacy_unit_column := 'person', public_groups := ['north', 'south'], secret := 'env:PPDM_SECRET');
--
-- tbl: a table or view name.  group_col: the group column (integer, VARCHAR or BOOLEAN).
-- value_col (all but the counts): a numeric column.  contribution_bounds_per_row (all but
--   the counts): [low, high], each value is clamped to it (a percentile's values are not
--   clamped: its candidates span them).  q (percentile_cont): in [0, 1], used as the
--   fraction of denominator <= 1,000,000 it is (at most six decimals; another is refused).  candidates (percentile_cont): the public
--   values the result is chosen from: a number of points spaced evenly over the bounds
--   (default 1001, ends included, 2 to 100,000) or a strictly increasing list within them
--   (report noisy max, geometric noise whatever the mechanism; under 'gaussian' its rho
--   buys the epsilon sqrt(2 rho)).  ppdm_dp_count_units counts each privacy unit once in
--   each group it is kept in (sensitivity max_groups_contributed).  epsilon: > 0 (with partition selection, half of it
--   selects the groups).  privacy_unit_column: the person's column (integer or VARCHAR, no
--   NULL); NULL: each row is its own unit.  max_groups_contributed, max_rows_per_group: >= 1,
--   both 1 by default (a person's one row in one group: on an events table a count counts
--   about the people, not the rows; and both 1 without a privacy unit).  public_groups: a list of the groups to release (all of
--   them, empty ones too, no other); NULL: partition selection with delta in (0, 1).
--   secret: as for ppdm_rr_disguise.
--   mechanism: 'laplace' (the default: discrete Laplace noise, pure epsilon-DP, takes
--   epsilon) or 'gaussian' (discrete Gaussian noise, rho-zCDP, takes rho > 0 and no
--   epsilon; public_groups only), as polars_ppdm.dp_group_by's mechanism= and rho=.  A
--   person's rows move a figure by max_groups_contributed * max_rows_per_group row bounds
--   in L1 but sqrt(max_groups_contributed) * max_rows_per_group in L2: sigma is that over
--   sqrt(2 rho) (an avg splits rho between its sum and its count):
--
--   SELECT * FROM ppdm_dp_count('visits', 'region', mechanism := 'gaussian', rho := 0.5,
--       privacy_unit_column := 'person', max_groups_contributed := 4,
--       public_groups := ['north', 'south'], secret := 'env:PPDM_SECRET');
-- Returns the group column under its own name, then count / units (BIGINT) or <col>_sum /
-- <col>_mean / <col>_var / <col>_std / <col>_q<q> (DOUBLE; q as Python's format(q, 'g')),
-- ordered as public_groups, or by group.  The variance, std and percentile come from the
-- Python code of dp_group_by itself (ppdm_dp_release_value), given the bounded per-group
-- statistics made here.  Needs ppdm.duckdb.register (the keyed words and noise).
-- Intervals and non_negative are Polars options only.

-- The public macro of each kind (in messages), and the name of its result column (as
-- Polars names the aggregate: count, units, <col>_sum, <col>_mean, <col>_var, <col>_std,
-- <col>_q<q> with q as Python's format(q, 'g')).
CREATE OR REPLACE MACRO _ppdm_dp_fn(kind) AS
    'ppdm_dp_' || CASE kind WHEN 'mean' THEN 'avg' WHEN 'variance' THEN 'var_pop' WHEN 'std' THEN 'stddev_pop'
                            WHEN 'quantile' THEN 'percentile_cont' ELSE kind END;
CREATE OR REPLACE MACRO _ppdm_dp_out(kind, value_col, q) AS coalesce(
    CASE kind WHEN 'count' THEN 'count' WHEN 'count_units' THEN 'units' WHEN 'variance' THEN value_col::VARCHAR || '_var'
              WHEN 'quantile' THEN value_col::VARCHAR || '_q' || coalesce(printf('%g', TRY_CAST(q AS DOUBLE)), q::VARCHAR)
              ELSE value_col::VARCHAR || '_' || kind END, 'NULL');  -- never NULL: a JSON key (bad arguments are refused below)
-- Kinds summed on a grid (the values clamped; a variance's squares too); kinds shifted by
-- the bounds' midpoint; kinds whose figure the Python kernel makes (ppdm_dp_release_value).
CREATE OR REPLACE MACRO _ppdm_dp_summed(kind) AS kind IN ('sum', 'mean', 'variance', 'std');
CREATE OR REPLACE MACRO _ppdm_dp_shifted(kind) AS kind IN ('mean', 'variance', 'std');
CREATE OR REPLACE MACRO _ppdm_dp_in_python(kind) AS kind IN ('variance', 'std', 'quantile');
-- ppdm_bits of an integer of up to 64 bits in plain SQL (its 64-bit pattern: two's
-- complement, a UBIGINT as it is; NULL: NULL_BITS), for the per-row units and groups: a
-- Python UDF per 2048-row vector cost more than the bounding itself.  Through HUGEINT,
-- not BIGINT: a UBIGINT at or above 2^63 has no BIGINT, and TRY_CAST made every such
-- value NULL, one group (one noise draw) and one unit.
CREATE OR REPLACE MACRO _ppdm_dp_bits(x) AS
    coalesce((TRY_CAST(x AS HUGEINT) & 18446744073709551615::HUGEINT)::UBIGINT, 9221243865064631925::UBIGINT);
-- Whether text of x's type compares under a collation (COLLATE NOCASE, NOACCENT, NFC, an
-- ICU locale; or SET default_collation), told from its type alone (x may be NULL): case,
-- accent and Unicode-normalisation pairs compare equal under one.  Groups are keyed, and
-- units counted, by their exact text, as in Polars; under a collation DuckDB would group
-- and join 'North' with 'NORTH' while their keyed words differ (attack review 73: a
-- released label's spelling told that one person was there, and a public group spelled
-- twice released the merged count twice, each with its own noise).
CREATE OR REPLACE MACRO _ppdm_dp_collated(x) AS
    coalesce(x::VARCHAR, 'a') = 'A' OR coalesce(x::VARCHAR, 'a') = chr(225)
    OR coalesce(x::VARCHAR, chr(233)) = 'e' || chr(769);
-- Whether a public group does not fit the integer group column's type (g_type): a HUGEINT
-- 2^64 + 1 has group 1's 64-bit pattern, so one noise for two figures whose difference was
-- the exact count (attack review 73). Polars' strict cast refuses it.
CREATE OR REPLACE MACRO _ppdm_dp_outside(v, g_type) AS
    v IS NOT NULL AND CASE g_type WHEN 'TINYINT' THEN TRY_CAST(v AS TINYINT) IS NULL
                                  WHEN 'SMALLINT' THEN TRY_CAST(v AS SMALLINT) IS NULL
                                  WHEN 'INTEGER' THEN TRY_CAST(v AS INTEGER) IS NULL
                                  WHEN 'BIGINT' THEN TRY_CAST(v AS BIGINT) IS NULL
                                  WHEN 'UTINYINT' THEN TRY_CAST(v AS UTINYINT) IS NULL
                                  WHEN 'USMALLINT' THEN TRY_CAST(v AS USMALLINT) IS NULL
                                  WHEN 'UINTEGER' THEN TRY_CAST(v AS UINTEGER) IS NULL
                                  WHEN 'UBIGINT' THEN TRY_CAST(v AS UBIGINT) IS NULL
                                  ELSE false END;
-- What is wrong with a quantile's candidates (NULL: nothing), given as JSON (a number of
-- points, or a list), as dp.quantile's checks say it.
CREATE OR REPLACE MACRO _ppdm_dp_candidates_problem(j, lo, hi) AS
    CASE WHEN json_type(j) IN ('UBIGINT', 'BIGINT')
             THEN if(j::HUGEINT BETWEEN 2 AND 100000, NULL, 'must be between 2 and 100,000 points. Got ' || j::VARCHAR || '.')
         WHEN coalesce(json_type(j), 'NULL') <> 'ARRAY'
             THEN 'must be a number of points or a sequence of numbers. Got ' || coalesce(j::VARCHAR, 'NULL') || '.'
         WHEN NOT coalesce(list_bool_and(list_transform(from_json(j, '["JSON"]'),
                                                        lambda e: coalesce(json_type(e) IN ('UBIGINT', 'BIGINT', 'DOUBLE'), false))), true)
              OR NOT coalesce(list_bool_and(list_transform(from_json(j, '["DOUBLE"]'), lambda v: isfinite(v))), true)
             THEN 'must hold finite numbers only. Got ' || j::VARCHAR || '.'
         WHEN NOT json_array_length(j) BETWEEN 1 AND 100000
             THEN 'must hold 1 to 100,000 values. Got ' || json_array_length(j)::VARCHAR || '.'
         WHEN list_sort(from_json(j, '["DOUBLE"]')) <> from_json(j, '["DOUBLE"]')
              OR len(list_distinct(from_json(j, '["DOUBLE"]'))) <> json_array_length(j)
             THEN 'must be strictly increasing (sorted, no repeats).'
         WHEN from_json(j, '["DOUBLE"]')[1] < lo OR from_json(j, '["DOUBLE"]')[-1] > hi
             THEN 'must lie within the bounds [' || lo::VARCHAR || ', ' || hi::VARCHAR || ']. Got '
                  || from_json(j, '["DOUBLE"]')[1]::VARCHAR || ' to ' || from_json(j, '["DOUBLE"]')[-1]::VARCHAR || '.'
    END;

CREATE OR REPLACE MACRO _ppdm_dp_group_by(
    tbl, group_col, value_col, kind, bounds, q, candidates, epsilon, privacy_unit_column,
    max_groups_contributed, max_rows_per_group, delta, public_groups, secret, mechanism, rho
) AS TABLE
-- The table's columns renamed 'user:<name>', after a NULL column __ppdm_none: no column
-- name can clash with the macro's own, and a lambda matching a column's name or
-- __ppdm_none always matches something, so a column that does not exist is our error
-- below, not DuckDB's "COLUMNS(...) resulted in an empty set" binder error.  The table is
-- read here only, in the first CTE: no CTE name shadows it.
WITH src AS (SELECT NULL AS __ppdm_none, COLUMNS(*) AS 'user:\0' FROM query_table(tbl)),
shape AS (
    SELECT len(list_value(*COLUMNS(lambda c: c = 'user:' || group_col::VARCHAR OR c = '__ppdm_none'))) = 2 AS g_found,
           typeof(coalesce(*COLUMNS(lambda c: c = 'user:' || group_col::VARCHAR OR c = '__ppdm_none'))) AS g_type,
           _ppdm_dp_collated(coalesce(*COLUMNS(lambda c: c = 'user:' || group_col::VARCHAR OR c = '__ppdm_none'))) AS g_collated,
           _ppdm_dp_collated(coalesce(*COLUMNS(lambda c: c = 'user:' || privacy_unit_column::VARCHAR OR c = '__ppdm_none'))) AS u_collated,
           len(list_value(*COLUMNS(lambda c: c = 'user:' || value_col::VARCHAR OR c = '__ppdm_none'))) = 2 AS v_found,
           typeof(coalesce(*COLUMNS(lambda c: c = 'user:' || value_col::VARCHAR OR c = '__ppdm_none'))) AS v_type,
           len(list_value(*COLUMNS(lambda c: c = 'user:' || privacy_unit_column::VARCHAR OR c = '__ppdm_none'))) = 2 AS u_found,
           typeof(coalesce(*COLUMNS(lambda c: c = 'user:' || privacy_unit_column::VARCHAR OR c = '__ppdm_none'))) AS u_type,
           json_keys(to_json(struct_pack(*COLUMNS(lambda c: starts_with(c, 'user:'))))) AS keys
    FROM (SELECT 1 AS __ppdm_one) LEFT JOIN (FROM src LIMIT 0) ON true
),
params AS (
    SELECT CASE
               -- First, with the built-ins named in full: register() refused a database whose
               -- functions shadow built-ins; a search_path set since could put an attached
               -- database's first (review 79). Checked here, each call, for free.
               WHEN system.main.current_setting('search_path') <> ''
                   THEN system.main.error(_ppdm_dp_fn(kind) || ': a search_path is set (' || system.main.current_setting('search_path')
                              || '): a database in it could name a function as a DuckDB built-in or as a polars_ppdm '
                              || 'function and take its place inside the macro. RESET search_path; nothing was released.')
               WHEN group_col IS NULL OR NOT g_found
                   THEN error(_ppdm_dp_fn(kind) || ': the group column ' || coalesce(group_col::VARCHAR, 'NULL')
                              || ' is not a column of ' || tbl::VARCHAR || '; its columns are ' || list_transform(keys, lambda k: k[6:])::VARCHAR || '.')
               WHEN NOT regexp_full_match(g_type, '(U?(TINY|SMALL|BIG)?INT(EGER)?|VARCHAR|BOOLEAN)')
                   THEN error(_ppdm_dp_fn(kind) || ': the group column ' || group_col::VARCHAR
                              || ' must be an integer, VARCHAR or BOOLEAN column (a float is no group key). Got ' || g_type || '.')
               -- Public groups in the column's own kind of type: 1 is not '1' (no conversion guessed).
               WHEN public_groups IS NOT NULL AND typeof(public_groups[1]) <> 'NULL'
                    AND regexp_replace(regexp_replace(typeof(public_groups[1]), '^U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?$', 'integer'), '^VARCHAR$', 'string')
                        <> regexp_replace(regexp_replace(g_type, '^U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?$', 'integer'), '^VARCHAR$', 'string')
                   THEN error('The ''public_groups'' argument of ' || _ppdm_dp_fn(kind) || ' holds '
                              || typeof(public_groups[1]) || ' values but the group column ' || group_col::VARCHAR || ' is '
                              || g_type || '; give the groups in the column''s own type.')
               WHEN public_groups IS NOT NULL AND list_bool_or(list_transform(public_groups, lambda v: _ppdm_dp_outside(v, g_type)))
                   THEN error('The ''public_groups'' argument of ' || _ppdm_dp_fn(kind) || ' holds values outside the range of '
                              || 'the group column ' || group_col::VARCHAR || ' (' || g_type || '); give the groups in the '
                              || 'column''s own type.')
               WHEN g_collated OR u_collated OR (public_groups IS NOT NULL AND _ppdm_dp_collated(CASE WHEN false THEN public_groups[1] END))
                   THEN error(_ppdm_dp_fn(kind) || ': the ' || if(g_collated, 'group column ' || group_col::VARCHAR,
                                                                   if(u_collated, 'privacy_unit_column ' || privacy_unit_column::VARCHAR, 'public_groups'))
                              || ' compares text under a collation (COLLATE NOCASE, NOACCENT, NFC, a locale, or SET '
                              || 'default_collation): groups and privacy units are their exact text, as in polars_ppdm.dp_group_by, '
                              || 'and a collation would merge some of them. RESET default_collation, or give the column '
                              || 'without its collation (e.g. ' || coalesce(group_col::VARCHAR, 'col') || '::BLOB::VARCHAR in a view).')
               WHEN kind NOT IN ('count', 'count_units') AND (value_col IS NULL OR NOT v_found)
                   THEN error(_ppdm_dp_fn(kind) || ': the value column ' || coalesce(value_col::VARCHAR, 'NULL')
                              || ' is not a column of ' || tbl::VARCHAR || '; its columns are ' || list_transform(keys, lambda k: k[6:])::VARCHAR || '.')
               WHEN kind NOT IN ('count', 'count_units') AND NOT regexp_full_match(v_type, '(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|DECIMAL.*)')
                   THEN error(_ppdm_dp_fn(kind) || ': the value column ' || value_col::VARCHAR || ' must be numeric. Got ' || v_type || '.')
               WHEN kind NOT IN ('count', 'count_units') AND (bounds IS NULL OR len(bounds) <> 2 OR bounds[1] IS NULL OR bounds[2] IS NULL
                                         OR NOT isfinite(bounds[1]::DOUBLE) OR NOT isfinite(bounds[2]::DOUBLE)
                                         OR NOT (bounds[1]::DOUBLE < bounds[2]::DOUBLE))
                   THEN error('The ''contribution_bounds_per_row'' argument of ' || _ppdm_dp_fn(kind)
                              || ' must be [low, high], finite, with low < high (public: never read off the data). Got '
                              || coalesce(bounds::VARCHAR, 'NULL') || '.')
               -- A quantile's q and candidates, as dp.quantile checks them.
               -- (DECIMAL(p,s) exactly: 'DECIMAL.*' also matched a list, DECIMAL(2,1)[].)
               WHEN kind = 'quantile' AND (q IS NULL OR NOT regexp_full_match(typeof(q), '(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|DECIMAL\([0-9]+,[0-9]+\))')
                                           OR NOT (TRY_CAST(q AS DOUBLE) BETWEEN 0 AND 1))
                   THEN error('The ''q'' argument of ' || _ppdm_dp_fn(kind) || ' must be a number in [0, 1]. Got '
                              || if(q IS NULL, 'NULL', q::VARCHAR || ' (' || typeof(q) || ')')
                              || if(ends_with(typeof(q), '[]'), '; one q per call (a list of q is for Python''s dp.quantile).', '.'))
               WHEN kind = 'quantile' AND _ppdm_dp_candidates_problem(to_json(candidates), bounds[1]::DOUBLE, bounds[2]::DOUBLE) IS NOT NULL
                   THEN error('The ''candidates'' argument of ' || _ppdm_dp_fn(kind) || ' '
                              || _ppdm_dp_candidates_problem(to_json(candidates), bounds[1]::DOUBLE, bounds[2]::DOUBLE))
               -- The mechanism and its budget, as polars_ppdm.dp.mechanism.check_mechanism and
               -- dp_group_by: epsilon for 'laplace', rho for 'gaussian' (public groups only).
               WHEN mechanism IS NULL OR coalesce(TRY_CAST(mechanism AS VARCHAR), '') NOT IN ('laplace', 'gaussian')
                   THEN error('The ''mechanism'' argument of ' || _ppdm_dp_fn(kind) || ' must be one of [''laplace'', ''gaussian'']. Got '
                              || coalesce('''' || TRY_CAST(mechanism AS VARCHAR) || '''', 'NULL') || '.')
               WHEN mechanism::VARCHAR = 'gaussian' AND epsilon IS NOT NULL
                   THEN error(_ppdm_dp_fn(kind) || ' with mechanism := ''gaussian'' takes rho (its zCDP cost, > 0) and no epsilon; for an '
                              || '(epsilon, delta) target use polars_ppdm.dp.zcdp.rho_for(epsilon, delta). Got epsilon '
                              || epsilon::VARCHAR || '.')
               WHEN mechanism::VARCHAR = 'gaussian'
                    AND (rho IS NULL OR NOT regexp_full_match(typeof(rho), '(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|DECIMAL.*)')
                         OR NOT isfinite(TRY_CAST(rho AS DOUBLE)) OR NOT (TRY_CAST(rho AS DOUBLE) > 0))
                   THEN error('The ''rho'' argument of ' || _ppdm_dp_fn(kind) || ' must be a finite float > 0 (the zCDP cost of '
                              || 'mechanism := ''gaussian''). Got ' || if(rho IS NULL, 'NULL', rho::VARCHAR || ' (' || typeof(rho) || ')') || '.')
               WHEN mechanism::VARCHAR = 'gaussian' AND public_groups IS NULL
                   THEN error(_ppdm_dp_fn(kind) || ' with mechanism := ''gaussian'' needs public_groups: partition selection spends a '
                              || 'delta, which zCDP accounting does not compose. Give the groups to release.')
               WHEN mechanism::VARCHAR = 'laplace' AND rho IS NOT NULL
                   THEN error(_ppdm_dp_fn(kind) || ': rho is the budget of mechanism := ''gaussian''; the Laplace mechanism takes '
                              || 'epsilon. Got rho ' || rho::VARCHAR || '.')
               WHEN mechanism::VARCHAR = 'laplace' AND (epsilon IS NULL OR NOT isfinite(epsilon::DOUBLE) OR NOT (epsilon::DOUBLE > 0))
                   THEN error('The ''epsilon'' argument of ' || _ppdm_dp_fn(kind) || ' must be a finite float > 0. Got '
                              || coalesce(epsilon::VARCHAR, 'NULL') || '.')
               -- Python's dp_group_by draws a fresh secret from the OS when given none; a SQL
               -- macro has no such source (a fresh one per row would not be one release).
               WHEN secret IS NULL
                   THEN error('The ''secret'' argument of ' || _ppdm_dp_fn(kind) || ' is required (the key of the noise and '
                              || 'of the rows each unit keeps): ''env:NAME'', ''file:PATH'' or 32/64 hex digits, as for ppdm_rr_disguise.')
               WHEN privacy_unit_column IS NOT NULL AND NOT u_found
                   THEN error(_ppdm_dp_fn(kind) || ': the privacy_unit_column ' || privacy_unit_column::VARCHAR
                              || ' is not a column of ' || tbl::VARCHAR || '; its columns are ' || list_transform(keys, lambda k: k[6:])::VARCHAR || '.')
               WHEN privacy_unit_column IS NOT NULL AND NOT regexp_full_match(u_type, '(U?(TINY|SMALL|BIG)?INT(EGER)?|VARCHAR)')
                   THEN error(_ppdm_dp_fn(kind) || ': the privacy_unit_column must be an integer or VARCHAR column. Got ' || u_type || '.')
               WHEN privacy_unit_column::VARCHAR = group_col::VARCHAR
                   THEN error(_ppdm_dp_fn(kind) || ': the privacy_unit_column cannot be the group column: every group would be one person.')
               -- As polars_ppdm.dp_group_by (DuckDB's names ignore case).
               WHEN lower(group_col::VARCHAR) = lower(_ppdm_dp_out(kind, value_col, q))
                   THEN error('The ''group_col'' argument of ' || _ppdm_dp_fn(kind) || ' must differ from the '
                              || 'name of the result''s column ' || _ppdm_dp_out(kind, value_col, q)
                              || '. Got ' || group_col::VARCHAR || ' instead; rename the group column first (e.g. in a view).')
               WHEN max_groups_contributed IS NULL OR NOT (max_groups_contributed >= 1)
                   OR max_rows_per_group IS NULL OR NOT (max_rows_per_group >= 1)
                   OR max_groups_contributed::DOUBLE <> floor(max_groups_contributed::DOUBLE)
                   OR max_rows_per_group::DOUBLE <> floor(max_rows_per_group::DOUBLE)
                   THEN error('The ''max_groups_contributed'' and ''max_rows_per_group'' arguments of ' || _ppdm_dp_fn(kind)
                              || ' must be integers >= 1. Got ' || coalesce(max_groups_contributed::VARCHAR, 'NULL') || ' and '
                              || coalesce(max_rows_per_group::VARCHAR, 'NULL') || '.')
               WHEN privacy_unit_column IS NULL AND (max_groups_contributed <> 1 OR max_rows_per_group <> 1)
                   THEN error(_ppdm_dp_fn(kind) || ': max_groups_contributed and max_rows_per_group other than 1 need '
                              || 'privacy_unit_column (without it each row is its own privacy unit).')
               WHEN public_groups IS NULL AND (delta IS NULL OR NOT (delta::DOUBLE > 0 AND delta::DOUBLE < 1))
                   THEN error('The ''delta'' argument of ' || _ppdm_dp_fn(kind) || ' must be in (0, 1) without public_groups '
                              || '(partition selection: the chance that a group of one person is released). Got '
                              || coalesce(delta::VARCHAR, 'NULL') || '.')
               WHEN public_groups IS NOT NULL AND delta IS NOT NULL
                   THEN error('The ''delta'' argument of ' || _ppdm_dp_fn(kind) || ' is for partition selection; with '
                              || 'public_groups no group is selected from the data, so leave it out.')
               ELSE max_groups_contributed::BIGINT
           END AS G,
           max_rows_per_group::BIGINT AS R,
           -- Epsilon: the aggregate's even share, one share more for partition selection.
           epsilon::DOUBLE / if(public_groups IS NULL, 2, 1) AS eps,
           -- Rho: the one aggregate's whole (no partition selection with the Gaussian).
           TRY_CAST(rho AS DOUBLE) AS __rho, coalesce(TRY_CAST(mechanism AS VARCHAR) = 'gaussian', false) AS __gauss,
           bounds[1]::DOUBLE AS lo, bounds[2]::DOUBLE AS hi,
           -- The most one row moves the noisy quantity (DPAggregate.row_bound).
           CASE WHEN NOT _ppdm_dp_summed(kind) THEN 1.0 WHEN kind = 'sum' THEN greatest(abs(bounds[1]::DOUBLE), abs(bounds[2]::DOUBLE))
                ELSE (bounds[2]::DOUBLE - bounds[1]::DOUBLE) / 2 END AS row_bound,
           u_type
    FROM shape
),
-- The power-of-two grid of the values (DPAggregate.grid), a mean's midpoint on it
-- (shift_units) and the most one row moves the grid sum, exactly (units_bound).
gridded AS (
    SELECT *, if(_ppdm_dp_summed(kind), ppdm_grid(row_bound), 1.0) AS __grid FROM params
),
shifted AS (
    SELECT *, if(_ppdm_dp_shifted(kind), floor((lo / 2 + hi / 2) / __grid + 0.5), 0)::BIGINT AS __mid FROM gridded
),
grid_params AS (
    SELECT *,
           CASE WHEN NOT _ppdm_dp_summed(kind) THEN 1
                WHEN greatest(abs(floor(lo / __grid + 0.5)), abs(floor(hi / __grid + 0.5))) >= 9007199254740992
                    THEN error(_ppdm_dp_fn(kind) || ': the contribution_bounds_per_row lie too far from zero '
                               || 'for their width (more than 2^53 grid steps); shift the values towards zero first.')
                ELSE greatest(abs(floor(lo / __grid + 0.5)::BIGINT - __mid), abs(floor(hi / __grid + 0.5)::BIGINT - __mid), 1) END AS __su,
           -- A variance's squares: [k, middle] of (u^2 + 2^(k-1)) // 2^k - middle (DPAggregate.square_shift).
           if(kind IN ('variance', 'std'), ppdm_dp_square_shape(lo, hi), [0, 0]) AS __square_shape
    FROM shifted
),
-- The noise of the figure (a mean's: its normalised sum, with half the budget) and of a
-- mean's own count (GroupByRequest.scale / count_scale, Mechanism.scale): the Laplace's
-- L1 / epsilon, L1 = max_groups * max_rows * units; the Gaussian's sigma L2 / sqrt(2 rho),
-- L2 = sqrt(max_groups) * max_rows * units, the same float operations as Python.
sigmas AS (
    SELECT *,
           sqrt(G::DOUBLE) * if(kind = 'count_units', 1, R) * __su / sqrt(2 * if(kind = 'mean', __rho / 2, __rho)) AS __sigma,
           sqrt(G::DOUBLE) * R / sqrt(2 * (__rho / 2)) AS __count_sigma
    FROM grid_params
),
noise_params AS (
    SELECT *,
           CASE WHEN __gauss AND NOT _ppdm_dp_in_python(kind) AND NOT (__sigma BETWEEN 0.0078125 AND 1125899906842624
                                      AND (kind <> 'mean' OR __count_sigma BETWEEN 0.0078125 AND 1125899906842624))
                    THEN error('The ''rho'' argument of ' || _ppdm_dp_fn(kind) || ' gives the discrete '
                               || 'Gaussian a sigma outside [2^-7, 2^50] (~0.0078 to ~1.1e15): ' || __sigma::VARCHAR
                               || if(kind = 'mean', ' and ' || __count_sigma::VARCHAR, '') || '; change rho or the '
                               || 'contribution bounds. Got rho ' || __rho::VARCHAR || '.')
                WHEN __gauss THEN __sigma
                ELSE (G * if(kind = 'count_units', 1, R))::DOUBLE * __su / if(kind = 'mean', eps / 2, eps) END AS __scale,
           if(__gauss, __count_sigma, (G * R)::DOUBLE / (eps / 2)) AS __count_scale
    FROM sigmas
),
-- The query as Polars makes its request (one constant, JSON), and the label of the
-- release's key made from it by the same Python (GroupByRequest.key_label): the whole
-- query, so that another query (other bounds, contribution bounds or budget) never shares
-- the noise where the statistics happen to be equal.
specified AS (
    SELECT *, json_object(
               'kind', kind, 'group', group_col::VARCHAR, 'column', value_col::VARCHAR, 'low', lo, 'high', hi,
               'q', TRY_CAST(q AS DOUBLE), 'candidates', to_json(candidates), 'epsilon', TRY_CAST(epsilon AS DOUBLE),
               'rho', __rho, 'mechanism', TRY_CAST(mechanism AS VARCHAR), 'max_groups', G, 'max_rows', R,
               'unit', privacy_unit_column::VARCHAR, 'delta', TRY_CAST(delta AS DOUBLE))::VARCHAR AS __spec
    FROM noise_params
),
labelled AS (SELECT *, ppdm_dp_release_label(__spec) AS __release FROM specified),
rows AS (
    SELECT coalesce(*COLUMNS(lambda c: c = 'user:' || group_col::VARCHAR OR c = '__ppdm_none')) AS __g,
           CASE WHEN privacy_unit_column IS NULL THEN NULL
                WHEN __ppdm_u IS NULL
                    THEN error('The privacy_unit_column ' || privacy_unit_column::VARCHAR || ' of ' || _ppdm_dp_fn(kind)
                               || ' has NULL values; every row needs its privacy unit.')
                WHEN u_type = 'VARCHAR' THEN _ppdm_dp_bits(ppdm_key(TRY_CAST(__ppdm_u AS VARCHAR), secret::VARCHAR))
                ELSE _ppdm_dp_bits(__ppdm_u) END AS __unit,
           -- Clamped, in grid units, minus a mean's midpoint (as Polars: exact integer sums).
           CASE WHEN NOT _ppdm_dp_summed(kind) THEN 0
                WHEN __ppdm_x IS NULL OR isnan(__ppdm_x) OR NOT isfinite(__ppdm_x) THEN NULL
                ELSE floor(least(greatest(__ppdm_x, lo), hi) / __grid + 0.5)::BIGINT - __mid END AS __v,
           -- A quantile's values as they are (a rank needs no clamping).
           if(kind = 'quantile', __ppdm_x, NULL) AS __x,
           kind NOT IN ('count', 'count_units') AND (__ppdm_x IS NULL OR isnan(__ppdm_x) OR NOT isfinite(__ppdm_x)) AS __bad
    FROM (SELECT *, coalesce(*COLUMNS(lambda c: c = 'user:' || privacy_unit_column::VARCHAR OR c = '__ppdm_none')) AS __ppdm_u,
                 TRY_CAST(coalesce(*COLUMNS(lambda c: c = 'user:' || value_col::VARCHAR OR c = '__ppdm_none')) AS DOUBLE) AS __ppdm_x
          FROM src), grid_params
),
checked AS NOT MATERIALIZED (
    -- A variance's rounded squares of the grid values, shifted (Int64 as Polars).
    SELECT r.*, if(kind IN ('variance', 'std'),
                   (__v * __v + ((1::BIGINT << __square_shape[1]) >> 1)) // (1::BIGINT << __square_shape[1]) - __square_shape[2],
                   0) AS __sq
    FROM rows r, grid_params
),
-- With a privacy unit: each unit keeps max_rows_per_group rows per group (smallest
-- contribution word of (unit, value)) and max_groups_contributed groups (smallest word of
-- (unit, group)); without one, every row is kept, its own pair.  A pair of (unit, group)
-- with at most max_rows_per_group rows keeps them all whatever their words: only the rows
-- of the pairs with more are worded and ranked (the keyed words are the costly part).
-- (Each branch's constant filter drops the other from the plan.)
whole_pairs AS MATERIALIZED (
    SELECT __unit, __g, 1 AS __n, __v AS __s, __sq, if(kind = 'quantile', [__x], NULL) AS __xs, __bad
    FROM checked WHERE privacy_unit_column IS NULL
    UNION ALL
    SELECT __unit, __g, count(*) AS __n, sum(__v) AS __s, sum(__sq) AS __sq,
           list(__x) FILTER (WHERE kind = 'quantile') AS __xs, bool_or(__bad) AS __bad
    FROM checked WHERE privacy_unit_column IS NOT NULL GROUP BY __unit, __g
),
crowded_rows AS (
    SELECT c.*,
           -- The contribution word of the row's values: grid value (and square), or a quantile's value.
           CASE WHEN kind IN ('count', 'count_units') THEN 0::UBIGINT
                WHEN kind IN ('variance', 'std')
                    THEN ppdm_word(secret::VARCHAR, 'dp/contributions/1',
                                   ppdm_word(secret::VARCHAR, 'dp/contributions/0', c.__unit, ppdm_double_bits(c.__v::DOUBLE)),
                                   ppdm_double_bits(c.__sq::DOUBLE))
                ELSE ppdm_word(secret::VARCHAR, 'dp/contributions/0', c.__unit,
                               ppdm_double_bits(if(kind = 'quantile', c.__x, c.__v::DOUBLE))) END AS __row_word
    FROM checked c
    SEMI JOIN (SELECT __unit, __g FROM whole_pairs, grid_params WHERE privacy_unit_column IS NOT NULL AND __n > R) h
         ON c.__unit = h.__unit AND c.__g IS NOT DISTINCT FROM h.__g
),
pairs AS (
    SELECT p.* FROM whole_pairs p, grid_params WHERE privacy_unit_column IS NULL OR p.__n <= R
    UNION ALL
    SELECT __unit, __g, count(*) AS __n, sum(__v) AS __s, sum(__sq) AS __sq,
           list(__x) FILTER (WHERE kind = 'quantile') AS __xs, bool_or(__bad) AS __bad
    FROM (SELECT *, row_number() OVER (PARTITION BY __unit, __g ORDER BY __row_word) AS __rn FROM crowded_rows), grid_params
    WHERE __rn <= R
    GROUP BY __unit, __g
),
-- The group value's 64-bit pattern (polars_ppdm.dp.group_by._value_bits), once per group.
group_bits AS (
    SELECT __g, if(typeof(__g) = 'VARCHAR', ppdm_string_bits(secret::VARCHAR, TRY_CAST(__g AS VARCHAR)),
                   _ppdm_dp_bits(__g)) AS __gbits
    FROM (SELECT DISTINCT __g FROM whole_pairs)
),
-- The max_groups_contributed pairs of smallest (word, group) of each unit: an aggregate
-- (arg_min's n smallest), not a window sorting every unit's pairs.
kept AS (
    SELECT __g, __n, __s, __sq, __xs, __bad FROM pairs WHERE privacy_unit_column IS NULL
    UNION ALL
    SELECT k.__g, k.__n, k.__s, k.__sq, k.__xs, k.__bad FROM (
        SELECT unnest(arg_min({'__g': p.__g, '__n': p.__n, '__s': p.__s, '__sq': p.__sq, '__xs': p.__xs, '__bad': p.__bad},
                              {'w': ppdm_word(secret::VARCHAR, 'dp/contributions/0', p.__unit, b.__gbits), 'g': p.__g},
                              (SELECT G FROM grid_params))) AS k
        FROM pairs p JOIN group_bits b ON p.__g IS NOT DISTINCT FROM b.__g
        WHERE privacy_unit_column IS NOT NULL
        GROUP BY p.__unit
    )
),
grouped AS (
    SELECT __g, sum(__n) AS __rows, count(*) AS __units, sum(__s) AS __total,
           sum(__sq) AS __sq, flatten(list(__xs) FILTER (WHERE kind = 'quantile')) AS __xs, bool_or(__bad) AS __bad
    FROM kept GROUP BY __g
),
candidates AS (
    SELECT p.__g, p.__order, coalesce(g.__rows, 0) AS __rows, coalesce(g.__units, 0) AS __units,
           coalesce(g.__total, 0) AS __total, coalesce(g.__sq, 0) AS __sq, coalesce(g.__xs, []) AS __xs,
           coalesce(g.__bad, false) AS __bad
    -- A group listed twice is released once, at its first place (as Polars' unique()).
    FROM (SELECT __g, min(__order) AS __order
          FROM (SELECT unnest(public_groups) AS __g, generate_subscripts(public_groups, 1) AS __order
                WHERE public_groups IS NOT NULL)
          GROUP BY __g) p
    LEFT JOIN grouped g ON p.__g IS NOT DISTINCT FROM g.__g
    UNION ALL
    SELECT __g, NULL AS __order, __rows, __units, __total, __sq, coalesce(__xs, []), __bad FROM grouped WHERE public_groups IS NULL
),
keyed AS (
    SELECT c.*,
           -- A NULL group links in a stream of its own (polars_ppdm.dp.group_by.group_words):
           -- every 64-bit pattern is some integer's, so no pattern may stand for NULL.
           CASE WHEN c.__g IS NULL THEN ppdm_word(secret::VARCHAR, 'dp_group_by/group/0/null', 0::UBIGINT, 0::UBIGINT)
                ELSE ppdm_word(secret::VARCHAR, 'dp_group_by/group/0', 0::UBIGINT,
                               CASE WHEN typeof(c.__g) = 'VARCHAR' THEN ppdm_string_bits(secret::VARCHAR, TRY_CAST(c.__g AS VARCHAR))
                                    ELSE _ppdm_dp_bits(c.__g) END) END AS __word
    FROM candidates c
),
-- Bad data is refused before any noise is drawn, with no count in the message.
checked_groups AS (
    SELECT k.*,
           CASE WHEN (SELECT count(*) <> count(DISTINCT __word) FROM keyed)
                    THEN error(_ppdm_dp_fn(kind) || ': two groups have one keyed word (one noise for two figures, whose '
                               || 'difference would be exact); nothing was released.')
                WHEN k.__bad THEN error(_ppdm_dp_fn(kind) || ': the column ' || value_col::VARCHAR
                                        || ' holds NULL, NaN or infinite values in the rows kept; drop or fill them first '
                                        || '(nothing was released).')
                ELSE 0 END AS __checked
    FROM keyed k
),
-- The release's digest (polars_ppdm.dp.group_by.statistics_digest): the sum mod 2^64 of the
-- keyed words of every candidate group's (word, rows, units[, grid sum]), plus the word of
-- their number. The noise is drawn under a key of (secret, release, digest): other data,
-- other noise.
group_words AS MATERIALIZED (
    SELECT * FROM (
        -- Then a variance's sum of squares.
        SELECT *, if(kind IN ('variance', 'std'), ppdm_word(secret::VARCHAR, 'dp/digest/4', __w3, ppdm_bits(__sq::BIGINT)), __w3) AS __w
        FROM (
        -- Then the grid sum, or the keyed digest of the values a quantile ranks.
        SELECT *, CASE WHEN kind IN ('count', 'count_units') THEN __w2
                       WHEN kind = 'quantile'
                           THEN ppdm_word(secret::VARCHAR, 'dp/digest/3', __w2, ppdm_values_digest(secret::VARCHAR, __word, __xs))
                       ELSE ppdm_word(secret::VARCHAR, 'dp/digest/3', __w2, ppdm_bits(__total::BIGINT)) END AS __w3
        FROM (
        SELECT *, ppdm_word(secret::VARCHAR, 'dp/digest/2', __w1, ppdm_bits(__units::BIGINT)) AS __w2
        FROM (
            SELECT *, ppdm_word(secret::VARCHAR, 'dp/digest/1',
                                ppdm_word(secret::VARCHAR, 'dp/digest/0', 0::UBIGINT, __word), ppdm_bits((__rows + __checked)::BIGINT)) AS __w1
            FROM checked_groups
        )
        )
        )
        ) c
),
-- (An aggregate joined back, not sum() OVER (): DuckDB up to 1.5.5 races in parallel
-- window aggregates over small inputs -- "Attempted to access index 0 within vector of
-- size 0", which invalidates the database; duckdb/duckdb#22846, #25713.)
digested AS (
    SELECT w.*, t.__digest
    FROM group_words w,
         (SELECT ((sum(__w::HUGEINT)
                   + ppdm_word(secret::VARCHAR, 'dp/digest/rows', 0::UBIGINT, ppdm_bits(count(*))))
                  % 18446744073709551616)::UBIGINT AS __digest
          FROM group_words) t
),
selected AS (
    SELECT k.* FROM digested k, labelled
    WHERE public_groups IS NOT NULL
       OR k.__units + ppdm_release_noise(secret::VARCHAR, __release, k.__digest,
                                         'dp_group_by/' || group_col::VARCHAR || '/select', k.__word, G::DOUBLE / eps)
          >= ppdm_selection_threshold(eps, delta::DOUBLE, G)
),
-- The noise under the release's key, of the figure (stream count() / sum(v) / mean(v))
-- and of a mean's own count (count-of-mean(v)): discrete Gaussian of sigma __scale, or
-- discrete Laplace of scale __scale.  Only the branch taken calls its function.
drawn AS (
    SELECT s.*, __gauss, __scale, __count_scale, __release, __spec,
           'dp_group_by/' || group_col::VARCHAR || '/'
           || CASE kind WHEN 'count' THEN 'count()' WHEN 'count_units' THEN 'count_units()' WHEN 'sum' THEN 'sum(' || value_col::VARCHAR || ')'
                        ELSE 'mean(' || value_col::VARCHAR || ')' END AS __stream,
           'dp_group_by/' || group_col::VARCHAR || '/count-of-mean(' || value_col::VARCHAR || ')' AS __count_stream
    FROM selected s, labelled
),
noisy AS (
    SELECT s.__g, s.__order,
           CASE WHEN _ppdm_dp_in_python(kind)
                    THEN ppdm_dp_release_value(secret::VARCHAR, s.__spec, s.__digest, s.__word, s.__rows::BIGINT,
                                                         s.__total::BIGINT, s.__sq::BIGINT, s.__xs)
               WHEN kind = 'count'
                    THEN (s.__rows + s.__noise)::DOUBLE
               WHEN kind = 'count_units'
                    THEN (s.__units + s.__noise)::DOUBLE
               WHEN kind = 'sum'
                    THEN (s.__total + s.__noise)::DOUBLE * __grid
               ELSE least(greatest(
                        __mid * __grid + ((s.__total + s.__noise)::DOUBLE * __grid) / greatest((s.__rows + s.__count_noise)::DOUBLE, 1.0),
                        lo), hi)
           END AS __value
    FROM (
        SELECT *,
               CASE WHEN _ppdm_dp_in_python(kind) THEN 0
                    WHEN __gauss THEN ppdm_release_gaussian(secret::VARCHAR, __release, __digest, __stream, __word, __scale)
                    ELSE ppdm_release_noise(secret::VARCHAR, __release, __digest, __stream, __word, __scale) END AS __noise,
               CASE WHEN kind <> 'mean' THEN 0
                    WHEN __gauss THEN ppdm_release_gaussian(secret::VARCHAR, __release, __digest, __count_stream, __word, __count_scale)
                    ELSE ppdm_release_noise(secret::VARCHAR, __release, __digest, __count_stream, __word, __count_scale) END AS __count_noise
        FROM drawn
    ) s, grid_params
)
-- Internal names only: the public macros name the columns (they may hold any name).
SELECT __g AS __ppdm_group, __value AS __ppdm_value, __order AS __ppdm_order FROM noisy;

-- The release, named: the group column under its own name (the table's columns renamed
-- 'user:<name>' beside the release, with no row, and the alias pattern '\0'), then the
-- figure under _ppdm_dp_out's name (a struct of one field of that name, from JSON: BIGINT
-- for the counts, DOUBLE bit for bit else), then the 'user:' and 'out:' prefixes stripped
-- with one regex.
CREATE OR REPLACE MACRO _ppdm_dp_release(tbl, group_col, value_col, kind, bounds, q, candidates, epsilon,
    privacy_unit_column, max_groups_contributed, max_rows_per_group, delta, public_groups, secret, mechanism, rho) AS TABLE
SELECT COLUMNS('(?s)^(?:user|out):(.*)$') AS '\1' FROM (
    SELECT CASE WHEN COLUMNS(lambda c: c = 'user:' || group_col::VARCHAR OR c = '__ppdm_none') IS NULL THEN __ppdm_group END AS '\0',
           unnest(json_transform(
               json_object('out:' || _ppdm_dp_out(kind, value_col, q),
                           if(kind IN ('count', 'count_units'), __ppdm_value::BIGINT::JSON, __ppdm_value::JSON)),
               json_object('out:' || _ppdm_dp_out(kind, value_col, q), if(kind IN ('count', 'count_units'), 'BIGINT', 'DOUBLE'))::VARCHAR)),
           __ppdm_order, __ppdm_group
    FROM _ppdm_dp_group_by(tbl, group_col, value_col, kind, bounds, q, candidates, epsilon, privacy_unit_column,
                           max_groups_contributed, max_rows_per_group, delta, public_groups, secret, mechanism, rho) r
    LEFT JOIN (SELECT NULL AS __ppdm_none, COLUMNS(*) AS 'user:\0' FROM query_table(tbl) LIMIT 0) n ON false
) __ppdm_out
ORDER BY __ppdm_out.__ppdm_order NULLS LAST, __ppdm_out.__ppdm_group;

-- The public macros: one kind each (BigQuery's names), the same options.
CREATE OR REPLACE MACRO ppdm_dp_count(tbl, group_col, epsilon := NULL, privacy_unit_column := NULL, max_groups_contributed := 1,
    max_rows_per_group := 1, public_groups := NULL, delta := NULL, secret := NULL, mechanism := 'laplace', rho := NULL) AS TABLE
FROM _ppdm_dp_release(tbl, group_col, NULL, 'count', NULL, NULL, NULL, epsilon, privacy_unit_column,
                      max_groups_contributed, max_rows_per_group, delta, public_groups, secret, mechanism, rho);

CREATE OR REPLACE MACRO ppdm_dp_count_units(tbl, group_col, epsilon := NULL, privacy_unit_column := NULL, max_groups_contributed := 1,
    max_rows_per_group := 1, public_groups := NULL, delta := NULL, secret := NULL, mechanism := 'laplace', rho := NULL) AS TABLE
FROM _ppdm_dp_release(tbl, group_col, NULL, 'count_units', NULL, NULL, NULL, epsilon, privacy_unit_column,
                      max_groups_contributed, max_rows_per_group, delta, public_groups, secret, mechanism, rho);

CREATE OR REPLACE MACRO ppdm_dp_sum(tbl, group_col, value_col, contribution_bounds_per_row := NULL, epsilon := NULL,
    privacy_unit_column := NULL, max_groups_contributed := 1, max_rows_per_group := 1, public_groups := NULL, delta := NULL,
    secret := NULL, mechanism := 'laplace', rho := NULL) AS TABLE
FROM _ppdm_dp_release(tbl, group_col, value_col, 'sum', contribution_bounds_per_row, NULL, NULL, epsilon, privacy_unit_column,
                      max_groups_contributed, max_rows_per_group, delta, public_groups, secret, mechanism, rho);

CREATE OR REPLACE MACRO ppdm_dp_avg(tbl, group_col, value_col, contribution_bounds_per_row := NULL, epsilon := NULL,
    privacy_unit_column := NULL, max_groups_contributed := 1, max_rows_per_group := 1, public_groups := NULL, delta := NULL,
    secret := NULL, mechanism := 'laplace', rho := NULL) AS TABLE
FROM _ppdm_dp_release(tbl, group_col, value_col, 'mean', contribution_bounds_per_row, NULL, NULL, epsilon, privacy_unit_column,
                      max_groups_contributed, max_rows_per_group, delta, public_groups, secret, mechanism, rho);

CREATE OR REPLACE MACRO ppdm_dp_var_pop(tbl, group_col, value_col, contribution_bounds_per_row := NULL, epsilon := NULL,
    privacy_unit_column := NULL, max_groups_contributed := 1, max_rows_per_group := 1, public_groups := NULL, delta := NULL,
    secret := NULL, mechanism := 'laplace', rho := NULL) AS TABLE
FROM _ppdm_dp_release(tbl, group_col, value_col, 'variance', contribution_bounds_per_row, NULL, NULL, epsilon, privacy_unit_column,
                      max_groups_contributed, max_rows_per_group, delta, public_groups, secret, mechanism, rho);

CREATE OR REPLACE MACRO ppdm_dp_stddev_pop(tbl, group_col, value_col, contribution_bounds_per_row := NULL, epsilon := NULL,
    privacy_unit_column := NULL, max_groups_contributed := 1, max_rows_per_group := 1, public_groups := NULL, delta := NULL,
    secret := NULL, mechanism := 'laplace', rho := NULL) AS TABLE
FROM _ppdm_dp_release(tbl, group_col, value_col, 'std', contribution_bounds_per_row, NULL, NULL, epsilon, privacy_unit_column,
                      max_groups_contributed, max_rows_per_group, delta, public_groups, secret, mechanism, rho);

CREATE OR REPLACE MACRO ppdm_dp_percentile_cont(tbl, group_col, value_col, q, contribution_bounds_per_row := NULL,
    candidates := 1001, epsilon := NULL, privacy_unit_column := NULL, max_groups_contributed := 1, max_rows_per_group := 1,
    public_groups := NULL, delta := NULL, secret := NULL, mechanism := 'laplace', rho := NULL) AS TABLE
FROM _ppdm_dp_release(tbl, group_col, value_col, 'quantile', contribution_bounds_per_row, q, candidates, epsilon, privacy_unit_column,
                      max_groups_contributed, max_rows_per_group, delta, public_groups, secret, mechanism, rho);
