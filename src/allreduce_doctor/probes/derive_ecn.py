"""ECN/DCQCN read from the congestion counters, where the driver shows no enable (review: ECN from
counters, inbox/upstream drivers).

mlx5 counters.rst (kernel Documentation/networking/device_drivers/ethernet/mellanox/mlx5/
counters.rst, "RoCE congestion" / docs/counters.md 2.2): np_ecn_marked_roce_packets
counts the CE-marked RoCEv2 packets this host received as the notification point (NP), which
answers them with CNPs (np_cnp_sent, at most one per QP per min_time_between_cnps); rp_cnp_ignored
counts CNPs received and ignored by the reaction point (RP), which "should not raise if RoCE
congestion control was enabled". So, between the two samples:
- marks arrived and no CNP left: the NP does not answer marks, ECN/DCQCN is off on the NIC;
- CNPs were ignored: the RP is off;
- marks answered by CNPs and CNPs handled, none ignored: both points work;
- nothing moved (an idle window, a fabric that marks nothing): unknown, never "on".
The counters are per port over every priority; the enable they stand for is NCCL's when its
traffic is what moved. bnxt_re shows marks and CNPs sent (rx_ecn_marked_pkts, tx_cnp_pkts) and no
ignored count: only the NP side can be read there.
"""

from __future__ import annotations

from typing import Any

from allreduce_doctor.observations import OK
from allreduce_doctor.probes import counter_names


def from_counters(record: dict | None) -> tuple[bool | None, str]:
    """(ECN/DCQCN on: True / False / None, what the counters said) for one RDMA port's sampled
    hw_counters record (rdma.hw_counters)."""
    delta = (record or {}).get("delta")
    if not isinstance(delta, dict):
        return None, "the congestion counters were not sampled twice"
    driver = counter_names.driver_of(set(delta), set())

    def moved(role: str) -> tuple[int | None, str]:
        names = [n for g, n in counter_names.names(driver, role, None) if g == "hw"] if driver else []
        values: list[Any] = [delta.get(n) for n in names if n in delta]
        return (sum(values), names[0]) if values and None not in values else (None, names[0] if names else role)

    (marked, m_name), (sent, s_name) = moved("ecn_marked"), moved("cnp_sent")
    (handled, h_name), (ignored, i_name) = moved("cnp_handled"), moved("cnp_ignored")
    if ignored:
        return False, f"{i_name} grew by {ignored}: CNPs arrived and the reaction point ignored them (DCQCN off)"
    if marked and sent == 0:
        return False, f"{m_name} grew by {marked} and {s_name} stayed flat: the notification point answers no ECN mark"
    if marked and sent and handled and ignored == 0:
        return True, f"{m_name} answered by {s_name}, {h_name} grew and {i_name} did not"
    if not marked and not handled:
        return None, f"no ECN mark and no CNP moved in the window ({m_name}, {h_name})"
    if marked and sent and ignored is None:
        return None, f"{m_name} answered by {s_name}, but this driver counts no ignored CNPs: the reaction point is not shown"
    return None, "the counters show only one side of ECN/DCQCN working"


def port_records(obs) -> dict[str | None, dict]:
    """'dev/port' -> its sampled rdma.hw_counters record ({} when the fact is not ok)."""
    if obs is None or obs.status != OK or not isinstance(obs.value, list):
        return {}
    return {r.get("name"): r for r in obs.value if isinstance(r, dict)}
