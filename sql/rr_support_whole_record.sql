-- name: ppdm_rr_support_whole_record
-- Corrected frequency and standard error of every pattern of binary columns disguised whole-record.
--
-- counts: a table with columns pattern (VARCHAR of '0'/'1') and n (disguised row count).
-- p:      probability that a record was sent unchanged (else all its columns were negated).
-- Solves P*(E) = p P(E) + (1-p) P(E') with E' the complement pattern, for every pattern of the
-- full grid; the standard error is for the frequency in this table.
CREATE OR REPLACE MACRO ppdm_rr_support_whole_record(counts, p) AS TABLE
WITH obs AS (
    SELECT pattern::VARCHAR AS pattern, sum(n)::DOUBLE AS n, bool_or(n IS NULL OR n < 0) AS bad_n
    FROM query_table(counts)
    GROUP BY ALL
),
dims AS (
    SELECT CASE
               WHEN bool_or(pattern IS NULL OR NOT regexp_full_match(pattern, '[01]+'))
                   THEN error('ppdm_rr_support_whole_record: every pattern must be a string of 0 and 1, got '
                              || coalesce(any_value(pattern) FILTER (WHERE NOT regexp_full_match(pattern, '[01]+')), 'NULL'))
               WHEN bool_or(bad_n)
                   THEN error('ppdm_rr_support_whole_record: every count n must be a number >= 0 (no NULL)')
               WHEN min(length(pattern)) <> max(length(pattern))
                   THEN error('ppdm_rr_support_whole_record: every pattern needs the same length')
               WHEN p IS NULL OR isnan(p) OR p < 0 OR p > 1 OR p = 0.5
                   THEN error('ppdm_rr_support_whole_record: p must be in [0, 1] and not 0.5, got ' || coalesce(p::VARCHAR, 'NULL'))
               ELSE max(length(pattern))
           END AS k,
           sum(n) AS total
    FROM obs
),
shares AS (
    SELECT lpad(bin(i), k::INTEGER, '0') AS pattern, total FROM dims, range(0, 1 << k) t(i)
),
pairs AS (
    SELECT s.pattern,
           s.total,
           coalesce(e.n, 0) AS observed,
           coalesce(e.n, 0) / s.total AS s_e,
           coalesce(c.n, 0) / s.total AS s_c,
           p / (2 * p - 1) AS a,
           -(1 - p) / (2 * p - 1) AS b
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
