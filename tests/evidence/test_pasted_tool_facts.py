"""Pasted host tool outputs and container specs give the facts a probe would (evidence/tool_facts.py):
`ulimit`, `docker run`, a pod spec, `lsmod`, `df -h /dev/shm`, `dcb pfc show`, sysfs dumps, perfquery. Each
sample is a real paste, its thread or file named beside it."""

from __future__ import annotations

import pytest

from allreduce_doctor.evidence import NOTHING, EvidenceError
from allreduce_doctor.evidence.differential import COLLECT
from allreduce_doctor.parsers import parse
from tests.evidence.helpers import OUTPUTS, diagnose_json, facts, fixture_body, observations, ranked, step

# openucx/ucx#8229 (thomasgillis, 2022-05-17): `ulimit -a` where ibv_create_cq failed with ENOMEM; and the docker
# line of fal-ai-community/video-diffusion-speedrun#2 (no --cap-add, no /dev/infiniband, no --shm-size).
ULIMIT_A = """\
$ docker run --gpus all --rm -it video-diffusion /bin/bash
root@0a1b2c3d4e5f:/workspace# ulimit -a
core file size          (blocks, -c) 0
data seg size           (kbytes, -d) unlimited
scheduling priority             (-e) 0
file size               (blocks, -f) unlimited
pending signals                 (-i) 1030810
max locked memory       (kbytes, -l) 64
max memory size         (kbytes, -m) unlimited
open files                      (-n) 1024
"""


def test_ulimit_and_a_docker_line_are_the_jobs_memlock_limit(tmp_path):
    obs = observations(tmp_path, ULIMIT_A)
    assert obs["job.limits"].value == {"pid": None, "memlock_soft": 65536, "memlock_hard": None, "cap_ipc_lock": False,
                                       "user_ns": None}
    rc, d, path = diagnose_json(tmp_path, ULIMIT_A)
    memlock = step(d, "trunk.memlock")
    assert memlock["value"] == {"job.memlock.memlock": "64 KiB", "job.memlock.problem": True, "node.fabric.fabric": None}
    assert memlock["outcome"] == "unknown"  # the text shows no RDMA port: the step stays open
    assert step(d, "trunk.uverbs")["value"] == {"node.fabric.fabric": None, "rdma.devices_seen.present": False}
    first = d["findings"][0]
    assert (first["cause"], first["confidence"]) == ("container_missing_ib_devices", "low")
    assert first["supporting"] == [f"the job's memlock limit 64 KiB, no CAP_IPC_LOCK ({path}:8-10, {path}:1): "
                                   "ibv_reg_mr cannot pin one of NCCL's 512 KiB LL buffers"]


# murat-runpod/cluster-scripts docker_run.sh: a multi-line docker run with the IB devices and memlock unlimited.
DOCKER_RDMA = """\
docker run -d \\
\t--name pod \\
\t--gpus all \\
\t--network=mn-bridge \\
\t--ip 10.65.0.2 \\
\t--device=/dev/infiniband:/dev/infiniband \\
\t-v /sys/class/infiniband:/sys/class/infiniband:ro \\
\t--ulimit memlock=-1:-1 \\
\tpytorch/pytorch:2.7.1-cuda11.8-cudnn9-runtime \\
\tsleep infinity
"""


def test_a_docker_run_line_is_read_with_its_continuation_lines(tmp_path):
    obs = observations(tmp_path, DOCKER_RDMA)
    container = obs["log.env"].value["launch"]["container"]
    assert container == {"runtime": "docker", "privileged": False, "host_network": False, "host_ipc": False,
                         "ib_devices": True, "cap_ipc_lock": False, "memlock": "unlimited", "shm_bytes": 64 << 20,
                         "shm_default": True, "rdma_resources": [], "gpus": "all", "source": f"{tmp_path}/paste.txt:1"}
    assert obs["rdma.devices_seen"].value == {"present": True, "from": "container spec", "devices": None}
    _, d, _ = diagnose_json(tmp_path, DOCKER_RDMA)
    assert step(d, "trunk.memlock")["outcome"] == "no"  # memlock=-1 was given: nothing to pin past


