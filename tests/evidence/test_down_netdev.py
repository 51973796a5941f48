"""ibdev2netdev's `(Down)`: a port-down candidate while the port's own state is not shown; a down IPoIB
netdev beside its active port is no port down."""

from __future__ import annotations

from tests.evidence.helpers import diagnose_json as _diagnose
from tests.evidence.helpers import ranked as _ranked


# -- ibdev2netdev's (Down): a candidate while the port's own state is not shown --------------------
def test_a_down_netdev_whose_port_is_not_shown_is_a_port_down_candidate(tmp_path):
    _, d, path = _diagnose(tmp_path, "$ ibdev2netdev\nmlx5_3 port 1 ==> net1 (Down)\n")
    first = d["findings"][0]
    assert (first["cause"], first["confidence"]) == ("ib_port_down", "low")
    assert first["supporting"] == [f"{path}:2: mlx5_3 port 1 ==> net1 (Down): no carrier on the port's netdev"]
    assert first["next_step"].startswith("paste `ibstat mlx5_3` (the port's State and Physical state)")


def test_a_down_ipoib_netdev_beside_its_active_port_is_no_port_down(tmp_path):
    # An IPoIB netdev has no carrier until it joins the broadcast group: the port's ACTIVE state decides.
    text = ("CA 'mlx5_3'\n\tCA type: MT4123\n\tNumber of ports: 1\n\tPort 1:\n\t\tState: Active\n"
            "\t\tPhysical state: LinkUp\n\t\tRate: 200\n\t\tLink layer: InfiniBand\n"
            "$ ibdev2netdev\nmlx5_3 port 1 ==> ib0 (Down)\n")
    _, d, _ = _diagnose(tmp_path, text)
    assert "ib_port_down" not in _ranked(d)
