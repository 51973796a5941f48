"""The socket interface NCCL connects on, read through `diagnose --evidence`: a connect to a loopback
address decides the interface step, a routed one leaves it open; no usable interface on a host named
like a container is its network namespace, on a plain host name the interface setting."""

from __future__ import annotations

from tests.evidence.helpers import diagnose_json as _diagnose
from tests.evidence.helpers import ranked as _ranked
from tests.evidence.helpers import step as _step


def _decided_by(tmp_path, text: str, node: str, fact: str, rows) -> tuple[int, dict]:
    """Diagnose `text`; the step `node` says yes on exactly `rows` (a callable of the paste's path)."""
    rc, d, path = _diagnose(tmp_path, text)
    step = _step(d, node)
    assert step["outcome"] == "yes"
    assert step["value"][fact] == rows(path)
    return rc, d


# -- a connect to a loopback address: the peer listens on loopback ----------------------------------
# NCCL 2.18.5 misc/socket.cc socketStartConnect, as PyTorch's "Last error:" repeats it.
LOOPBACK = ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1331, unhandled system error "
            "(run with NCCL_DEBUG=INFO for details), NCCL version 2.18.5\n"
            "Last error:\n"
            "socketStartConnect: Connect to 127.0.0.1<45069> failed : Software caused connection abort\n")


def test_a_connect_to_a_loopback_address_decides_the_interface_step(tmp_path):
    rc, d = _decided_by(tmp_path, LOOPBACK, "nccl_log.socket_iface", "log.job.bad_socket_ifaces", lambda path: [
        {"error": "connect_aborted", "address": "127.0.0.1", "source": f"{path}:3"}])
    assert rc == 1 and d["root_cause"]["id"] == "wrong_socket_ifname" and d["root_cause"]["confidence"] == "high"


def test_a_connect_to_a_routed_address_leaves_the_interface_step_alone(tmp_path):
    _, d, _ = _diagnose(tmp_path, LOOPBACK.replace("127.0.0.1", "10.1.2.3"))
    assert _step(d, "nccl_log.socket_iface")["outcome"] == "no"
    assert d["verdict"] == "inconclusive" and d["root_cause"]["confidence"] == "medium"


# -- no usable interface inside a container's own network namespace --------------------------------
# NCCL 2.2 (NVIDIA/nccl-tests#14) printed `host:pid:tid [dev] file:line WARN msg`, without "NCCL".
CONTAINER = "e66aa18dc444"
NO_IFACE = (f"{CONTAINER}:3171:3171 [0] include/socket.h:311 WARN Socket creation failed : "
            "Address family not supported by protocol\n"
            "NCCL failure common.cu:874 'unhandled system error'\n")


def test_no_usable_interface_on_a_host_named_like_a_container_is_its_network_namespace(tmp_path):
    rc, d = _decided_by(tmp_path, NO_IFACE, "nccl_log.bridge", "log.job.bridge_network", lambda path: [
        {"error": "no_socket_iface", "host": CONTAINER, "container": "own network namespace", "source": f"{path}:1"}])
    assert rc == 1 and _ranked(d)[:2] == ["container_network_isolation", "wrong_socket_ifname"]


def test_the_same_line_on_a_host_with_a_plain_name_is_the_interface_setting(tmp_path):
    rc, d, _ = _diagnose(tmp_path, NO_IFACE.replace(CONTAINER, "gpu-node-07"))
    assert _step(d, "nccl_log.bridge")["outcome"] == "no"
    assert rc == 1 and d["root_cause"]["id"] == "wrong_socket_ifname"


def test_a_host_of_twelve_digits_is_not_taken_for_a_container(tmp_path):
    _, d, _ = _diagnose(tmp_path, NO_IFACE.replace(CONTAINER, "201905230001"))
    assert d["root_cause"]["id"] == "wrong_socket_ifname"