# NVIDIA/k8s-device-plugin#71 (ruettimac, 2018-08-30): a whole pod manifest asking for GPUs only; beside it the
# NCCL lines of NVIDIA/nccl#941 ("No device found in container").
POD_NO_RDMA = """\
apiVersion: v1
kind: Pod
metadata:
  name: gpu-pod
  namespace: kube-system
spec:
  tolerations:
  - key: nvidia.com/gpu
    operator: Equal
    value: "true"
    effect: NoSchedule
  containers:
  - name: cuda-container
    image: remote-docker.artifactory.swisscom.com/nvidia/cuda:9.0-devel
    resources:
      limits:
        nvidia.com/gpu: 1 # requesting 1 GPUs
05-06-76-200:7839:7911 [0] NCCL INFO P2P plugin IBext
05-06-76-200:7839:7911 [0] NCCL INFO NET/IB : No device found.
05-06-76-200:7839:7911 [0] NCCL INFO Using network Socket
"""


def test_a_pod_spec_without_an_rdma_resource_hides_the_devices(tmp_path):
    obs = observations(tmp_path, POD_NO_RDMA)
    path = f"{tmp_path}/paste.txt"
    assert obs["rdma.devices_seen"].value == {"present": False, "from": "container spec", "devices": None}
    assert obs["rdma.devices_seen"].source == f"{path}:1-17"
    assert obs["log.job"].value["ib_devices_hidden"] is True  # main: False (the pod spec was not read)
    rc, d, _ = diagnose_json(tmp_path, POD_NO_RDMA)
    assert rc == 1 and d["root_cause"]["id"] == "container_missing_ib_devices"
    assert step(d, "nccl_log.ib_devices")["outcome"] == "yes"


# oracle-quickstart/oci-hpc-oke/docs/running-pytorch-jobs-on-oke-using-hostnetwork-with-rdma.md: the required
# manifest sections, pasted as the doc prints them (three fenced fragments, flow mappings).
OKE = """\
```yaml
spec:
  hostNetwork: true
  dnsPolicy: ClusterFirstWithHostNet
  volumes:
  - { name: devinf, hostPath: { path: /dev/infiniband }}
  - { name: shm, emptyDir: { medium: Memory, sizeLimit: 32Gi }}
```

```yaml
securityContext:
      privileged: true
      capabilities:
        add: [ "IPC_LOCK" ]
```
```yaml
    volumeMounts:
    - { mountPath: /dev/infiniband, name: devinf }
    - { mountPath: /dev/shm, name: shm }
```
"""


def test_pod_spec_fragments_give_devices_capability_and_shm(tmp_path):
    obs = observations(tmp_path, OKE)
    assert obs["rdma.devices_seen"].value["present"] is True
    assert obs["job.limits"].value["cap_ipc_lock"] is True
    assert obs["log.host"].value["shm"] == {"bytes": 32 << 30, "default": False, "source": f"{tmp_path}/paste.txt:3-19",
                                            "text": "kubernetes container /dev/shm 32 GiB (set)"}


def test_a_resources_fragment_alone_leaves_the_devices_unknown():
    # Only the limits: an SR-IOV pool or a privileged securityContext elsewhere may hand it RDMA devices.
    spec = parse("k8s_pod_spec", "    resources:\n      limits:\n        nvidia.com/gpu: 8\n")
    assert (spec["ib_devices"], spec["cap_ipc_lock"], spec["gpus"]) == (None, None, 8)
    # An extended resource other than the RDMA plugins' (an SR-IOV pool's name) says nothing either way.
    spec = parse("k8s_pod_spec", "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - resources:\n      limits:\n"
                                 "        openshift.io/mlnxnics: 1\n")
    assert spec["ib_devices"] is None


