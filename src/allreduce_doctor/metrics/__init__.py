"""Views of a diagnosis for the cluster's own tools: Prometheus exposition and per-port rates,
NHC-style lines (Slurm health checks), node-problem-detector lines."""
