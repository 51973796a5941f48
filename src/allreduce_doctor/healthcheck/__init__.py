"""The ways in for the cluster's own tools: `allreduce-doctor healthcheck` (Slurm's
HealthCheckProgram, prolog, epilog, cron), Slurm drain/resume. The output formats
(NHC lines, node-problem-detector, Prometheus) live in metrics/."""
