-- name: ppdm_dp_histogram
-- Differentially private 1-D histogram over a public grid, as polars_ppdm.dp_histogram.
--
-- tbl: table (or view) name, a string.   col: the numeric column, a string.
-- low, high: the public bounds (Python's bounds=(low, high)); values outside count in the
--   edge bins.   bins: an integer in [1, 50,000,000] (the cell limit of
--   polars_ppdm.dp_histogram: every bin is released, empty ones too).   epsilon: > 0.
--   secret: the secret (VARCHAR, as for ppdm_rr_disguise).
--   mechanism: 'laplace' (the default: discrete Laplace noise of scale 1 / epsilon, pure
--   epsilon-DP) or 'gaussian' (discrete Gaussian noise of sigma 1 / sqrt(2 rho), rho-zCDP;
--   takes rho > 0 and no epsilon), as polars_ppdm.dp_histogram's mechanism= and rho=:
--     FROM ppdm_dp_histogram('visits', 'age', 0, 100, 10, 1.0, 'env:PPDM_SECRET');
--     FROM ppdm_dp_histogram('visits', 'age', 0, 100, 10, mechanism := 'gaussian', rho := 0.5,
--                            secret := 'env:PPDM_SECRET');
-- Every argument is checked before any row is read, with an error naming it: a NULL, a value
-- of the wrong type, a col that names no column of tbl (the error lists its columns).
-- Each row is its own privacy unit: limit the rows per person first where a person has
-- several (polars_ppdm.dp_histogram does it with key= and max_contributions=).
-- Needs ppdm_release_noise / ppdm_release_gaussian of ppdm.duckdb.register (noise under the release's own key).  Returns every bin, empty ones
-- included, with Polars' column names: <col>_bin (BIGINT), <col>_low, <col>_high (DOUBLE)
-- and count (BIGINT), e.g. age_bin, age_low, age_high, count; the same values as Polars
-- for the same secret.
CREATE OR REPLACE MACRO ppdm_dp_histogram(
    tbl, col, low, high, bins, epsilon := NULL, secret := NULL, mechanism := 'laplace', rho := NULL
) AS TABLE
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
           typeof(coalesce(*COLUMNS(lambda c: c = 'user:' || col::VARCHAR OR c = '__ppdm_none'))) AS __ppdm_col_type,
           json_keys(to_json(struct_pack(*COLUMNS(lambda c: starts_with(c, 'user:'))))) AS __ppdm_keys
    FROM (SELECT 1 AS __ppdm_one) LEFT JOIN (FROM __ppdm_src LIMIT 0) ON true
),
__ppdm_params AS (
    SELECT CASE
               -- First, with the built-ins named in full: register() refused a database whose
               -- functions shadow built-ins; a search_path set since could put an attached
               -- database's first (review 79). Checked here, each call, for free.
               WHEN system.main.current_setting('search_path') <> ''
                   THEN system.main.error('ppdm_dp_histogram: a search_path is set (' || system.main.current_setting('search_path')
                              || '): a database in it could name a function as a DuckDB built-in or as a polars_ppdm '
                              || 'function and take its place inside the macro. RESET search_path; nothing was released.')
               WHEN col IS NULL OR typeof(col) <> 'VARCHAR'
                   THEN error('The ''col'' argument of ppdm_dp_histogram must be a column name (a string). Got '
                              || if(col IS NULL, 'NULL', typeof(col)) || ' instead.')
               WHEN NOT __ppdm_col_found
                   THEN error('ppdm_dp_histogram: column ''' || col::VARCHAR || ''' (the ''col'' argument) not found in table '''
                              || tbl::VARCHAR || '''; its columns are '
                              || list_transform(__ppdm_keys, lambda k: k[6:])::VARCHAR || '.')
               WHEN NOT regexp_full_match(__ppdm_col_type, '(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|DECIMAL.*)')
                   THEN error('The column ' || col::VARCHAR || ' of ppdm_dp_histogram must be numeric. Got ' || __ppdm_col_type || ' instead.')
               WHEN (low IS NOT NULL AND NOT regexp_full_match(typeof(low), '(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|DECIMAL.*)'))
                    OR (high IS NOT NULL AND NOT regexp_full_match(typeof(high), '(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|DECIMAL.*)'))
                   THEN error('The ''low'' and ''high'' arguments of ppdm_dp_histogram must be finite numbers with low < high. Got '
                              || if(low IS NULL, 'NULL', typeof(low)) || ', ' || if(high IS NULL, 'NULL', typeof(high)) || ' instead.')
               -- As polars_ppdm.dp_histogram: high - low finite too, else the bin width is
               -- infinite and every edge NaN.  (DuckDB orders NaN above every number, so NaN
               -- needs its own test.)
               WHEN low IS NULL OR high IS NULL OR isnan(TRY_CAST(low AS DOUBLE)) OR isnan(TRY_CAST(high AS DOUBLE))
                    OR NOT (TRY_CAST(low AS DOUBLE) < TRY_CAST(high AS DOUBLE))
                    OR isinf(TRY_CAST(low AS DOUBLE)) OR isinf(TRY_CAST(high AS DOUBLE))
                    OR isinf(TRY_CAST(high AS DOUBLE) - TRY_CAST(low AS DOUBLE))
                   THEN error('The ''low'' and ''high'' arguments of ppdm_dp_histogram must be finite bounds with '
                              || 'low < high (and high - low finite). Got ' || coalesce(low::VARCHAR, 'NULL') || ', '
                              || coalesce(high::VARCHAR, 'NULL') || ' instead.')
               WHEN bins IS NULL OR NOT regexp_full_match(typeof(bins), '(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|DECIMAL.*)')
                   THEN error('The ''bins'' argument of ppdm_dp_histogram must be an integer >= 1 (at most 50,000,000). Got '
                              || if(bins IS NULL, 'NULL', typeof(bins)) || ' instead.')
               -- The cell limit of polars_ppdm.dp_histogram: every bin is a released row.
               WHEN NOT (TRY_CAST(bins AS DOUBLE) BETWEEN 1 AND 50000000) OR TRY_CAST(bins AS DOUBLE) <> floor(TRY_CAST(bins AS DOUBLE))
                   THEN error('The ''bins'' argument of ppdm_dp_histogram must be an integer >= 1 (at most 50,000,000, the '
                              || 'cell limit of polars_ppdm.dp_histogram: every bin is released, empty ones too). Got '
                              || bins::VARCHAR || ' instead.')
               -- As polars_ppdm.dp_histogram: the bin of x is (x - low) * (bins / (high - low)),
               -- whose factor must be finite (else a value equal to low gives 0 x inf = NaN).
               WHEN isinf(TRY_CAST(bins AS DOUBLE) / (TRY_CAST(high AS DOUBLE) - TRY_CAST(low AS DOUBLE)))
                   THEN error('The ''bins'' and ''low''/''high'' arguments of ppdm_dp_histogram: ' || bins::VARCHAR
                              || ' bins over (' || low::VARCHAR || ', ' || high::VARCHAR || ') are narrower than a '
                              || 'float can index (bins / (high - low) overflows); widen the bounds or rescale the column.')
               -- The mechanism and its budget, as polars_ppdm.dp.mechanism.check_mechanism: epsilon
               -- for 'laplace', rho for 'gaussian', exactly the one.
               WHEN mechanism IS NULL OR coalesce(TRY_CAST(mechanism AS VARCHAR), '') NOT IN ('laplace', 'gaussian')
                   THEN error('The ''mechanism'' argument of ppdm_dp_histogram must be one of [''laplace'', ''gaussian'']. Got '
                              || coalesce('''' || TRY_CAST(mechanism AS VARCHAR) || '''', 'NULL') || ' instead.')
               WHEN mechanism::VARCHAR = 'gaussian' AND epsilon IS NOT NULL
                   THEN error('ppdm_dp_histogram with mechanism := ''gaussian'' takes rho (its zCDP cost, > 0) and no epsilon; '
                              || 'for an (epsilon, delta) target use polars_ppdm.dp.zcdp.rho_for(epsilon, delta). Got epsilon '
                              || epsilon::VARCHAR || '.')
               WHEN mechanism::VARCHAR = 'gaussian' AND (rho IS NULL OR NOT regexp_full_match(typeof(rho), '(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|DECIMAL.*)'))
                   THEN error('The ''rho'' argument of ppdm_dp_histogram must be a finite float > 0 (the zCDP cost of '
                              || 'mechanism := ''gaussian''). Got ' || if(rho IS NULL, 'NULL', typeof(rho)) || ' instead.')
               WHEN mechanism::VARCHAR = 'gaussian' AND (NOT isfinite(TRY_CAST(rho AS DOUBLE)) OR NOT (TRY_CAST(rho AS DOUBLE) > 0))
                   THEN error('The ''rho'' argument of ppdm_dp_histogram must be a finite float > 0 (the zCDP cost of '
                              || 'mechanism := ''gaussian''). Got ' || rho::VARCHAR || ' instead.')
               -- The sampler's range of sigma (polars_ppdm.kernels.dp_noise.check_gaussian_sigma),
               -- before any row is read.
               WHEN mechanism::VARCHAR = 'gaussian'
                    AND NOT (1.0 / sqrt(2 * TRY_CAST(rho AS DOUBLE)) BETWEEN 0.0078125 AND 1125899906842624)
                   THEN error('The ''rho'' argument of ppdm_dp_histogram gives the discrete Gaussian a sigma (1 / sqrt(2 rho)) '
                              || 'outside [2^-7, 2^50] (~0.0078 to ~1.1e15). Got rho ' || rho::VARCHAR || ' instead.')
               WHEN mechanism::VARCHAR = 'laplace' AND rho IS NOT NULL
                   THEN error('ppdm_dp_histogram: rho is the budget of mechanism := ''gaussian''; the Laplace mechanism takes '
                              || 'epsilon. Got rho ' || rho::VARCHAR || '.')
               WHEN mechanism::VARCHAR = 'laplace' AND (epsilon IS NULL OR NOT regexp_full_match(typeof(epsilon), '(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|DECIMAL.*)'))
                   THEN error('The ''epsilon'' argument of ppdm_dp_histogram must be a finite float > 0. Got '
                              || if(epsilon IS NULL, 'NULL', typeof(epsilon)) || ' instead.')
               WHEN mechanism::VARCHAR = 'laplace' AND (NOT isfinite(TRY_CAST(epsilon AS DOUBLE)) OR NOT (TRY_CAST(epsilon AS DOUBLE) > 0))
                   THEN error('The ''epsilon'' argument of ppdm_dp_histogram must be a finite float > 0. Got '
                              || epsilon::VARCHAR || ' instead.')
               ELSE TRY_CAST(bins AS DOUBLE)::BIGINT
           END AS __ppdm_b,
           TRY_CAST(low AS DOUBLE) AS __ppdm_lo, TRY_CAST(high AS DOUBLE) AS __ppdm_hi,
           TRY_CAST(epsilon AS DOUBLE) AS __ppdm_eps, TRY_CAST(rho AS DOUBLE) AS __ppdm_rho,
           TRY_CAST(mechanism AS VARCHAR) = 'gaussian' AS __ppdm_gauss
    FROM __ppdm_shape
),
__ppdm_binned AS (
    SELECT CASE
               -- As polars_ppdm.dp_histogram: a value that is no finite number is refused.
               WHEN __ppdm_x IS NULL OR NOT isfinite(__ppdm_x)
                   THEN error('The column ' || col::VARCHAR || ' of ppdm_dp_histogram holds null, NaN or infinite values; '
                              || 'drop or fill them first.')
               ELSE least(greatest(floor((__ppdm_x - __ppdm_lo) * (__ppdm_b / (__ppdm_hi - __ppdm_lo))), 0),
                          __ppdm_b - 1)::BIGINT
           END AS __ppdm_bin
    FROM (SELECT TRY_CAST(coalesce(*COLUMNS(lambda c: c = 'user:' || col::VARCHAR OR c = '__ppdm_none')) AS DOUBLE) AS __ppdm_x
          FROM __ppdm_src),
         __ppdm_params
),
__ppdm_counts AS (SELECT __ppdm_bin, count(*) AS __ppdm_n FROM __ppdm_binned GROUP BY __ppdm_bin),
-- The release's digest (as polars_ppdm.dp_histogram): the sum mod 2^64 of the keyed words
-- of the non-empty bins' (bin, count), plus the word of their number. The noise is drawn
-- under a key of (secret, release, digest): other data, other noise.
__ppdm_digest AS (
    SELECT ((coalesce(sum(ppdm_word(secret::VARCHAR, 'dp/digest/1',
                                    ppdm_word(secret::VARCHAR, 'dp/digest/0', 0::UBIGINT, ppdm_bits(__ppdm_bin)),
                                    ppdm_bits(__ppdm_n))::HUGEINT), 0)
             + ppdm_word(secret::VARCHAR, 'dp/digest/rows', 0::UBIGINT, ppdm_bits(count(*))))
            % 18446744073709551616)::UBIGINT AS __ppdm_digest
    FROM __ppdm_counts
),
-- The label of the release's key: the whole query (the bins' edges, the mechanism and its
-- budget), as polars_ppdm.dp.histogram.HistogramRequest.key_label makes it, by the same
-- Python: another histogram of the column never shares this one's noise.
__ppdm_label AS (
    SELECT ppdm_dp_histogram_label(col::VARCHAR, __ppdm_lo, __ppdm_hi, __ppdm_b, TRY_CAST(mechanism AS VARCHAR),
                                   __ppdm_eps, __ppdm_rho) AS __ppdm_release
    FROM __ppdm_params
),
__ppdm_grid AS (
    SELECT __ppdm_i AS __ppdm_bin, __ppdm_lo, __ppdm_hi, __ppdm_b, __ppdm_eps, __ppdm_rho, __ppdm_gauss
    FROM __ppdm_params, range(0, __ppdm_b) __ppdm_r(__ppdm_i)
),
__ppdm_noisy AS (
    SELECT g.__ppdm_bin,
           g.__ppdm_lo + g.__ppdm_bin * ((g.__ppdm_hi - g.__ppdm_lo) / g.__ppdm_b) AS __ppdm_low,
           CASE WHEN g.__ppdm_bin = g.__ppdm_b - 1 THEN g.__ppdm_hi
                ELSE g.__ppdm_lo + (g.__ppdm_bin + 1) * ((g.__ppdm_hi - g.__ppdm_lo) / g.__ppdm_b) END AS __ppdm_high,
           -- A unit's row moves one count by 1 (L1 and L2): the Laplace's scale 1 / epsilon, the
           -- Gaussian's sigma 1 / sqrt(2 rho) (polars_ppdm.dp.mechanism.Mechanism.scale).
           coalesce(c.__ppdm_n, 0)
           + CASE WHEN g.__ppdm_gauss
                  THEN ppdm_release_gaussian(secret::VARCHAR, l.__ppdm_release, d.__ppdm_digest,
                                             'dp_histogram/' || col::VARCHAR, g.__ppdm_bin::UBIGINT,
                                             1.0 / sqrt(2 * g.__ppdm_rho))
                  ELSE ppdm_release_noise(secret::VARCHAR, l.__ppdm_release, d.__ppdm_digest,
                                          'dp_histogram/' || col::VARCHAR, g.__ppdm_bin::UBIGINT, 1.0 / g.__ppdm_eps)
             END AS __ppdm_count
    FROM __ppdm_grid g LEFT JOIN __ppdm_counts c USING (__ppdm_bin), __ppdm_digest d, __ppdm_label l
),
-- An empty relation with the column col (and __ppdm_none, so that it binds when col is
-- missing, an error above).  An expression that mentions col takes its name, and the alias
-- pattern '\0_bin' makes user:<col>_bin of it (the value is never read).  The final SELECT
-- keeps the 'user:' and 'out:' columns (one at least, when col is missing), without the
-- prefix: __ppdm_none's copies and the order are left out.
__ppdm_named AS (SELECT COLUMNS(lambda c: c = 'user:' || col::VARCHAR OR c = '__ppdm_none') FROM __ppdm_src LIMIT 0),
__ppdm_cells AS (
    SELECT CASE WHEN COLUMNS(lambda c: c = 'user:' || col::VARCHAR OR c = '__ppdm_none') IS NULL THEN __ppdm_bin END AS '\0_bin',
           CASE WHEN COLUMNS(lambda c: c = 'user:' || col::VARCHAR OR c = '__ppdm_none') IS NULL THEN __ppdm_low END AS '\0_low',
           CASE WHEN COLUMNS(lambda c: c = 'user:' || col::VARCHAR OR c = '__ppdm_none') IS NULL THEN __ppdm_high END AS '\0_high',
           __ppdm_count AS "out:count", __ppdm_bin
    FROM __ppdm_noisy LEFT JOIN __ppdm_named ON false
)
SELECT COLUMNS('(?s)^(?:user|out):(.*)$') AS '\1' FROM __ppdm_cells ORDER BY __ppdm_cells.__ppdm_bin;
