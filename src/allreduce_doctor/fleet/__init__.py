"""Fleet: compare every node of a job and name the odd ones out.

    nodes (ClusterShell nodeset, Slurm job, or a folder of bundles)
      -> ssh_collect.py (ssh fan-out; payload.py builds what the node runs, remote.py runs there)
      -> analyze.py (each node's own Session diagnosis, plus its settings, node_settings.py)
      -> compare.py (majority and odd nodes per setting, median/MAD outliers, fleet patterns)
      -> fleet_diagnosis.py (one fleet Diagnosis, same JSON as a node's, plus a `fleet` key)
      -> fleet_report.py (the fleet section of the text and Markdown reports)

commands/fleet.py is the CLI entry (argparse-only imports at its top, so `--help` stays fast).
"""
