-- name: ppdm_rr_p_from_epsilon
-- Keep probability of k-ary randomized response at local-DP epsilon: e^eps / (e^eps + k - 1),
-- computed as 1 / (1 + (k - 1) e^-eps) so that a large or infinite epsilon gives 1, not NaN.
--
-- epsilon: > 0.   k: the number of categories (>= 2, default 2).  The same bits as
-- polars_ppdm.rr_p_from_epsilon(epsilon, k), so epsilon := ... in the disguise UDFs and
-- p := ppdm_rr_p_from_epsilon(...) give the same coins.
CREATE OR REPLACE MACRO ppdm_rr_p_from_epsilon(epsilon, k := 2) AS
    CASE
        WHEN epsilon IS NULL OR isnan(epsilon) OR epsilon <= 0
            THEN error('The ''epsilon'' argument of ppdm_rr_p_from_epsilon must be a float > 0. Got '
                       || coalesce(epsilon::VARCHAR, 'NULL') || ' instead.')
        WHEN k IS NULL OR k < 2 OR k <> floor(k)
            THEN error('The ''k'' argument of ppdm_rr_p_from_epsilon must be an integer >= 2. Got '
                       || coalesce(k::VARCHAR, 'NULL') || ' instead.')
        ELSE 1 / (1 + (k - 1) * exp(-(epsilon::DOUBLE)))  -- in DOUBLE, as Python (-UBIGINT max overflowed)
    END;
