-- name: ppdm_rr_correct_share
-- Estimated true share of a binary attribute from its disguised share: (share - (1 - p)) / (2p - 1).
CREATE OR REPLACE MACRO ppdm_rr_correct_share(observed_share, p) AS
    CASE
        WHEN p IS NULL OR isnan(p) OR p < 0 OR p > 1 OR p = 0.5
            THEN error('ppdm_rr_correct_share: p must be in [0, 1] and not 0.5, got ' || coalesce(p::VARCHAR, 'NULL'))
        ELSE (observed_share - (1 - p)) / (2 * p - 1)
    END;
