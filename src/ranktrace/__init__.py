"""ranktrace: find the rank, node or rendezvous that killed a distributed training job."""

__version__ = "0.1.0"
