"""ranktrace: find the rank, node or rendezvous that killed a distributed training job."""

import os as _os
import sys as _sys

__version__ = "0.1.0"

# Polars allocates through its own jemalloc, which by default hands freed
# pages back to the kernel within a second or so; an ingest frees and
# re-allocates batch-sized buffers (16 MB of text and its columns) many times
# a second, so each batch page-faults its memory in again. Keeping freed pages
# for 5 s cut system time from ~7 s to ~4 s and wall time by ~10% on a 300 MB
# ingest, for ~100-250 MB more peak RSS; 2 s keeps most of the gain with less
# memory (1 GB ingest: peak RSS 1.52 GB at 2 s, 1.65 GB at 5 s). jemalloc
# reads this when polars first allocates, so it must be set before polars is
# imported; a value the user set wins.
if "polars" not in _sys.modules:
    _os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:2000,muzzy_decay_ms:2000")
