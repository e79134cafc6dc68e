-- name: ppdm_rr_support_k
-- Corrected frequency and standard error of every category of one column disguised by k-ary randomized response.
--
-- As polars_ppdm.rr_support(frame, col, p=..., categories=[...]) (or epsilon=...).
-- tbl:        the table (or view) name, a string.     col: the disguised column, a string.
-- categories: the public domain, a list of k >= 2 distinct values (as given to
--             ppdm_rr_disguise_k); values are matched by their text (x::VARCHAR).
-- p, epsilon: exactly one (by name: p := 0.8 or epsilon := 1.0): the keep probability the
--             column was disguised with (in [0, 1], not 1/k), or its local-DP epsilon (> 0),
--             turned into p by ppdm_rr_p_from_epsilon(epsilon, k) as Python does.
-- Returns one row per category, in the order of categories (empty ones included): the
-- category in a column named col, observed (disguised count), frequency (the unbiased
-- estimate M^-1 lambda; it may fall outside [0, 1]) and std_error (for the frequency in
-- this table).  An empty table gives an empty result; nulls and values outside categories
-- are refused, and so is every argument that is NULL, of the wrong type or (col) names no
-- column of tbl (the error lists its columns) or one of the result's own (observed,
-- frequency, std_error), as in Python.
CREATE OR REPLACE MACRO ppdm_rr_support_k(tbl, col, categories, p := NULL, epsilon := NULL) AS TABLE
-- The table's columns renamed 'user:<name>', after a NULL column __ppdm_none: no column
-- name can clash with the macro's own (__ppdm_*, and the result's 'out:<name>' before the
-- final SELECT strips the prefixes), and a lambda matching col or __ppdm_none always
-- matches something, so a col that
-- names no column is our error below, not DuckDB's "COLUMNS(...) resulted in an empty set"
-- binder error.  The table is read here only, in the first CTE: no CTE name shadows it.
WITH __ppdm_src AS (SELECT NULL AS __ppdm_none, COLUMNS(*) AS 'user:\0' FROM query_table(tbl)),
-- The table's schema on one row (an empty table too).
__ppdm_shape AS (
    SELECT len(list_value(*COLUMNS(lambda c: c = 'user:' || col::VARCHAR OR c = '__ppdm_none'))) = 2 AS __ppdm_col_found,
           json_keys(to_json(struct_pack(*COLUMNS(lambda c: starts_with(c, 'user:'))))) AS __ppdm_keys
    FROM (SELECT 1 AS __ppdm_one) LEFT JOIN (FROM __ppdm_src LIMIT 0) ON true
),
__ppdm_params AS (
    SELECT CASE
               WHEN col IS NULL OR typeof(col) <> 'VARCHAR'
                   THEN error('The ''col'' argument of ppdm_rr_support_k must be a column name (a string). Got '
                              || if(col IS NULL, 'NULL', typeof(col)) || ' instead.')
               WHEN NOT __ppdm_col_found
                   THEN error('ppdm_rr_support_k: column ''' || col::VARCHAR || ''' (the ''col'' argument) not found in table '''
                              || tbl::VARCHAR || '''; its columns are '
                              || list_transform(__ppdm_keys, lambda k: k[6:])::VARCHAR || '.')
               -- As polars_ppdm.rr_support (DuckDB's names ignore case).
               WHEN lower(col::VARCHAR) IN ('observed', 'frequency', 'std_error')
                   THEN error('The ''col'' argument of ppdm_rr_support_k must name no column called ''observed'', ''frequency'' '
                              || 'or ''std_error'' (the result''s own columns). Got ''' || col::VARCHAR
                              || ''' instead; rename it first (e.g. in a view).')
               WHEN categories IS NULL OR NOT ends_with(typeof(categories), '[]')
                   THEN error('The ''categories'' argument of ppdm_rr_support_k must be a list of k >= 2 distinct, '
                              || 'non-null values. Got ' || if(categories IS NULL, 'NULL', typeof(categories)) || ' instead.')
               WHEN len(TRY_CAST(categories AS VARCHAR[])) < 2
                    OR len(list_distinct(TRY_CAST(categories AS VARCHAR[]))) <> len(TRY_CAST(categories AS VARCHAR[]))
                   THEN error('The ''categories'' argument of ppdm_rr_support_k must be a list of k >= 2 distinct, '
                              || 'non-null values. Got ' || categories::VARCHAR || ' instead.')
               WHEN (p IS NULL) = (epsilon IS NULL)
                   THEN error('ppdm_rr_support_k needs exactly one of ''p'' and ''epsilon''. Got p='
                              || coalesce(p::VARCHAR, 'NULL') || ', epsilon=' || coalesce(epsilon::VARCHAR, 'NULL') || '.')
               WHEN p IS NOT NULL AND NOT regexp_full_match(typeof(p), '(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|DECIMAL.*)')
                   THEN error('The ''p'' argument of ppdm_rr_support_k must be a float in [0, 1]. Got ' || typeof(p) || ' instead.')
               WHEN epsilon IS NOT NULL AND NOT regexp_full_match(typeof(epsilon), '(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|DECIMAL.*)')
                   THEN error('The ''epsilon'' argument of ppdm_rr_support_k must be a float > 0. Got ' || typeof(epsilon) || ' instead.')
               WHEN p IS NOT NULL AND (isnan(TRY_CAST(p AS DOUBLE)) OR TRY_CAST(p AS DOUBLE) < 0 OR TRY_CAST(p AS DOUBLE) > 1)
                   THEN error('The ''p'' argument of ppdm_rr_support_k must be a float in [0, 1]. Got '
                              || p::VARCHAR || ' instead.')
               WHEN p IS NOT NULL AND abs(TRY_CAST(p AS DOUBLE) - 1.0 / len(categories)) <= 1e-12
                   THEN error('The ''p'' argument of ppdm_rr_support_k must be a float in [0, 1] other than 1/k = '
                              || round(1.0 / len(categories), 6)::VARCHAR || ' (with k = ' || len(categories)::VARCHAR
                              || ' categories the disguise cannot be inverted). Got ' || p::VARCHAR || ' instead.')
               WHEN p IS NULL AND (isnan(TRY_CAST(epsilon AS DOUBLE)) OR NOT (TRY_CAST(epsilon AS DOUBLE) > 0))
                   THEN error('The ''epsilon'' argument of ppdm_rr_support_k must be a float > 0. Got '
                              || epsilon::VARCHAR || ' instead.')
               WHEN p IS NOT NULL THEN TRY_CAST(p AS DOUBLE)
               ELSE ppdm_rr_p_from_epsilon(TRY_CAST(epsilon AS DOUBLE), k := len(categories))
           END AS __ppdm_p,
           len(TRY_CAST(categories AS VARCHAR[])) AS __ppdm_k
    FROM __ppdm_shape
),
__ppdm_cats AS (
    SELECT __ppdm_i AS __ppdm_j, categories[__ppdm_i] AS __ppdm_category, categories[__ppdm_i]::VARCHAR AS __ppdm_label
    FROM range(1, len(categories) + 1) __ppdm_r(__ppdm_i)
),
__ppdm_obs AS (
    SELECT __ppdm_v, count(*) AS __ppdm_n
    FROM (SELECT coalesce(*COLUMNS(lambda c: c = 'user:' || col::VARCHAR OR c = '__ppdm_none'))::VARCHAR AS __ppdm_v FROM __ppdm_src)
    GROUP BY ALL
),
__ppdm_totals AS (
    SELECT CASE
               -- The arguments first (params raises): this CTE does not otherwise depend on
               -- params, and DuckDB may run it first.
               WHEN (SELECT __ppdm_p FROM __ppdm_params) IS NULL THEN NULL
               WHEN bool_or(o.__ppdm_v IS NULL)
                   THEN error('The column ' || col::VARCHAR || ' of ppdm_rr_support_k has null values; nulls carry no '
                              || 'disguised answer, so drop or fill them first.')
               WHEN bool_or(c.__ppdm_j IS NULL)
                   THEN error('The column ' || col::VARCHAR || ' of ppdm_rr_support_k holds values outside its ''categories'' '
                              || categories::VARCHAR || '; list every value the column can hold, or drop or fix those rows first.')
               ELSE sum(o.__ppdm_n)::DOUBLE
           END AS __ppdm_total
    FROM __ppdm_obs o LEFT JOIN __ppdm_cats c ON c.__ppdm_label = o.__ppdm_v
),
-- M = p I + (1-p)/(k-1) (J - I) = a I + b J, so M^-1 = (I - d J) / a with d = b / (a + k b).
__ppdm_inverse AS (
    SELECT (1 - __ppdm_d) / __ppdm_a AS __ppdm_diag, -__ppdm_d / __ppdm_a AS __ppdm_off
    FROM (SELECT __ppdm_a, __ppdm_b / (__ppdm_a + __ppdm_k * __ppdm_b) AS __ppdm_d
          FROM (SELECT __ppdm_p - __ppdm_b AS __ppdm_a, __ppdm_b, __ppdm_k
                FROM (SELECT __ppdm_p, __ppdm_k, (1 - __ppdm_p) / (__ppdm_k - 1) AS __ppdm_b FROM __ppdm_params)))
),
__ppdm_shares AS (
    SELECT c.__ppdm_j, c.__ppdm_category, coalesce(o.__ppdm_n, 0) AS __ppdm_observed, t.__ppdm_total,
           coalesce(o.__ppdm_n, 0) / t.__ppdm_total AS __ppdm_s,
           sum(coalesce(o.__ppdm_n, 0) / t.__ppdm_total) OVER () - coalesce(o.__ppdm_n, 0) / t.__ppdm_total AS __ppdm_rest
    FROM __ppdm_cats c LEFT JOIN __ppdm_obs o ON o.__ppdm_v = c.__ppdm_label, __ppdm_totals t
    WHERE t.__ppdm_total > 0
),
__ppdm_estimates AS (
    SELECT __ppdm_j, __ppdm_category, __ppdm_observed, __ppdm_total,
           __ppdm_diag * __ppdm_s + __ppdm_off * __ppdm_rest AS __ppdm_frequency,
           __ppdm_diag * __ppdm_diag * __ppdm_s + __ppdm_off * __ppdm_off * __ppdm_rest AS __ppdm_square
    FROM __ppdm_shares, __ppdm_inverse
),
-- An empty relation with the column col (and __ppdm_none, so that it binds when col is
-- missing, an error above): an expression that mentions col takes its name, and the alias
-- pattern '\0' keeps it (the value is never read).  The final SELECT keeps the 'user:' and
-- 'out:' columns (one at least, when col is missing), without the prefix: __ppdm_none's
-- copy and the order are left out.
__ppdm_named AS (SELECT COLUMNS(lambda c: c = 'user:' || col::VARCHAR OR c = '__ppdm_none') FROM __ppdm_src LIMIT 0),
__ppdm_rows AS (
    SELECT CASE WHEN COLUMNS(lambda c: c = 'user:' || col::VARCHAR OR c = '__ppdm_none') IS NULL THEN e.__ppdm_category END AS '\0',
           e.__ppdm_observed::BIGINT AS "out:observed",
           e.__ppdm_frequency AS "out:frequency",
           sqrt(greatest((e.__ppdm_square - e.__ppdm_frequency) / e.__ppdm_total, 0)) AS "out:std_error",
           e.__ppdm_j
    FROM __ppdm_estimates e LEFT JOIN __ppdm_named ON false
)
SELECT COLUMNS('(?s)^(?:user|out):(.*)$') AS '\1' FROM __ppdm_rows ORDER BY __ppdm_rows.__ppdm_j;
