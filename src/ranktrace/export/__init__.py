"""export: the store in the formats people already use.

- perfetto: Chrome trace-event JSON (opens in ui.perfetto.dev, chrome://tracing)
- parquet:  the events and fact tables as a hive-partitioned Parquet dataset
"""

from .parquet import export_parquet
from .perfetto import build_trace, export_perfetto

__all__ = ["build_trace", "export_parquet", "export_perfetto"]
