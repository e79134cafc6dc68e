-- name: ppdm_ecdf_resample
-- ECDF resampling with rank re-linking of one numeric column (paper 000), as polars_ppdm.ecdf_resample.
--
-- tbl:  the table (or view) name, a string.     col: the column to resample, a string.
-- key:  the BIGINT row-key column, a string (DuckDB has no stable row position).
-- bins: equal-width intervals between min and max (>= 2).   secret: the secret (VARCHAR, as
--       for ppdm_rr_disguise: hex, 'env:NAME' or decimal digits).
-- Needs the keyed-randomness UDFs of ppdm.duckdb.register (ppdm_uniform, ppdm_prf_word).
-- Returns every row of tbl: the other columns as they are, then col (DOUBLE) last, each
-- non-null value replaced by the generated value of the same rank; nulls stay null and
-- are left out of the ECDF.  The same values as Polars for the same secret and key.
-- Several columns: one call per column, each over a (temporary) table made by the previous
-- call (DuckDB refuses a view that nests this macro in itself).
CREATE OR REPLACE MACRO ppdm_ecdf_resample(tbl, col, key, bins, secret) AS TABLE
WITH base AS (
    SELECT *,
           TRY_CAST(COLUMNS(lambda c: c = col) AS DOUBLE) AS __ppdm_x,  -- the type is checked below
           typeof(COLUMNS(lambda c: c = col)) AS __ppdm_type,
           COLUMNS(lambda c: c = key)::BIGINT AS __ppdm_key
    FROM query_table(tbl)
),
stats AS (
    SELECT CASE
               WHEN bins IS NULL OR NOT isfinite(bins::DOUBLE) OR bins < 2 OR bins <> floor(bins)
                   THEN error('ppdm_ecdf_resample: bins must be an integer >= 2, got ' || coalesce(bins::VARCHAR, 'NULL'))
               WHEN NOT regexp_full_match(any_value(__ppdm_type), '(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|DECIMAL.*)')
                   THEN error('ppdm_ecdf_resample: column ' || col || ' must be numeric, got ' || any_value(__ppdm_type))
               WHEN count(*) FILTER (WHERE isnan(__ppdm_x) OR isinf(__ppdm_x)) > 0
                   THEN error('ppdm_ecdf_resample: column ' || col || ' holds NaN or infinite values; make them null')
               WHEN count(*) > 0 AND count(__ppdm_x) < 2  -- an empty table gives an empty table
                   THEN error('ppdm_ecdf_resample: column ' || col || ' needs at least 2 non-null values, got ' || count(__ppdm_x))
               WHEN min(__ppdm_x) = max(__ppdm_x)
                   THEN error('ppdm_ecdf_resample: column ' || col || ' is constant; releasing it hides nothing')
               WHEN count(*) FILTER (WHERE __ppdm_x IS NOT NULL AND __ppdm_key IS NULL) > 0
                   THEN error('ppdm_ecdf_resample: the key column ' || key || ' has nulls in rows that need a draw')
               ELSE bins::BIGINT
           END AS b,
           count(__ppdm_x) AS n, min(__ppdm_x) AS lo, max(__ppdm_x) AS hi
    FROM base
),
-- Cut points exactly as the kernel computes them: lo + (hi - lo) * (j / b), the last = hi.
cuts AS (
    SELECT j, CASE WHEN j = b THEN hi ELSE lo + (hi - lo) * (j::DOUBLE / b) END AS x
    FROM stats, range(0, b + 1) r(j)
),
-- Each value's interval: the smallest j with value <= cut j, from an arithmetic guess
-- corrected against the real cut points (rounding can put the guess one off).
guess AS (
    SELECT __ppdm_x, least(greatest(ceil((__ppdm_x - lo) / (hi - lo) * b), 0), b)::BIGINT AS g
    FROM base, stats WHERE __ppdm_x IS NOT NULL
),
located AS (
    SELECT CASE WHEN __ppdm_x > c.x THEN g + 1 WHEN g > 0 AND __ppdm_x <= p.x THEN g - 1 ELSE g END AS j
    FROM guess
    JOIN cuts c ON c.j = g
    LEFT JOIN cuts p ON p.j = g - 1
),
counts AS (SELECT j, count(*) AS n FROM located GROUP BY j),
cdf AS (
    SELECT c.j, c.x, sum(greatest(coalesce(k.n, 0), 1)) OVER (ORDER BY c.j) AS cum
    FROM cuts c LEFT JOIN counts k USING (j)
),
levels AS (
    SELECT j, x, cum::DOUBLE / max(cum) OVER () AS f FROM cdf
),
-- Draw i is the PRF at key i; the r-th smallest draw goes to the row of rank r.
draws AS (
    SELECT ppdm_uniform(secret, 'ecdf_resample/' || col, i) AS u
    FROM stats, range(0, n) r(i)
),
ranked_draws AS (SELECT u, row_number() OVER (ORDER BY u) AS r FROM draws),
sample AS (
    SELECT d.r,
           CASE WHEN lv.j IS NULL THEN (SELECT lo FROM stats)
                ELSE lv.x + (d.u - lv.f) / (up.f - lv.f) * (up.x - lv.x) END AS v
    FROM ranked_draws d
    ASOF LEFT JOIN levels lv ON d.u >= lv.f
    LEFT JOIN levels up ON up.j = lv.j + 1
),
ranked_rows AS (
    SELECT *, row_number() OVER (
        ORDER BY __ppdm_x, ppdm_prf_word(secret, 'ecdf_resample/' || col || '/ties', __ppdm_key)
    ) AS __ppdm_r
    FROM base WHERE __ppdm_x IS NOT NULL
),
released AS (
    SELECT r.* EXCLUDE (__ppdm_r), s.v AS __ppdm_v FROM ranked_rows r JOIN sample s ON s.r = r.__ppdm_r
    UNION ALL BY NAME
    SELECT *, NULL::DOUBLE AS __ppdm_v FROM base WHERE __ppdm_x IS NULL
)
SELECT COLUMNS(lambda c: c NOT IN (col, '__ppdm_x', '__ppdm_type', '__ppdm_key', '__ppdm_v')),
       CASE WHEN COLUMNS(lambda c: c = col) IS NULL THEN NULL ELSE __ppdm_v END  -- keeps the name col
FROM released;
