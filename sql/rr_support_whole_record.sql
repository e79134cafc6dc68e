-- name: ppdm_rr_support_whole_record
-- Corrected frequency and standard error of every pattern of binary columns disguised whole-record.
--
-- counts: a table with columns pattern (VARCHAR of '0'/'1') and n (disguised row count).
-- p, epsilon: exactly one: the probability that a record was sent unchanged (else all its
--         columns were negated; in [0, 1], not 0.5), or its local-DP epsilon (> 0, p =
--         ppdm_rr_p_from_epsilon(epsilon)), as in ppdm_rr_disguise_whole_record; positional is p.
-- Solves P*(E) = p P(E) + (1-p) P(E') with E' the complement pattern, for every pattern of the
-- full grid; the standard error is for the frequency in this table.  As
-- polars_ppdm.rr_support(frame, columns, p=..., mode='whole_record').
CREATE OR REPLACE MACRO ppdm_rr_support_whole_record(counts, p := NULL, epsilon := NULL) AS TABLE
-- The counts table is read in the first CTE, where no name of this macro can shadow it.
WITH obs AS (
    SELECT pattern::VARCHAR AS pattern, sum(n)::DOUBLE AS n, bool_or(n IS NULL OR n < 0) AS bad_n
    FROM query_table(counts)
    GROUP BY ALL
),
probs AS (
    SELECT CASE
               WHEN (p IS NULL) = (epsilon IS NULL)
                   THEN error('ppdm_rr_support_whole_record needs exactly one of ''p'' and ''epsilon''. Got p='
                              || coalesce(p::VARCHAR, 'NULL') || ', epsilon=' || coalesce(epsilon::VARCHAR, 'NULL') || '.')
               WHEN p IS NOT NULL AND (isnan(p::DOUBLE) OR p < 0 OR p > 1 OR p = 0.5)
                   THEN error('The ''p'' argument of ppdm_rr_support_whole_record must be a float in [0, 1] other '
                              || 'than 0.5. Got ' || p::VARCHAR || ' instead.')
               WHEN p IS NULL AND (isnan(epsilon::DOUBLE) OR NOT (epsilon > 0))
                   THEN error('The ''epsilon'' argument of ppdm_rr_support_whole_record must be a float > 0. Got '
                              || epsilon::VARCHAR || ' instead.')
               WHEN p IS NOT NULL THEN p::DOUBLE
               ELSE ppdm_rr_p_from_epsilon(epsilon::DOUBLE)
           END AS __ppdm_p
),
dims AS (
    SELECT CASE
               WHEN bool_or(pattern IS NULL OR NOT regexp_full_match(pattern, '[01]+'))
                   THEN error('ppdm_rr_support_whole_record: every pattern must be a string of 0 and 1 (no NULL); '
                              || 'some are not: fix or drop those rows first.')
               WHEN bool_or(bad_n)
                   THEN error('ppdm_rr_support_whole_record: every count n must be a number >= 0 (no NULL)')
               WHEN min(length(pattern)) <> max(length(pattern))
                   THEN error('ppdm_rr_support_whole_record: every pattern needs the same length')
               ELSE max(length(pattern))
           END AS k,
           sum(n) AS total,
           any_value(__ppdm_p) AS __ppdm_p
    FROM obs, probs
),
shares AS (
    SELECT lpad(bin(i), k::INTEGER, '0') AS pattern, total, __ppdm_p FROM dims, range(0, 1 << k) t(i)
),
pairs AS (
    SELECT s.pattern,
           s.total,
           coalesce(e.n, 0) AS observed,
           coalesce(e.n, 0) / s.total AS s_e,
           coalesce(c.n, 0) / s.total AS s_c,
           s.__ppdm_p / (2 * s.__ppdm_p - 1) AS a,
           -(1 - s.__ppdm_p) / (2 * s.__ppdm_p - 1) AS b
    FROM shares s
    LEFT JOIN obs e ON e.pattern = s.pattern
    LEFT JOIN obs c ON c.pattern = translate(s.pattern, '01', '10')
)
SELECT pattern,
       observed::BIGINT AS observed,
       a * s_e + b * s_c AS frequency,
       sqrt(greatest((a * a * s_e + b * b * s_c - (a * s_e + b * s_c)) / total, 0)) AS std_error
FROM pairs
ORDER BY pattern;
