"""polars_ppdm: privacy-preserving data mining inside Polars lazy queries and DuckDB SQL.

``import polars_ppdm as ppdm`` registers the ``ppdm`` namespaces on ``pl.Expr``,
``pl.DataFrame`` and ``pl.LazyFrame``.  Free functions are the API; the namespaces are thin
wrappers over them.
"""

from types import ModuleType

from polars_ppdm import audit, datasets, dp
from polars_ppdm import namespace as _namespace  # noqa: F401 -- registers the namespaces
from polars_ppdm.audit.ldp import rr_epsilon, rr_p_from_epsilon
from polars_ppdm.dp import (
    BudgetAccountant,
    DPKMeansResult,
    ParallelBlock,
    consistent_totals,
    dp_continual_counts,
    dp_group_by,
    dp_histogram,
    dp_kmeans,
    dp_quadtree,
)
from polars_ppdm.exceptions import (
    BudgetExceededError,
    EstimateWarning,
    InvalidParameterError,
    LedgerBusyError,
    PPDMError,
    PrivacyLeakWarning,
    SecretError,
)
from polars_ppdm.ledger import Ledger
from polars_ppdm.metrics.rules import rule_scores
from polars_ppdm.mine import (
    RRTree,
    association_rules,
    estimate_covariance,
    pattern_rules,
    pca_reconstruct,
    reconstruct_distribution,
    rr_accuracy,
    rr_apriori,
    rr_frequent_itemsets,
    rr_id3,
    rr_support,
)
from polars_ppdm.perturb import (
    SpiralKey,
    add_noise,
    add_noise_expr,
    apply_spiral_key,
    ecdf_resample,
    invert_spiral_key,
    rr_disguise,
    rr_disguise_expr,
    spiral,
    spiral_key,
)
from polars_ppdm.reporting import report
from polars_ppdm.secret import Secret, new_secret, resolve_secret, secret_from_env
from polars_ppdm.transactions import read_transactions, transactions_to_onehot

__version__ = "0.1.0"


def __getattr__(name: str) -> ModuleType:
    # ``ppdm.duckdb`` imports DuckDB on first use: a Polars-only job neither waits for
    # it nor carries its ~13 MB.
    if name == "duckdb":
        import importlib

        return importlib.import_module("polars_ppdm.duckdb")
    msg = f"module 'polars_ppdm' has no attribute {name!r}"
    raise AttributeError(msg)


__all__ = [
    "BudgetAccountant",
    "BudgetExceededError",
    "DPKMeansResult",
    "EstimateWarning",
    "InvalidParameterError",
    "Ledger",
    "LedgerBusyError",
    "PPDMError",
    "ParallelBlock",
    "PrivacyLeakWarning",
    "RRTree",
    "Secret",
    "SecretError",
    "SpiralKey",
    "add_noise",
    "add_noise_expr",
    "apply_spiral_key",
    "association_rules",
    "audit",
    "consistent_totals",
    "datasets",
    "dp",
    "dp_continual_counts",
    "dp_group_by",
    "dp_histogram",
    "dp_kmeans",
    "dp_quadtree",
    "duckdb",
    "ecdf_resample",
    "estimate_covariance",
    "invert_spiral_key",
    "new_secret",
    "pattern_rules",
    "pca_reconstruct",
    "read_transactions",
    "reconstruct_distribution",
    "report",
    "resolve_secret",
    "rr_accuracy",
    "rr_apriori",
    "rr_disguise",
    "rr_disguise_expr",
    "rr_epsilon",
    "rr_frequent_itemsets",
    "rr_id3",
    "rr_p_from_epsilon",
    "rr_support",
    "rule_scores",
    "secret_from_env",
    "spiral",
    "spiral_key",
    "transactions_to_onehot",
]
