-- name: ppdm_rr_support_patterns
-- Corrected frequency and standard error of every pattern of k binary columns disguised per attribute.
--
-- counts: a table with columns pattern (VARCHAR of '0'/'1', one character per column, e.g.
--         concat(a::INT, b::INT, c::INT)) and n (the number of disguised rows with that pattern).
-- ps:     DOUBLE[] with the keep probability of each column, in pattern order (none may be 0.5).
-- Returns every pattern of the full grid (2^k rows), with the observed count, the estimated
-- frequency (inverse of the Kronecker product of [[p, 1-p], [1-p, p]]) and its standard error
-- for the frequency in this table.  The cross join is 2^k x (observed patterns): meant for
-- small k; the Python miner polars_ppdm.rr_support inverts axis by axis for large k.
CREATE OR REPLACE MACRO ppdm_rr_support_patterns(counts, ps) AS TABLE
WITH obs AS (
    SELECT pattern::VARCHAR AS pattern, sum(n)::DOUBLE AS n, bool_or(n IS NULL OR n < 0) AS bad_n
    FROM query_table(counts)
    GROUP BY ALL
),
dims AS (
    SELECT CASE
               WHEN bool_or(pattern IS NULL OR NOT regexp_full_match(pattern, '[01]+'))
                   THEN error('ppdm_rr_support_patterns: every pattern must be a string of 0 and 1, got '
                              || coalesce(any_value(pattern) FILTER (WHERE NOT regexp_full_match(pattern, '[01]+')), 'NULL'))
               WHEN bool_or(bad_n)
                   THEN error('ppdm_rr_support_patterns: every count n must be a number >= 0 (no NULL)')
               WHEN min(length(pattern)) <> max(length(pattern)) OR max(length(pattern)) <> len(ps)
                   THEN error('ppdm_rr_support_patterns: every pattern needs one character per entry of ps')
               WHEN len(list_filter(ps, lambda x: x IS NULL OR isnan(x) OR x < 0 OR x > 1 OR x = 0.5)) > 0
                   THEN error('ppdm_rr_support_patterns: every p must be in [0, 1] and not 0.5, got ' || ps::VARCHAR)
               ELSE max(length(pattern))
           END AS k,
           sum(n) AS total
    FROM obs
),
grid AS (
    SELECT lpad(bin(i), k::INTEGER, '0') AS pattern, total FROM dims, range(0, 1 << k) t(i)
),
terms AS (
    SELECT g.pattern,
           g.total,
           list_aggregate(
               [CASE WHEN substr(g.pattern, j, 1) = substr(o.pattern, j, 1)
                     THEN ps[j] / (2 * ps[j] - 1)
                     ELSE -(1 - ps[j]) / (2 * ps[j] - 1) END
                FOR j IN range(1, length(g.pattern) + 1)],
               'product') AS w,
           o.n / g.total AS share,
           CASE WHEN o.pattern = g.pattern THEN o.n ELSE 0 END AS own
    FROM grid g CROSS JOIN obs o
)
SELECT pattern,
       sum(own)::BIGINT AS observed,
       sum(w * share) AS frequency,
       sqrt(greatest((sum(w * w * share) - sum(w * share)) / any_value(total), 0)) AS std_error
FROM terms
GROUP BY pattern
ORDER BY pattern;
