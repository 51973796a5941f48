"""The ceiling table (hardware/ceilings.yaml) and docs/ceilings.md say the same, every figure names a source the
table defines, and the GPU names nccl-tests and nvidia-smi print map to the right model."""

from __future__ import annotations

from pathlib import Path

import pytest

from allreduce_doctor.ceiling import model_key, table
from allreduce_doctor.ceiling_doc import render

ROOT = Path(__file__).resolve().parents[2]


def test_the_doc_holds_the_table_rendered_from_the_data():
    doc = (ROOT / "docs" / "ceilings.md").read_text()
    assert render() in doc, "docs/ceilings.md is stale: python -m allreduce_doctor.ceiling_doc renders its table"


def test_every_figure_cites_a_source_the_table_defines():
    data = table()
    cited = set()
    for key, model in data["models"].items():
        assert model["names"] and model["links"] > 0 and model["link_gbs"] > 0 and model["sources"], key
        cited |= set(model["sources"]) | {m["source"] for m in model["measured"]}
        cited |= {v["source"] for v in (model["nvls"] or {}).values()} if isinstance(model["nvls"], dict) else set()
    assert cited <= set(data["sources"]), cited - set(data["sources"])


@pytest.mark.parametrize(("name", "key"), [
    ("NVIDIA H100 80GB HBM3", "H100-SXM"),  # the SXM5 part's name (nvidia-smi, nccl-tests rank lines)
    ("NVIDIA H100 PCIe", "H100-PCIe"),
    ("NVIDIA H100 NVL", None),  # NVL cards (bridged pairs) are not modelled: never the SXM's ceiling
    ("NVIDIA H200", "H200-SXM"),
    ("NVIDIA H200 NVL", None),
    ("NVIDIA H20", "H20"),  # not H200
    ("NVIDIA B200", "B200"),
    ("NVIDIA GB200", "GB200"),  # not B200
    ("NVIDIA Graphics Device", None),  # early GB200 drivers: no model in the name
    ("NVIDIA A100-SXM4-80GB", "A100-SXM4"),
    ("NVIDIA A100 80GB PCIe", "A100-PCIe"),
    ("Tesla V100-SXM2-32GB", "V100-SXM2"),
    ("AMD Instinct MI300X", "MI300X"),
    ("h100-sxm", "H100-SXM"),  # an --answer gives the table's key
    (None, None),
])
def test_gpu_names_map_to_their_model(name, key):
    assert model_key(name) == key


def test_the_tables_margins_are_the_nics_margins():
    from allreduce_doctor.domain import BUSBW_ABOVE_LINE, BUSBW_AT_LIMIT

    assert (table()["at_limit"], table()["above_bound"]) == (BUSBW_AT_LIMIT, BUSBW_ABOVE_LINE)
