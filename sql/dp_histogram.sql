-- name: ppdm_dp_histogram
-- Differentially private 1-D histogram over a public grid, as polars_ppdm.dp_histogram.
--
-- tbl: table (or view) name, a string.   col: the numeric column, a string.
-- low, high: public bounds (values outside count in the edge bins).   bins: >= 1.
-- epsilon: > 0.   secret: the secret (VARCHAR, as for ppdm_rr_disguise).
-- Each row is its own privacy unit: limit the rows per person first where a person has
-- several (polars_ppdm.dp_histogram does it with key= and max_contributions=).
-- Needs ppdm_discrete_laplace of ppdm.duckdb.register.  Returns every bin, empty ones
-- included: col_bin, col_low, col_high (as bin, low, high) and count, the same values as
-- Polars for the same secret.
CREATE OR REPLACE MACRO ppdm_dp_histogram(tbl, col, low, high, bins, epsilon, secret) AS TABLE
WITH params AS (
    SELECT CASE
               -- (DuckDB orders NaN above every number, so NaN needs its own test.)
               WHEN low IS NULL OR high IS NULL OR isnan(low) OR isnan(high) OR NOT (low < high)
                    OR isinf(low) OR isinf(high)
                   THEN error('ppdm_dp_histogram: bounds must be finite with low < high, got '
                              || coalesce(low::VARCHAR, 'NULL') || ', ' || coalesce(high::VARCHAR, 'NULL'))
               WHEN bins IS NULL OR NOT isfinite(bins::DOUBLE) OR bins < 1 OR bins <> floor(bins)
                   THEN error('ppdm_dp_histogram: bins must be an integer >= 1, got ' || coalesce(bins::VARCHAR, 'NULL'))
               WHEN epsilon IS NULL OR NOT isfinite(epsilon::DOUBLE) OR NOT (epsilon > 0)
                   THEN error('ppdm_dp_histogram: epsilon must be a finite float > 0, got ' || coalesce(epsilon::VARCHAR, 'NULL'))
               ELSE bins::BIGINT
           END AS b,
           low::DOUBLE AS lo, high::DOUBLE AS hi
),
binned AS (
    SELECT CASE
               WHEN x IS NULL OR isnan(x)
                   THEN error('ppdm_dp_histogram: column ' || col || ' holds null or NaN values; drop or fill them first')
               ELSE least(greatest(floor((x - lo) * (b / (hi - lo))), 0), b - 1)::BIGINT
           END AS bin
    FROM (SELECT COLUMNS(lambda c: c = col)::DOUBLE AS x FROM query_table(tbl)), params
),
counts AS (SELECT bin, count(*) AS n FROM binned GROUP BY bin),
grid AS (SELECT i AS bin, lo, hi, b FROM params, range(0, b) r(i))
SELECT g.bin,
       g.lo + g.bin * ((g.hi - g.lo) / g.b) AS low,
       CASE WHEN g.bin = g.b - 1 THEN g.hi ELSE g.lo + (g.bin + 1) * ((g.hi - g.lo) / g.b) END AS high,
       coalesce(c.n, 0) + ppdm_discrete_laplace(secret, 'dp_histogram/' || col, g.bin, 1.0 / epsilon) AS count
FROM grid g LEFT JOIN counts c USING (bin)
ORDER BY g.bin;
