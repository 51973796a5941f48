#!/bin/sh
# Slurm HealthCheckProgram, Epilog (and optionally Prolog) for allreduce-doctor.
# Slurm runs these programs without arguments and without a search path (slurm.conf(5),
# "Prolog and Epilog Guide"), hence this wrapper and the PATH line (scontrol must be found).
PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin
export PATH

allreduce-doctor healthcheck --budget 10 --drain --resume \
    --textfile /var/lib/node_exporter/textfile_collector/allreduce_doctor.prom

# The drain (reason "allreduce-doctor: CAUSE") carries the verdict, so exit 0: a non-zero exit
# from a Prolog or Epilog makes Slurm drain the node with its own reason, which --resume then
# rightly never clears; and slurmd runs HealthCheckProgram at start-up until it exits 0.
exit 0
