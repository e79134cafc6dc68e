-- name: ppdm_rr_epsilon
-- Local-DP epsilon of k-ary randomized response that keeps a value with probability p: |ln(p (k-1) / (1-p))|.
CREATE OR REPLACE MACRO ppdm_rr_epsilon(p, k := 2) AS
    CASE
        WHEN p < 0 OR p > 1 THEN error('ppdm_rr_epsilon: p must be in [0, 1], got ' || p::VARCHAR)
        WHEN p = 1 OR p = 0 THEN 'inf'::DOUBLE
        ELSE abs(ln(p * (k - 1) / (1 - p)))
    END;
