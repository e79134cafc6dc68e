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
-- are refused.
CREATE OR REPLACE MACRO ppdm_rr_support_k(tbl, col, categories, p := NULL, epsilon := NULL) AS TABLE
WITH params AS (
    SELECT CASE
               WHEN categories IS NULL OR len(categories) < 2 OR len(list_distinct(categories)) <> len(categories)
                   THEN error('The ''categories'' argument of ppdm_rr_support_k must be a list of k >= 2 distinct, '
                              || 'non-null values. Got ' || coalesce(categories::VARCHAR, 'NULL') || ' instead.')
               WHEN (p IS NULL) = (epsilon IS NULL)
                   THEN error('ppdm_rr_support_k needs exactly one of ''p'' and ''epsilon''. Got p='
                              || coalesce(p::VARCHAR, 'NULL') || ', epsilon=' || coalesce(epsilon::VARCHAR, 'NULL') || '.')
               WHEN p IS NOT NULL AND (isnan(p::DOUBLE) OR p < 0 OR p > 1)
                   THEN error('The ''p'' argument of ppdm_rr_support_k must be a float in [0, 1]. Got '
                              || p::VARCHAR || ' instead.')
               WHEN p IS NOT NULL AND abs(p::DOUBLE - 1.0 / len(categories)) <= 1e-12
                   THEN error('The ''p'' argument of ppdm_rr_support_k must be a float in [0, 1] other than 1/k = '
                              || round(1.0 / len(categories), 6)::VARCHAR || ' (with k = ' || len(categories)::VARCHAR
                              || ' categories the disguise cannot be inverted). Got ' || p::VARCHAR || ' instead.')
               WHEN p IS NULL AND (isnan(epsilon::DOUBLE) OR NOT (epsilon > 0))
                   THEN error('The ''epsilon'' argument of ppdm_rr_support_k must be a float > 0. Got '
                              || epsilon::VARCHAR || ' instead.')
               WHEN p IS NOT NULL THEN p::DOUBLE
               ELSE ppdm_rr_p_from_epsilon(epsilon::DOUBLE, k := len(categories))
           END AS __ppdm_p,
           len(categories) AS __ppdm_k
),
cats AS (
    SELECT i AS __ppdm_j, categories[i] AS __ppdm_category, categories[i]::VARCHAR AS __ppdm_label
    FROM range(1, len(categories) + 1) r(i)
),
obs AS (
    SELECT __ppdm_v, count(*) AS __ppdm_n
    FROM (SELECT COLUMNS(lambda c: c = col)::VARCHAR AS __ppdm_v FROM query_table(tbl))
    GROUP BY ALL
),
totals AS (
    SELECT CASE
               WHEN bool_or(o.__ppdm_v IS NULL)
                   THEN error('The column ' || col || ' of ppdm_rr_support_k has null values; nulls carry no '
                              || 'disguised answer, so drop or fill them first.')
               WHEN bool_or(c.__ppdm_j IS NULL)
                   THEN error('The column ' || col || ' of ppdm_rr_support_k holds values outside its ''categories'' '
                              || categories::VARCHAR || ': '
                              || list_slice(list_sort(list(o.__ppdm_v) FILTER (WHERE c.__ppdm_j IS NULL)), 1, 5)::VARCHAR || '.')
               ELSE sum(o.__ppdm_n)::DOUBLE
           END AS __ppdm_total
    FROM obs o LEFT JOIN cats c ON c.__ppdm_label = o.__ppdm_v
),
-- M = p I + (1-p)/(k-1) (J - I) = a I + b J, so M^-1 = (I - d J) / a with d = b / (a + k b).
inverse AS (
    SELECT (1 - d) / a AS __ppdm_diag, -d / a AS __ppdm_off
    FROM (SELECT a, b / (a + __ppdm_k * b) AS d
          FROM (SELECT __ppdm_p - b AS a, b, __ppdm_k
                FROM (SELECT __ppdm_p, __ppdm_k, (1 - __ppdm_p) / (__ppdm_k - 1) AS b FROM params)))
),
shares AS (
    SELECT c.__ppdm_j, c.__ppdm_category, coalesce(o.__ppdm_n, 0) AS __ppdm_observed, t.__ppdm_total,
           coalesce(o.__ppdm_n, 0) / t.__ppdm_total AS __ppdm_s,
           sum(coalesce(o.__ppdm_n, 0) / t.__ppdm_total) OVER () - coalesce(o.__ppdm_n, 0) / t.__ppdm_total AS __ppdm_rest
    FROM cats c LEFT JOIN obs o ON o.__ppdm_v = c.__ppdm_label, totals t
    WHERE t.__ppdm_total > 0
),
-- One struct column, so that no column of the final scope but col's can match col.
estimates AS (
    SELECT {'j': __ppdm_j,
            'category': __ppdm_category,
            'observed': __ppdm_observed,
            'frequency': __ppdm_diag * __ppdm_s + __ppdm_off * __ppdm_rest,
            'square': __ppdm_diag * __ppdm_diag * __ppdm_s + __ppdm_off * __ppdm_off * __ppdm_rest,
            'total': __ppdm_total} AS __ppdm_cell
    FROM shares, inverse
),
-- An empty relation with one column named col: an expression that mentions it takes its
-- name, and the alias pattern '\0' keeps it (the value is never read).
named AS (SELECT COLUMNS(lambda c: c = col) FROM query_table(tbl) LIMIT 0)
SELECT CASE WHEN COLUMNS(lambda c: c = col) IS NULL THEN e.__ppdm_cell.category END AS '\0',
       e.__ppdm_cell.observed::BIGINT AS observed,
       e.__ppdm_cell.frequency AS frequency,
       sqrt(greatest((e.__ppdm_cell.square - e.__ppdm_cell.frequency) / e.__ppdm_cell.total, 0)) AS std_error
FROM estimates e LEFT JOIN named ON false
ORDER BY e.__ppdm_cell.j;
