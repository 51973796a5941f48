"""The ways in for the cluster's own tools: `allreduce-doctor healthcheck` (Slurm's
HealthCheckProgram, prolog, epilog, cron), NHC-style lines, Slurm drain/resume and the
node-problem-detector plugin format. Prometheus output lives in export/prometheus.py."""
