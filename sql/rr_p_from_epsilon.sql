-- name: ppdm_rr_p_from_epsilon
-- Keep probability of k-ary randomized response at local-DP epsilon: e^eps / (e^eps + k - 1),
-- computed as 1 / (1 + (k - 1) e^-eps) so that a large or infinite epsilon gives 1, not NaN.
CREATE OR REPLACE MACRO ppdm_rr_p_from_epsilon(epsilon, k := 2) AS
    CASE
        WHEN epsilon IS NULL OR isnan(epsilon) OR epsilon <= 0
            THEN error('ppdm_rr_p_from_epsilon: epsilon must be > 0, got ' || coalesce(epsilon::VARCHAR, 'NULL'))
        WHEN k IS NULL OR k < 2 OR k <> floor(k)
            THEN error('ppdm_rr_p_from_epsilon: k must be an integer >= 2, got ' || coalesce(k::VARCHAR, 'NULL'))
        ELSE 1 / (1 + (k - 1) * exp(-epsilon))
    END;
