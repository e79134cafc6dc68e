-- name: ppdm_dp_histogram
-- Differentially private 1-D histogram over a public grid, as polars_ppdm.dp_histogram.
--
-- tbl: table (or view) name, a string.   col: the numeric column, a string.
-- low, high: the public bounds (Python's bounds=(low, high)); values outside count in the
--   edge bins.   bins: >= 1.   epsilon: > 0.   secret: the secret (VARCHAR, as for
--   ppdm_rr_disguise).
-- Each row is its own privacy unit: limit the rows per person first where a person has
-- several (polars_ppdm.dp_histogram does it with key= and max_contributions=).
-- Needs ppdm_discrete_laplace of ppdm.duckdb.register.  Returns every bin, empty ones
-- included, with Polars' column names: <col>_bin (BIGINT), <col>_low, <col>_high (DOUBLE)
-- and count (BIGINT), e.g. age_bin, age_low, age_high, count; the same values as Polars
-- for the same secret.
CREATE OR REPLACE MACRO ppdm_dp_histogram(tbl, col, low, high, bins, epsilon, secret) AS TABLE
WITH params AS (
    SELECT CASE
               -- (DuckDB orders NaN above every number, so NaN needs its own test.)
               WHEN low IS NULL OR high IS NULL OR isnan(low) OR isnan(high) OR NOT (low < high)
                    OR isinf(low) OR isinf(high)
                   THEN error('The ''low'' and ''high'' arguments of ppdm_dp_histogram must be finite bounds with '
                              || 'low < high. Got ' || coalesce(low::VARCHAR, 'NULL') || ', '
                              || coalesce(high::VARCHAR, 'NULL') || ' instead.')
               WHEN bins IS NULL OR NOT isfinite(bins::DOUBLE) OR bins < 1 OR bins <> floor(bins)
                   THEN error('The ''bins'' argument of ppdm_dp_histogram must be an integer >= 1. Got '
                              || coalesce(bins::VARCHAR, 'NULL') || ' instead.')
               WHEN epsilon IS NULL OR NOT isfinite(epsilon::DOUBLE) OR NOT (epsilon > 0)
                   THEN error('The ''epsilon'' argument of ppdm_dp_histogram must be a finite float > 0. Got '
                              || coalesce(epsilon::VARCHAR, 'NULL') || ' instead.')
               ELSE bins::BIGINT
           END AS __ppdm_b,
           low::DOUBLE AS __ppdm_lo, high::DOUBLE AS __ppdm_hi
),
binned AS (
    SELECT CASE
               WHEN __ppdm_x IS NULL OR isnan(__ppdm_x)
                   THEN error('The column ' || col || ' of ppdm_dp_histogram holds null or NaN values; '
                              || 'drop or fill them first.')
               ELSE least(greatest(floor((__ppdm_x - __ppdm_lo) * (__ppdm_b / (__ppdm_hi - __ppdm_lo))), 0),
                          __ppdm_b - 1)::BIGINT
           END AS __ppdm_bin
    FROM (SELECT COLUMNS(lambda c: c = col)::DOUBLE AS __ppdm_x FROM query_table(tbl)), params
),
counts AS (SELECT __ppdm_bin, count(*) AS __ppdm_n FROM binned GROUP BY __ppdm_bin),
grid AS (SELECT i AS __ppdm_bin, __ppdm_lo, __ppdm_hi, __ppdm_b FROM params, range(0, __ppdm_b) r(i)),
-- One struct column, so that a user column named like a field cannot clash below.
noisy AS (
    SELECT {'bin': g.__ppdm_bin,
            'low': g.__ppdm_lo + g.__ppdm_bin * ((g.__ppdm_hi - g.__ppdm_lo) / g.__ppdm_b),
            'high': CASE WHEN g.__ppdm_bin = g.__ppdm_b - 1 THEN g.__ppdm_hi
                         ELSE g.__ppdm_lo + (g.__ppdm_bin + 1) * ((g.__ppdm_hi - g.__ppdm_lo) / g.__ppdm_b) END,
            'count': coalesce(c.__ppdm_n, 0)
                     + ppdm_discrete_laplace(secret, 'dp_histogram/' || col, g.__ppdm_bin, 1.0 / epsilon)
           } AS __ppdm_cell
    FROM grid g LEFT JOIN counts c USING (__ppdm_bin)
),
-- An empty relation with one column named col.  An expression that mentions it takes its
-- name, and the alias pattern '\0_bin' makes <col>_bin of it (the value is never read).
named AS (SELECT COLUMNS(lambda c: c = col) FROM query_table(tbl) LIMIT 0)
SELECT CASE WHEN COLUMNS(lambda c: c = col) IS NULL THEN noisy.__ppdm_cell.bin END AS '\0_bin',
       CASE WHEN COLUMNS(lambda c: c = col) IS NULL THEN noisy.__ppdm_cell.low END AS '\0_low',
       CASE WHEN COLUMNS(lambda c: c = col) IS NULL THEN noisy.__ppdm_cell.high END AS '\0_high',
       noisy.__ppdm_cell.count AS count
FROM noisy LEFT JOIN named ON false
ORDER BY noisy.__ppdm_cell.bin;
