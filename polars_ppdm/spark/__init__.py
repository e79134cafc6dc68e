"""polars_ppdm on Spark: the same operations, the same bits, on a cluster.

Free functions over a ``pyspark.sql.DataFrame`` (classic or Spark Connect) with the names
and parameters of the Polars API.  Row-wise perturbations run on the executors through
``mapInArrow`` into the same Polars/NumPy kernels; ``ecdf_resample`` ranks with Spark's
own sort; aggregates are Spark aggregations whose small results are corrected or noised
on the driver by the same kernels.  Every draw is keyed by (secret, stream, row key or
cell), so partitioning, batch sizes and task retries cannot change a bit: the output
equals the Polars output for the same secret and keys.  No function collects row-level
data to the driver.  The library's own actions size Spark's Arrow batches for themselves
(:func:`arrow_batches`); wrap an action on a lazy result in it to do the same.

Needs the ``spark`` extra (``pip install 'polars_ppdm[spark]'``); importing this module
does not, calling a function without PySpark raises an ImportError that says so.
"""

from polars_ppdm.spark._engine import arrow_batches
from polars_ppdm.spark.dp import dp_histogram, dp_kmeans, dp_quadtree
from polars_ppdm.spark.ecdf import ecdf_resample
from polars_ppdm.spark.group_by import dp_group_by
from polars_ppdm.spark.mine import rr_apriori, rr_support
from polars_ppdm.spark.rows import add_noise, apply_spiral_key, invert_spiral_key, rr_disguise

__all__ = [
    "add_noise",
    "apply_spiral_key",
    "arrow_batches",
    "dp_group_by",
    "dp_histogram",
    "dp_kmeans",
    "dp_quadtree",
    "ecdf_resample",
    "invert_spiral_key",
    "rr_apriori",
    "rr_disguise",
    "rr_support",
]
