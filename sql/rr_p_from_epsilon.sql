-- name: ppdm_rr_p_from_epsilon
-- Keep probability of k-ary randomized response at local-DP epsilon: e^eps / (e^eps + k - 1).
CREATE OR REPLACE MACRO ppdm_rr_p_from_epsilon(epsilon, k := 2) AS
    CASE
        WHEN epsilon <= 0 THEN error('ppdm_rr_p_from_epsilon: epsilon must be > 0, got ' || epsilon::VARCHAR)
        ELSE exp(epsilon) / (exp(epsilon) + k - 1)
    END;
