"""torchrec-topology.json as TorchRec reads it: TopologyFactory and Topology built from the
generated files, and the sharding planner run on them (CPU: torch 2.13.0 CPU build,
fbgemm-gpu-cpu, torchrec; `.ci/run` installs them)."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from tests.consumers import ROOT, torchrec_planner_types

pytestmark = [pytest.mark.consumer, pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.filterwarnings("ignore::FutureWarning")]

GENERATED = ROOT / "generated"
FILES = [GENERATED / "zionex" / "torchrec-topology.json", GENERATED / "zionex-16" / "torchrec-topology.json",
         GENERATED / "zion-16" / "torchrec-topology.json"]
A100_NVLINK_TOTAL_BYTES_PER_MS = 12 * 25e9 * 2 / 1000
"""An A100's 12 NVLink3 links at 25 GB/s per direction, both directions: 600 GB/s, TorchRec's
"600 GB/s (NVLink)" intra-node figure."""


@pytest.fixture(scope="module")
def planner_types():
    return torchrec_planner_types()


def _factory_topology(types, doc: dict):
    factory = doc["factory"]
    return types.TopologyFactory.create_topology(
        trainer_config=types.TrainerConfig(**factory["trainer_config"]),
        hardware_config=types.HardwareConfig(**factory["hardware_config"]),
        kernel_config=types.KernelConfig(**factory["kernel_config"]))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
def test_topology_factory_builds_the_files_topology_without_a_warning(planner_types, path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    doc = json.loads(path.read_text())
    kwargs = doc["topology_kwargs"]
    with caplog.at_level(logging.WARNING):
        topology = _factory_topology(planner_types, doc)
    assert not [r for r in caplog.records if "TopologyFactory" in r.getMessage() or "HardwareConfig" in r.getMessage()]
    assert (topology.world_size, topology.local_world_size, topology.compute_device) == (
        kwargs["world_size"], kwargs["local_world_size"], "cuda")
    for name in ("intra_host_bw", "inter_host_bw", "hbm_mem_bw", "ddr_mem_bw", "hbm_to_ddr_mem_bw"):
        assert getattr(topology, name) == pytest.approx(kwargs[name]), name
    assert topology.devices[0].storage.hbm == kwargs["hbm_cap"]
    assert topology.devices[-1].storage.ddr == kwargs["ddr_cap"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
def test_topology_kwargs_and_factory_give_the_same_topology(planner_types, path: Path) -> None:
    doc = json.loads(path.read_text())
    direct = planner_types.Topology(**doc["topology_kwargs"])
    built = _factory_topology(planner_types, doc)
    for name in ("world_size", "local_world_size", "intra_host_bw", "inter_host_bw", "hbm_mem_bw", "ddr_mem_bw",
                 "hbm_to_ddr_mem_bw"):
        assert getattr(direct, name) == getattr(built, name), name
    assert [d.storage for d in direct.devices] == [d.storage for d in built.devices]


def test_intra_host_bw_is_the_a100s_total_nvlink_bandwidth_as_torchrec_counts_it(planner_types) -> None:
    from torchrec.distributed.planner.constants import INTRA_NODE_BANDWIDTH

    kwargs = json.loads(FILES[0].read_text())["topology_kwargs"]
    assert kwargs["intra_host_bw"] == A100_NVLINK_TOTAL_BYTES_PER_MS
    # TorchRec's default is the same A100 NVLink total written in GiB (600 GiB/s): within 10 %
    assert kwargs["intra_host_bw"] == pytest.approx(INTRA_NODE_BANDWIDTH, rel=0.1)
    # and the NIC figure stays per direction, per GPU, as BasicCommsBandwidths' "1 NIC per GPU" needs
    assert kwargs["inter_host_bw"] == 200e9 / 8 / 1000


def test_sharding_planner_plans_on_the_generated_cluster_topology(planner_types) -> None:
    import torch
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.planner import EmbeddingShardingPlanner
    from torchrec.modules.embedding_configs import EmbeddingBagConfig
    from torchrec.modules.embedding_modules import EmbeddingBagCollection

    doc = json.loads(FILES[1].read_text())
    topology = _factory_topology(planner_types, doc)
    tables = [EmbeddingBagConfig(name=f"t{i}", embedding_dim=128, num_embeddings=1_000_000, feature_names=[f"f{i}"])
              for i in range(4)]
    module = EmbeddingBagCollection(tables=tables, device=torch.device("meta"))
    plan = EmbeddingShardingPlanner(topology=topology).plan(module, [EmbeddingBagCollectionSharder()])
    (sharding,) = plan.plan.values()
    assert sorted(sharding) == [f"t{i}" for i in range(4)]
    ranks = {shard.placement.rank() for table in sharding.values() for shard in table.sharding_spec.shards}
    assert ranks and max(ranks) < doc["topology_kwargs"]["world_size"]


def test_the_example_of_docs_consumers_torchrec_builds_the_topology(planner_types, monkeypatch: pytest.MonkeyPatch) -> None:
    page = (ROOT / "docs" / "consumers" / "torchrec.md").read_text()
    (code,) = re.findall(r"```python\n(.*?)```", page, re.DOTALL)
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    exec(compile(code, "docs/consumers/torchrec.md", "exec"), namespace)
    assert (namespace["topology"].world_size, namespace["topology"].intra_host_bw) == (128, A100_NVLINK_TOTAL_BYTES_PER_MS)
