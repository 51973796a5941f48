"""Fleet: compare every node of a job and name the odd ones out.

    nodes (ClusterShell nodeset, Slurm job, or a folder of bundles)
      -> collect.py (ssh fan-out; payload.py builds what the node runs, remote.py runs there)
      -> analyze.py (each node's own Session diagnosis, plus its settings, settings.py)
      -> compare.py (majority and odd nodes per setting, median/MAD outliers, fleet patterns)
      -> diagnosis.py (one fleet Diagnosis, same JSON as a node's, plus a `fleet` key)
      -> report.py (the fleet section of the text and Markdown reports)

command.py is the CLI entry (argparse-only imports at its top, so `--help` stays fast).
"""