# harness/harness#1801 (fommil, 2017-01-24): `df -h` in a container whose /dev/shm stayed docker's 64M.
DF = """\
$ df -h
Filesystem                                                                                       Size  Used Avail Use% Mounted on
/dev/mapper/docker-8:1-4980740-abbb6856d511df404c2c29e60f68e374acccc631cce6196616c9826f93ee8f3a  9.8G  2.2G  7.1G  24% /
tmpfs                                                                                             16G     0   16G   0% /dev
/dev/sda1                                                                                        235G   15G  208G   7% /drone
shm                                                                                               64M     0   64M   0% /dev/shm
"""


def test_df_of_a_64m_dev_shm_is_a_shm_candidate(tmp_path):
    rc, d, path = diagnose_json(tmp_path, DF)
    assert d["root_cause"]["id"] == "container_shm_too_small" and d["root_cause"]["confidence"] == "low"
    assert d["findings"][0]["supporting"] == [
        f"{path}:2-6: df: /dev/shm 64M (shm): at most 64 MiB, where NCCL's shared-memory segments need several MiB "
        "per GPU pair"]


def test_a_default_dev_shm_backs_the_shm_failure_it_explains(tmp_path):
    # fal-ai-community/video-diffusion-speedrun#2: NCCL's shm error, then the docker line without --shm-size.
    text = ("It almost worked except for the `Error while creating shared memory segment /dev/shm/nccl-pZafXL "
            "(size 7340384)` when I tried it first time\n"
            "docker run --gpus all --rm -it video-diffusion /bin/bash\n")
    rc, d, path = diagnose_json(tmp_path, text)
    assert rc == 1 and d["root_cause"]["id"] == "container_shm_too_small"
    assert f"{path}:2: docker container /dev/shm 64 MiB (no --shm-size, --ipc host or /dev/shm volume: the runtime's " \
           "default): at most 64 MiB, where NCCL's shared-memory segments need several MiB per GPU pair" \
           in d["findings"][0]["supporting"]
    # the default alone is no candidate: the text sets no size, and nothing failed
    _, alone, _ = diagnose_json(tmp_path, "docker run --gpus all --rm -it video-diffusion /bin/bash\n")
    assert "container_shm_too_small" not in ranked(alone)


def test_lsmod_with_nvidia_peermem_is_gpudirect_available(tmp_path):
    # NVIDIA/nccl#1537 (blegear, 2024-12-09): `lsmod | grep peermem`.
    text = ("# lsmod | grep peermem\nnvidia_peermem         12288  0\n"
            "ib_core               491520  9 rdma_cm,ib_ipoib,nvidia_peermem,iw_cm,ib_umad,rdma_ucm,ib_uverbs,mlx5_ib,ib_cm\n")
    assert facts(tmp_path, text)["gpu.peermem"] is True
    # a grep excerpt without it proves no absence; only a whole listing (its header) does
    assert "gpu.peermem" not in facts(tmp_path, "$ lsmod | grep nvidia\nnvidia_uvm           1523712  0\n")
    whole = "$ lsmod\nModule                  Size  Used by\nnvidia_uvm           1523712  0\nib_core  491520  1 mlx5_ib\n"
    assert facts(tmp_path, whole)["gpu.peermem"] is False


def test_dcb_pfc_text_is_the_netdevs_pfc(tmp_path):
    # iproute2 man/man8/dcb-pfc.8 EXAMPLES and dcb/dcb_pfc.c dcb_pfc_print (the text form).
    text = "# dcb pfc show dev eth2\npfc-cap 8 macsec-bw 0 delay 0\nprio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off\n"
    records = facts(tmp_path, text)["net.pfc_dcb"]
    assert [(r["name"], r["pfc_enabled"]) for r in records] == [("eth2", [3])]


