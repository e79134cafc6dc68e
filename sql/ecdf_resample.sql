-- name: ppdm_ecdf_resample
-- ECDF resampling with rank re-linking of one numeric column (paper 000), as polars_ppdm.ecdf_resample.
--
-- tbl:  the table (or view) name, a string.     col: the column to resample, a string.
-- key:  the BIGINT row-key column, a string (DuckDB has no stable row position).
-- bins: equal-width intervals between min and max, an integer in [2, 10,000,000] (the limit of
--       polars_ppdm.ecdf_resample: every bin costs memory).   secret: the secret (VARCHAR, as
--       for ppdm_rr_disguise: hex, 'env:NAME' or decimal digits).
-- Every argument is checked before any row is read, with an error naming it: a NULL, a value
-- of the wrong type, a col or key that names no column of tbl (the error lists its columns).
-- Needs the UDFs of ppdm.duckdb.register (ppdm_prf_word, _ppdm_ecdf_words, _ppdm_ecdf_key,
-- _ppdm_ecdf_offsets, _ppdm_ecdf_uniforms).
-- Returns every row of tbl, in the order of the table's scan (as Polars keeps the frame's),
-- with its columns in their order: the others as they are, col (DOUBLE) in its place, each
-- non-null value replaced by the generated value of the same rank; nulls stay null and
-- are left out of the ECDF.  The same values as Polars for the same secret and key.
-- Several columns: one call per column, each over a (temporary) table made by the previous
-- call (DuckDB refuses a view that nests this macro in itself).
CREATE OR REPLACE MACRO ppdm_ecdf_resample(tbl, col, key, bins, secret) AS TABLE
-- The table's columns renamed 'user:<name>', after a NULL column __ppdm_none: no column
-- name can clash with the macro's own (__ppdm_*, and the result's 'out:<name>' before the
-- final SELECT strips the prefixes), and a lambda matching col or __ppdm_none always
-- matches something, so a col or
-- key that names no column is our error below, not DuckDB's "COLUMNS(...) resulted in an
-- empty set" binder error.  The table is read here only, in the first CTE: no CTE name
-- shadows it.
WITH __ppdm_src AS (SELECT NULL AS __ppdm_none, COLUMNS(*) AS 'user:\0', row_number() OVER () AS __ppdm_pos FROM query_table(tbl)),
-- The arguments, checked against the table's schema on one row (an empty table too); two
-- matches mean col (key) exists.
__ppdm_shape AS (
    SELECT len(list_value(*COLUMNS(lambda c: c = 'user:' || col::VARCHAR OR c = '__ppdm_none'))) = 2 AS __ppdm_col_found,
           len(list_value(*COLUMNS(lambda c: c = 'user:' || key::VARCHAR OR c = '__ppdm_none'))) = 2 AS __ppdm_key_found,
           typeof(coalesce(*COLUMNS(lambda c: c = 'user:' || col::VARCHAR OR c = '__ppdm_none'))) AS __ppdm_col_type,
           typeof(coalesce(*COLUMNS(lambda c: c = 'user:' || key::VARCHAR OR c = '__ppdm_none'))) AS __ppdm_key_type,
           json_keys(to_json(struct_pack(*COLUMNS(lambda c: starts_with(c, 'user:'))))) AS __ppdm_keys
    FROM (SELECT 1 AS __ppdm_one) LEFT JOIN (FROM __ppdm_src LIMIT 0) ON true
),
__ppdm_args AS (
    SELECT CASE
               WHEN col IS NULL OR typeof(col) <> 'VARCHAR'
                   THEN error('The ''col'' argument of ppdm_ecdf_resample must be a column name (a string). Got '
                              || if(col IS NULL, 'NULL', typeof(col)) || ' instead.')
               WHEN NOT __ppdm_col_found
                   THEN error('ppdm_ecdf_resample: column ''' || col::VARCHAR || ''' (the ''col'' argument) not found in table '''
                              || tbl::VARCHAR || '''; its columns are '
                              || list_transform(__ppdm_keys, lambda k: k[6:])::VARCHAR || '.')
               WHEN key IS NULL OR typeof(key) <> 'VARCHAR'
                   THEN error('The ''key'' argument of ppdm_ecdf_resample must be the name of the row-key column (a string). Got '
                              || if(key IS NULL, 'NULL', typeof(key)) || ' instead.')
               WHEN NOT __ppdm_key_found
                   THEN error('ppdm_ecdf_resample: column ''' || key::VARCHAR || ''' (the ''key'' argument) not found in table '''
                              || tbl::VARCHAR || '''; its columns are '
                              || list_transform(__ppdm_keys, lambda k: k[6:])::VARCHAR || '.')
               WHEN NOT regexp_full_match(__ppdm_col_type, '(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|DECIMAL.*)')
                   THEN error('ppdm_ecdf_resample: column ' || col::VARCHAR || ' must be numeric, got ' || __ppdm_col_type)
               WHEN NOT regexp_full_match(__ppdm_key_type, '(TINYINT|SMALLINT|INTEGER|BIGINT|UTINYINT|USMALLINT|UINTEGER)')
                   THEN error('ppdm_ecdf_resample: the key column ' || key::VARCHAR || ' must hold integers (BIGINT; for a '
                              || 'text key, add a column ppdm_key(text, s) with the same ''secret'' s and name it). Got ' || __ppdm_key_type || ' instead.')
               WHEN bins IS NULL OR NOT regexp_full_match(typeof(bins), '(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|DECIMAL.*)')
                   THEN error('ppdm_ecdf_resample: bins must be an integer >= 2, got ' || if(bins IS NULL, 'NULL', typeof(bins))
                              || ' (the ''bins'' argument: an integer in [2, 10,000,000]).')
               -- The limit of polars_ppdm.ecdf_resample: the cut points are bins + 1 rows (and
               -- 1e11 bins took more than 20 GB); NaN compares above every number.
               WHEN NOT (TRY_CAST(bins AS DOUBLE) BETWEEN 2 AND 10000000) OR TRY_CAST(bins AS DOUBLE) <> floor(TRY_CAST(bins AS DOUBLE))
                   THEN error('ppdm_ecdf_resample: bins must be an integer >= 2, got ' || bins::VARCHAR
                              || ' (the ''bins'' argument: an integer in [2, 10,000,000], the limit of '
                              || 'polars_ppdm.ecdf_resample; the cut points take memory per bin).')
               ELSE TRY_CAST(bins AS DOUBLE)::BIGINT
           END AS __ppdm_b
    FROM __ppdm_shape
),
__ppdm_base AS (
    SELECT *,
           TRY_CAST(coalesce(*COLUMNS(lambda c: c = 'user:' || col::VARCHAR OR c = '__ppdm_none')) AS DOUBLE) AS __ppdm_x,
           TRY_CAST(coalesce(*COLUMNS(lambda c: c = 'user:' || key::VARCHAR OR c = '__ppdm_none')) AS BIGINT) AS __ppdm_key
    FROM __ppdm_src
),
__ppdm_stats AS (
    SELECT CASE
               WHEN (SELECT __ppdm_b FROM __ppdm_args) IS NULL THEN NULL  -- the arguments first (args raises)
               WHEN count(*) FILTER (WHERE isnan(__ppdm_x) OR isinf(__ppdm_x)) > 0
                   THEN error('ppdm_ecdf_resample: column ' || col::VARCHAR || ' holds NaN or infinite values; make them null')
               WHEN count(*) > 0 AND count(__ppdm_x) < 2  -- an empty table gives an empty table
                   THEN error('ppdm_ecdf_resample: column ' || col::VARCHAR || ' needs at least 2 non-null values to build an ECDF, '
                              || 'and has fewer; leave it out of the release, or release more rows.')
               -- As polars_ppdm.ecdf_resample: a span beyond float64 makes the cut points NaN.
               WHEN isinf(max(__ppdm_x) - min(__ppdm_x))
                   THEN error('ppdm_ecdf_resample: column ' || col::VARCHAR || ' has a range beyond float64 (its maximum '
                              || 'minus its minimum must be finite, or the cut points would be NaN); rescale the column first.')
               WHEN min(__ppdm_x) = max(__ppdm_x)
                   THEN error('ppdm_ecdf_resample: column ' || col::VARCHAR || ' is constant (all its non-null values are equal); releasing it hides nothing: leave it out of the release.')
               WHEN count(*) FILTER (WHERE __ppdm_x IS NOT NULL AND __ppdm_key IS NULL) > 0
                   THEN error('ppdm_ecdf_resample: the key column ' || key::VARCHAR || ' has null values in rows that need a random draw; every such row needs a key: fill the key or drop those rows first.')
               ELSE (SELECT __ppdm_b FROM __ppdm_args)
           END AS __ppdm_b,
           count(__ppdm_x) AS __ppdm_n, min(__ppdm_x) AS __ppdm_lo, max(__ppdm_x) AS __ppdm_hi
    FROM __ppdm_base
),
-- Cut points exactly as the kernel computes them: lo + (hi - lo) * (j / b), the last = hi.
__ppdm_cuts AS (
    SELECT __ppdm_j,
           CASE WHEN __ppdm_j = __ppdm_b THEN __ppdm_hi
                ELSE __ppdm_lo + (__ppdm_hi - __ppdm_lo) * (__ppdm_j::DOUBLE / __ppdm_b) END AS __ppdm_cut
    FROM __ppdm_stats, range(0, __ppdm_b + 1) __ppdm_r(__ppdm_j)
),
-- Each value's interval: the smallest j with value <= cut j, from an arithmetic guess
-- corrected against the real cut points (rounding can put the guess one off).
__ppdm_guess AS (
    SELECT __ppdm_x,
           least(greatest(ceil((__ppdm_x - __ppdm_lo) / (__ppdm_hi - __ppdm_lo) * __ppdm_b), 0), __ppdm_b)::BIGINT AS __ppdm_g
    FROM __ppdm_base, __ppdm_stats WHERE __ppdm_x IS NOT NULL
),
__ppdm_located AS (
    SELECT CASE WHEN __ppdm_x > c.__ppdm_cut THEN __ppdm_g + 1
                WHEN __ppdm_g > 0 AND __ppdm_x <= p.__ppdm_cut THEN __ppdm_g - 1
                ELSE __ppdm_g END AS __ppdm_j
    FROM __ppdm_guess
    JOIN __ppdm_cuts c ON c.__ppdm_j = __ppdm_g
    LEFT JOIN __ppdm_cuts p ON p.__ppdm_j = __ppdm_g - 1
),
__ppdm_counts AS (SELECT __ppdm_j, count(*) AS __ppdm_n FROM __ppdm_located GROUP BY __ppdm_j),
__ppdm_cdf AS (
    SELECT c.__ppdm_j, c.__ppdm_cut, sum(greatest(coalesce(k.__ppdm_n, 0), 1)) OVER (ORDER BY c.__ppdm_j) AS __ppdm_cum
    FROM __ppdm_cuts c LEFT JOIN __ppdm_counts k USING (__ppdm_j)
),
__ppdm_levels AS (
    SELECT __ppdm_j, __ppdm_cut, __ppdm_cum::DOUBLE / max(__ppdm_cum) OVER () AS __ppdm_f FROM __ppdm_cdf
),
-- The column's own key (as polars_ppdm.perturb.ecdf.column_key): the release key of its
-- label and of the keyed digest of its values, so that other data draw another sample.
__ppdm_own AS (
    SELECT _ppdm_ecdf_key(secret::VARCHAR, col::VARCHAR, any_value(s.__ppdm_b),
                          (coalesce(sum(_ppdm_ecdf_words(secret::VARCHAR, b.__ppdm_x)), 0) % 18446744073709551616)::UBIGINT,
                          count(*)) AS __ppdm_own_key
    FROM __ppdm_base b JOIN __ppdm_stats s ON s.__ppdm_b IS NOT NULL
    WHERE b.__ppdm_x IS NOT NULL
    HAVING count(*) > 0  -- an empty table: no key, and nothing drawn
),
-- The row of rank r gets the inverse CDF of the r-th smallest of n keyed uniforms, drawn
-- in rank order without a sort (exponential spacings, polars_ppdm.kernels.spacings):
-- the offsets of the blocks of 2048 ranks and their total from one pass over the draws,
-- then each block's uniforms from its own draws, by the kernel Polars calls.
__ppdm_spacings AS (
    SELECT _ppdm_ecdf_offsets(__ppdm_own_key, 'ecdf_resample/' || col::VARCHAR, __ppdm_n) AS __ppdm_o, __ppdm_n
    FROM __ppdm_stats, __ppdm_own WHERE __ppdm_n > 0
),
__ppdm_blocks AS (
    SELECT __ppdm_k,
           _ppdm_ecdf_uniforms((SELECT __ppdm_own_key FROM __ppdm_own), 'ecdf_resample/' || col::VARCHAR, __ppdm_n, __ppdm_k,
                               __ppdm_o[__ppdm_k + 1], __ppdm_o[len(__ppdm_o)]) AS __ppdm_us
    FROM __ppdm_spacings, range(0, len(__ppdm_o) - 1) __ppdm_r(__ppdm_k)
),
__ppdm_ranked_draws AS (
    SELECT __ppdm_k * 2048 + generate_subscripts(__ppdm_us, 1) AS __ppdm_r, unnest(__ppdm_us) AS __ppdm_u
    FROM __ppdm_blocks
),
__ppdm_sample AS (
    SELECT d.__ppdm_r,
           CASE WHEN lv.__ppdm_j IS NULL THEN (SELECT __ppdm_lo FROM __ppdm_stats)
                ELSE lv.__ppdm_cut + (d.__ppdm_u - lv.__ppdm_f) / (up.__ppdm_f - lv.__ppdm_f) * (up.__ppdm_cut - lv.__ppdm_cut)
           END AS __ppdm_v
    FROM __ppdm_ranked_draws d
    ASOF LEFT JOIN __ppdm_levels lv ON d.__ppdm_u >= lv.__ppdm_f
    LEFT JOIN __ppdm_levels up ON up.__ppdm_j = lv.__ppdm_j + 1
),
__ppdm_ranked_rows AS (
    SELECT *, row_number() OVER (
        ORDER BY __ppdm_x, ppdm_prf_word((SELECT __ppdm_own_key FROM __ppdm_own), 'ecdf_resample/' || col::VARCHAR || '/ties', __ppdm_key)
    ) AS __ppdm_r
    -- Joined to the checks so that they run first (DuckDB 1.5 called the UDF before them,
    -- which then named a null key where the argument was the wrong type).
    FROM __ppdm_base SEMI JOIN __ppdm_stats ON __ppdm_stats.__ppdm_b IS NOT NULL WHERE __ppdm_x IS NOT NULL
),
__ppdm_released AS (
    SELECT r.* EXCLUDE (__ppdm_r), s.__ppdm_v FROM __ppdm_ranked_rows r JOIN __ppdm_sample s ON s.__ppdm_r = r.__ppdm_r
    UNION ALL BY NAME
    SELECT *, NULL::DOUBLE AS __ppdm_v FROM __ppdm_base WHERE __ppdm_x IS NULL
),
-- The table's columns but col, then col's values replaced, under its name (the alias
-- '\0'), last.  The lambdas match __ppdm_none and __ppdm_v too, so that they bind when
-- col is the only column or is missing (an error above); the final SELECT keeps the
-- 'user:' columns without the prefix (one at least: col, or all when col is missing).
__ppdm_named AS (
    SELECT COLUMNS(lambda c: (starts_with(c, 'user:') AND c IS DISTINCT FROM 'user:' || col::VARCHAR)
                             OR c IN ('__ppdm_none', '__ppdm_pos')),
           CASE WHEN COLUMNS(lambda c: c = 'user:' || col::VARCHAR OR c = '__ppdm_v') IS NULL THEN NULL ELSE __ppdm_v END AS '\0'
    FROM __ppdm_released
)
-- In the table's column order, col in its place: the union by name takes its columns' order
-- from its first part, the table's schema (no row), and col's type from both (DOUBLE).  In
-- the rows' order of the scan (__ppdm_pos): the ranking and the joins above reorder them.
SELECT COLUMNS('(?s)^user:(.*)$') AS '\1' FROM ((FROM __ppdm_src LIMIT 0) UNION ALL BY NAME (FROM __ppdm_named)) ORDER BY __ppdm_pos;
