"""Pure NumPy kernels: no polars or duckdb import here."""
