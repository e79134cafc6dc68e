-- name: ppdm_rr_epsilon
-- Local-DP epsilon of k-ary randomized response that keeps a value with probability p: |ln(p (k-1) / (1-p))|.
CREATE OR REPLACE MACRO ppdm_rr_epsilon(p, k := 2) AS
    CASE
        WHEN p IS NULL OR isnan(p) OR p < 0 OR p > 1 THEN error('ppdm_rr_epsilon: p must be in [0, 1], got ' || coalesce(p::VARCHAR, 'NULL'))
        WHEN k IS NULL OR k < 2 OR k <> floor(k) THEN error('ppdm_rr_epsilon: k must be an integer >= 2, got ' || coalesce(k::VARCHAR, 'NULL'))
        WHEN p = 1 OR p = 0 THEN 'inf'::DOUBLE
        ELSE abs(ln(p * (k - 1) / (1 - p)))
    END;
