"""What a signature kind (signatures/signatures.yaml) says to the ranked differential beside its candidates:
whether it names a failure or follows from one, whether it says where a rank waits, and which trunk check
judges it when the paste shows the node."""

from __future__ import annotations

# Kinds that follow from another failure rather than name one (NCCL's result strings, flushes).
GENERIC = {"remote_error", "system_error", "internal_error", "cuda_failure", "completion_flush", "completion_error",
           "ofi_error", "out_of_memory", "invalid_usage", "bootstrap_failed",  # bootstrap_failed: NCCLCHECK's trace
           "c10d_store_closed"}  # the store's server (rank 0) left first
# Stack frames of a rank hung in NCCL: the phase it waits in (signatures.yaml); PyTorch's watchdog
# timeout says the same from above NCCL (a collective that never completed).
CRASHES = {"bus_error"}  # a signal that killed the process: the frames printed with it are where it died
HANG_FRAMES = {"hang_in_init", "hang_in_socket", "hang_in_connect", "hang_in_collective", "collective_timeout"}
# What the process runs under, not a failure: weighs like a consequence (a lone HAMi-core line or an
# Istio sidecar is a low candidate; beside a rank hung in init the runbook decides it; a named OFI
# plugin says the job needs it, not that it failed).
CONTEXT = HANG_FRAMES | {"cuda_interposer", "mesh_sidecar", "ofi_plugin_named"}
# Kernel lines the trunk judges when the paste shows the node's GPUs and PCI tree (runbooks/trunk.yaml:
# an AER only on a device NCCL's traffic crosses, a peermem error only beside NVIDIA GPUs).
KERNEL_CHECKS = {"pcie_aer_uncorrected": "trunk.pcie_aer", "peermem_error": "trunk.peermem_errors"}
