-- name: ppdm_rr_epsilon
-- Local-DP epsilon of k-ary randomized response that keeps a value with probability p: |ln(p (k-1) / (1-p))|.
--
-- p: the keep probability, in [0, 1].   k: the number of categories (>= 2, default 2).
-- As polars_ppdm.rr_epsilon(p, k).
CREATE OR REPLACE MACRO ppdm_rr_epsilon(p, k := 2) AS
    CASE
        WHEN p IS NULL OR isnan(p) OR p < 0 OR p > 1
            THEN error('The ''p'' argument of ppdm_rr_epsilon must be a float in [0, 1]. Got '
                       || coalesce(p::VARCHAR, 'NULL') || ' instead.')
        WHEN k IS NULL OR k < 2 OR k <> floor(k)
            THEN error('The ''k'' argument of ppdm_rr_epsilon must be an integer >= 2. Got '
                       || coalesce(k::VARCHAR, 'NULL') || ' instead.')
        WHEN p = 1 OR p = 0 THEN 'inf'::DOUBLE
        ELSE abs(ln(p::DOUBLE * (k::DOUBLE - 1) / (1 - p::DOUBLE)))  -- in DOUBLE, as Python (a HUGEINT k overflowed)
    END;
