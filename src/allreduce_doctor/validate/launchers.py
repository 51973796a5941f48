"""The site launchers' command lines, each option from the launcher's own manual.

srun (Slurm doc/man/man1/srun.1 at slurm-26-05-3-1):
- `--mpi=TYPE`: "Identify the type of MPI to be used"; without it srun uses slurm.conf's
  MpiDefault, "Unset by default" (slurm.conf(5)), and srun's `none` ("No special MPI processing.
  This is the default") gives no PMI: an MPI-built all_reduce_perf starts as N x G separate
  one-rank worlds whose busbw means nothing.
  The site's MpiDefault (`scontrol show config`) is kept when it names one; `pmix` ("can be used
  to launch parallel applications (e.g. MPI) if it supports PMIx, PMI2 or PMI1") otherwise;
  `--mpi TYPE` chooses.
- a GPU request per step: `--gpus-per-node=N` ("the number of GPUs required ... on each node"),
  or `--gres=gpu:N` (mutually exclusive with it); none when GresTypes manages no `gpu` (slurm.conf
  GresTypes: "No generic resources are managed by default"): Slurm would refuse the request.
  The incast steps (perftest: no GPU, no MPI) take `--gres=none` ("each job step is allocated no
  generic resources"), so several run side by side on one receiver, and `--mpi=none`.
- `--jobid=ID --overlap` joining a running job from outside it: --jobid "Initiate a job step under
  an already allocated job"; --overlap "allows steps to share all resources ... with all other
  steps" (without it "Parallel steps will either be blocked or rejected until requested step
  resources are available").
- `--kill-on-bad-exit=1`: one failed rank ends the step; `--quit-on-interrupt`: a single SIGINT
  makes srun forward it and terminate the step (src/srun/signals.c _handle_intr), where by default
  one SIGINT only prints the tasks' status.

mpirun (Open MPI v5.0.10 docs/man-openmpi/man1/mpirun.1.rst): `-x NAME` "Export the specified
environment variables to the remote nodes ... Only one environment variable can be specified per
-x option": one `-x` per NCCL_*, UCX_*, LD_LIBRARY_PATH and CUDA_* variable set here, by name
(the value stays in the environment, never on the command line or in the record).
CUDA_VISIBLE_DEVICES is not sent: Slurm's GRES plugin sets it per node (gres.conf), and this
node's list would be wrong on another.
"""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_MPI = "pmix"
NO_MPI = ("", "none", "(null)", "n/a")  # scontrol prints MpiDefault unset as none or (null)
GPU_REQUESTS = ("gpus-per-node", "gres", "none")
EXPORT_PREFIXES = ("NCCL_", "UCX_", "CUDA_")
EXPORT_NAMES = ("LD_LIBRARY_PATH",)
NOT_EXPORTED = ("CUDA_VISIBLE_DEVICES",)
CONFIG_TIMEOUT_S = 10.0


@dataclass
class SrunSite:
    """What srun's line takes from the site: the MPI type, whether GPUs are a GRES, and why."""
    mpi: str = DEFAULT_MPI
    gpu_request: str = "gpus-per-node"
    notes: list[str] = field(default_factory=list)


def config_values(text: str) -> dict[str, str]:
    """`scontrol show config`: `Key = value` lines (src/api/config_info.c, "%-23s = %s")."""
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and " " not in key.strip():
            values[key.strip()] = value.strip()
    return values


def srun_site(mpi_flag: str | None, gpu_flag: str | None, host) -> SrunSite:
    """The srun line's --mpi and GPU request: the flags, else `scontrol show config` on `host`."""
    from allreduce_doctor.scontrol import ScontrolError, scontrol

    site = SrunSite(gpu_request=gpu_flag or "gpus-per-node")
    try:
        config = config_values(scontrol(host, ["show", "config"], CONFIG_TIMEOUT_S, "validate.slurm_config"))
    except ScontrolError as err:
        config = None
        unread = str(err)
    if mpi_flag:
        site.mpi = mpi_flag
        site.notes.append(f"--mpi={mpi_flag}: given with --mpi")
    elif config is None:
        site.notes.append(f"--mpi={DEFAULT_MPI}: the site's MpiDefault is unknown: {unread}")
    elif "MpiDefault" not in config:
        site.notes.append(f"--mpi={DEFAULT_MPI}: the site's MpiDefault is unknown: scontrol show config names none")
    elif config["MpiDefault"].lower() in NO_MPI:
        site.notes.append(f"--mpi={DEFAULT_MPI}: the site's MpiDefault is {config.get('MpiDefault') or 'unset'} (no PMI)")
    else:
        site.mpi = config["MpiDefault"]
        site.notes.append(f"--mpi={site.mpi}: the site's MpiDefault (scontrol show config)")
    types = None if config is None or "GresTypes" not in config else config["GresTypes"]
    if gpu_flag is None and types is not None and "gpu" not in [t.strip() for t in types.split(",")]:
        site.gpu_request = "none"
        site.notes.append(f"no GPU request: GresTypes={types or '(none)'} manages no gpu (scontrol show config)")
    return site


def gpu_words(request: str, gpus: int) -> list[str]:
    if gpus <= 0 or request == "none":
        return []
    return [f"--gres=gpu:{gpus}"] if request == "gres" else [f"--gpus-per-node={gpus}"]


def srun_prefix(site: SrunSite, nodelist: str, nodes: int, ranks: int, gpus: int, jobid: str | None) -> list[str]:
    """srun's words for `ranks` tasks on each of `nodes`, `gpus` GPUs per node (0: a step without GPUs)."""
    job = [f"--jobid={jobid}", "--overlap"] if jobid else []
    gres = gpu_words(site.gpu_request, gpus) if gpus else (["--gres=none"] if site.gpu_request != "none" else [])
    mpi = site.mpi if gpus else "none"  # perftest is no MPI program
    return ["srun", *job, f"--mpi={mpi}", f"--nodelist={nodelist}", f"--nodes={nodes}",
            f"--ntasks-per-node={ranks}", *gres, "--kill-on-bad-exit=1", "--quit-on-interrupt"]


def mpirun_exports(environ: dict[str, str]) -> list[str]:
    """`-x NAME` for every variable the remote ranks need that is set here, sorted."""
    names = sorted(k for k in environ if (k.startswith(EXPORT_PREFIXES) or k in EXPORT_NAMES) and k not in NOT_EXPORTED)
    return [word for name in names for word in ("-x", name)]


def mpirun_prefix(hostfile: str, ntasks: int, ranks: int, environ: dict[str, str]) -> list[str]:
    """Open MPI: ranks per node by --map-by ppr (mpirun(1)), the job's environment by -x."""
    return ["mpirun", "--hostfile", hostfile, "-np", str(ntasks), "--map-by", f"ppr:{ranks}:node",
            *mpirun_exports(environ)]