def test_a_sysfs_dump_is_the_rdma_ports_probes_reading(tmp_path):
    # leptonai/gpud testdata sys-class-infiniband-h100.0/mlx5_0 as `grep -r .` prints it (tests/fixtures/outputs).
    text = fixture_body(OUTPUTS / "sysfs-class-infiniband-cx7-ndr-ib-port.txt")
    obs = observations(tmp_path, text)
    path = f"{tmp_path}/paste.txt"
    (port,) = obs["rdma.ports"].value
    assert {k: port[k] for k in ("name", "link_layer", "hca_type", "fw_ver", "state", "phys_state", "rate")} == {
        "name": "mlx5_0/1", "link_layer": "InfiniBand", "hca_type": "MT4129", "fw_ver": "28.41.1000",
        "state": {"code": 4, "name": "ACTIVE"}, "phys_state": {"code": 5, "name": "LinkUp"},
        "rate": {"gbps": 400.0, "width": 4, "speed": "NDR"}}
    counters = obs["rdma.counters"]
    assert (counters.status, counters.reason) == ("missing", f"one pasted sample ({path}:1-54) has no rate: paste the "
                                                              "same counters twice, 10 s apart, while the job runs")
    _, d, _ = diagnose_json(tmp_path, text)
    assert d["context"]["fabric"] == "ib"
    assert step(d, "trunk.ports_active")["outcome"] == "no"  # main: unknown (the dump gave no port)
    assert step(d, "ib.link_errors")["outcome"] == "unknown"  # one sample: no rate


def test_rdma_statistic_is_one_sample_of_the_hw_counters(tmp_path):
    # iproute2 man/man8/rdma-statistic.8 ("rdma statistic show link mlx5_2/1") and rdma/stat.c: one line a port.
    text = ("$ rdma statistic show link mlx5_2/1\nlink mlx5_2/1 rx_write_requests 1028 rx_read_requests 0 "
            "out_of_sequence 212 packet_seq_err 37 local_ack_timeout_err 19 np_cnp_sent 4711\n")
    hw = observations(tmp_path, text)["rdma.hw_counters"]
    assert hw.status == "missing" and hw.reason.startswith(f"one pasted sample ({tmp_path}/paste.txt:2) has no rate")


@pytest.mark.parametrize("text", [
    "ulimit -l says 64 inside the container\n",
    "the pod has hostNetwork: true and rdma/hca_shared_devices_a\n",
    "NCCL_TOPO_DUMP_FILE shows gdr=0 on every NIC\n",
    "We upgraded NCCL last week.\n",
])
def test_a_text_naming_nccl_or_a_tool_is_read_not_refused(tmp_path, text):
    # issue 29: "No text that names NCCL, a collective, or one of these tools is refused" (main refuses these four)
    rc, d, _ = diagnose_json(tmp_path, text)
    assert rc == 3 and d["verdict"] == "inconclusive" and d["inconclusive"][-1]["reason"] == COLLECT


def test_a_text_naming_none_is_still_refused(tmp_path):
    with pytest.raises(EvidenceError) as err:
        facts(tmp_path, "hello, the job is broken\n")
    assert str(err.value) == f"{tmp_path}/paste.txt: {NOTHING}"


def test_a_pasted_perfquery_is_one_sample_of_the_switch_side(tmp_path):
    # linux-rdma/infiniband-diags#16: `perfquery -x 10 1` (tests/fixtures/outputs), after an ibstat of the node's IB
    # ports (tests/fixtures/outputs). perfquery is what the rdma_peer_counters probe runs (probes/rdma.yaml).
    text = (fixture_body(OUTPUTS / "ibstat-ndr-h100-ib-all-active.txt")
            + fixture_body(OUTPUTS / "perfquery-x-extended-zero.txt"))
    obs = observations(tmp_path, text)["rdma.peer_counters"]
    said = (f"one pasted sample ({tmp_path}/paste.txt:155-180) has no rate: paste the same counters twice, 10 s apart, "
            "while the job runs")
    assert (obs.status, obs.value, obs.reason) == ("missing", None, said)
    _, d, _ = diagnose_json(tmp_path, text)
    peer = step(d, "ib.peer_errors")
    assert peer["outcome"] == "unknown"
    assert peer["facts"][0]["reason"] == f"the switch side was not read: {said}"


def test_a_perfquery_of_two_ports_gives_no_sample(tmp_path):
    # the same dump for ports 1,2 (tests/fixtures/outputs perfquery-x-two-ports.txt): refused by the parser, no fact
    obs = observations(tmp_path, fixture_body(OUTPUTS / "perfquery-x-two-ports.txt"))
    assert "rdma.peer_counters" not in obs
