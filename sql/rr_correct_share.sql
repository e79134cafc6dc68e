-- name: ppdm_rr_correct_share
-- Estimated true share of a binary attribute from its disguised share: (share - (1 - p)) / (2p - 1).
--
-- observed_share: the share of disguised rows with the attribute.   p, epsilon: exactly one,
-- the keep probability (in [0, 1], not 0.5) or the local-DP epsilon (> 0, p =
-- ppdm_rr_p_from_epsilon(epsilon)) the column was disguised with; positional is p.
CREATE OR REPLACE MACRO ppdm_rr_correct_share(observed_share, p := NULL, epsilon := NULL) AS
    CASE
        WHEN (p IS NULL) = (epsilon IS NULL)
            THEN error('ppdm_rr_correct_share needs exactly one of ''p'' and ''epsilon''. Got p='
                       || coalesce(p::VARCHAR, 'NULL') || ', epsilon=' || coalesce(epsilon::VARCHAR, 'NULL') || '.')
        WHEN p IS NOT NULL AND (isnan(p::DOUBLE) OR p < 0 OR p > 1 OR p = 0.5)
            THEN error('The ''p'' argument of ppdm_rr_correct_share must be a float in [0, 1] other than 0.5. Got '
                       || p::VARCHAR || ' instead.')
        WHEN p IS NULL AND (isnan(epsilon::DOUBLE) OR NOT (epsilon > 0))
            THEN error('The ''epsilon'' argument of ppdm_rr_correct_share must be a float > 0. Got '
                       || epsilon::VARCHAR || ' instead.')
        WHEN p IS NOT NULL THEN (observed_share - (1 - p)) / (2 * p - 1)
        ELSE (observed_share - (1 - ppdm_rr_p_from_epsilon(epsilon::DOUBLE)))
             / (2 * ppdm_rr_p_from_epsilon(epsilon::DOUBLE) - 1)
    END;
