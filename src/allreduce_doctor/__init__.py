"""allreduce-doctor: diagnose slow NCCL all-reduce on InfiniBand and RoCE v2 clusters."""

__version__ = "0.1.0"
