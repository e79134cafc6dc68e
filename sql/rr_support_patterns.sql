-- name: ppdm_rr_support_patterns
-- Corrected frequency and standard error of every pattern of k binary columns disguised per attribute.
--
-- counts:     a table with columns pattern (VARCHAR of '0'/'1', one character per column, e.g.
--             concat(a::INT, b::INT, c::INT)) and n (the number of disguised rows with that pattern).
-- p, epsilon: exactly one, a DOUBLE[] with one entry per column in pattern order: the keep
--             probabilities (in [0, 1], none 0.5) or the local-DP epsilons (> 0, turned into
--             p by ppdm_rr_p_from_epsilon) the columns were disguised with; positional is p.
-- Returns every pattern of the full grid (2^k rows), with the observed count, the estimated
-- frequency (inverse of the Kronecker product of [[p, 1-p], [1-p, p]]) and its standard error
-- for the frequency in this table, as polars_ppdm.rr_support(frame, columns, p=[...]) (which
-- names one column per attribute where this macro has the pattern string).  The cross join
-- is 2^k x (observed patterns): meant for small k; the Python miner inverts axis by axis.
CREATE OR REPLACE MACRO ppdm_rr_support_patterns(counts, p := NULL, epsilon := NULL) AS TABLE
-- The counts table is read in the first CTE, where no name of this macro can shadow it.
WITH obs AS (
    SELECT pattern::VARCHAR AS pattern, sum(n)::DOUBLE AS n, bool_or(n IS NULL OR n < 0) AS bad_n
    FROM query_table(counts)
    GROUP BY ALL
),
probs AS (
    SELECT CASE
               WHEN (p IS NULL) = (epsilon IS NULL)
                   THEN error('ppdm_rr_support_patterns needs exactly one of ''p'' and ''epsilon''. Got p='
                              || coalesce(p::VARCHAR, 'NULL') || ', epsilon=' || coalesce(epsilon::VARCHAR, 'NULL') || '.')
               WHEN p IS NOT NULL AND len(list_filter(p::DOUBLE[], lambda x: x IS NULL OR isnan(x) OR x < 0 OR x > 1 OR x = 0.5)) > 0
                   THEN error('The ''p'' argument of ppdm_rr_support_patterns must be a list of floats in [0, 1] '
                              || 'other than 0.5. Got ' || p::VARCHAR || ' instead.')
               WHEN p IS NULL AND len(list_filter(epsilon::DOUBLE[], lambda e: e IS NULL OR isnan(e) OR NOT (e > 0))) > 0
                   THEN error('The ''epsilon'' argument of ppdm_rr_support_patterns must be a list of floats > 0. Got '
                              || epsilon::VARCHAR || ' instead.')
               WHEN p IS NOT NULL THEN p::DOUBLE[]
               ELSE list_transform(epsilon::DOUBLE[], lambda e: ppdm_rr_p_from_epsilon(e))
           END AS ps
),
dims AS (
    SELECT CASE
               WHEN bool_or(pattern IS NULL OR NOT regexp_full_match(pattern, '[01]+'))
                   THEN error('ppdm_rr_support_patterns: every pattern must be a string of 0 and 1 (no NULL); '
                              || 'some are not: fix or drop those rows first.')
               WHEN bool_or(bad_n)
                   THEN error('ppdm_rr_support_patterns: every count n must be a number >= 0 (no NULL)')
               WHEN min(length(pattern)) <> max(length(pattern)) OR max(length(pattern)) <> len(any_value(ps))
                   THEN error('ppdm_rr_support_patterns: every pattern needs one character per entry of p (or epsilon)')
               ELSE max(length(pattern))
           END AS k,
           sum(n) AS total,
           any_value(ps) AS ps
    FROM obs, probs
),
grid AS (
    SELECT lpad(bin(i), k::INTEGER, '0') AS pattern, total, ps FROM dims, range(0, 1 << k) t(i)
),
terms AS (
    SELECT g.pattern,
           g.total,
           list_aggregate(
               [CASE WHEN substr(g.pattern, j, 1) = substr(o.pattern, j, 1)
                     THEN g.ps[j] / (2 * g.ps[j] - 1)
                     ELSE -(1 - g.ps[j]) / (2 * g.ps[j] - 1) END
                FOR j IN range(1, length(g.pattern) + 1)],
               'product') AS w,
           o.n / g.total AS share,
           CASE WHEN o.pattern = g.pattern THEN o.n ELSE 0 END AS own,
           o.pattern AS observed_pattern
    FROM grid g CROSS JOIN obs o
)
-- The floats summed in one order (the observed patterns'): the same bits on every run,
-- whatever the threads and the table's source hand the rows out in.
SELECT pattern,
       sum(own)::BIGINT AS observed,
       sum(w * share ORDER BY observed_pattern) AS frequency,
       sqrt(greatest((sum(w * w * share ORDER BY observed_pattern) - sum(w * share ORDER BY observed_pattern))
                     / any_value(total), 0)) AS std_error
FROM terms
GROUP BY pattern
ORDER BY pattern;
