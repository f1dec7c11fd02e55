"""GPUDirect as the machine says (issue 34, item 2): the generated `gdr` of every GPU and NIC port
equals the input's, on every importable NCCL/RCCL dump in tests/data and the real machines'
folder (../shared/data/real-machines/, skipped when absent), where the input states it and the
draft validates; a NIC whose stated gdr disagrees with the GPUs' is explained by HW207."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwspec.cli.commands import main
from hwspec.live.xmlread import parse_xml
from tests.shared_data import REAL_MACHINES as REAL

HERE = Path(__file__).resolve().parent
DUMPS = sorted([*HERE.glob("data/*.xml"), *HERE.glob("data/live/*.nccl.xml"), *HERE.glob("data/live/*.rccl.xml"),
                *REAL.glob("*.nccl.xml"), *REAL.glob("*.rccl.xml"), *REAL.glob("*/nccl-*-dump.xml")])


def stated_gdr(path: Path) -> dict[tuple[str, str], str]:
    """(tag, GPU bus id or net name) -> gdr, of every <gpu> and <net> that states it."""
    root = parse_xml(path.read_bytes())
    out: dict[tuple[str, str], str] = {}

    def walk(e, bus: str | None) -> None:
        bus = e.attrs.get("busid", bus) if e.tag == "pci" else bus
        if e.tag == "gpu" and "gdr" in e.attrs and bus:
            out[("gpu", bus.lower())] = e.attrs["gdr"]
        if e.tag == "net" and "gdr" in e.attrs and e.attrs.get("name"):
            out[("net", e.attrs["name"])] = e.attrs["gdr"]
        for child in e.children:
            walk(child, bus)
    walk(root, None)
    return out


@pytest.mark.slow  # imports, validates and generates every NCCL/RCCL dump (about 35)
@pytest.mark.parametrize("dump", DUMPS, ids=lambda p: p.name)
def test_generated_gdr_equals_the_inputs_gdr_per_gpu_and_port(dump, tmp_path, capsys):
    stated = stated_gdr(dump)
    if not stated:
        pytest.skip(f"{dump.name} states no gdr")
    draft = tmp_path / "node.yaml"
    if main(["import", str(dump), "-o", str(draft)]) != 0 or main(["validate", str(draft)]) != 0:
        pytest.skip(f"{dump.name}: the draft does not validate (validate-means-generate covers it)")
    assert main(["generate", str(draft), "-o", str(tmp_path / "out"), "--no-svg"]) == 0
    capsys.readouterr()
    written = next((tmp_path / "out" / "node").glob("*-topo.xml"))
    generated = stated_gdr(written)
    compared = {key: (value, generated[key]) for key, value in stated.items() if key in generated}
    assert compared, f"{dump.name}: no device of the input is in {written.name}"
    assert {k: v for k, v in compared.items() if v[0] != v[1]} == {}


KNOWN_NICS = (Path(__file__).resolve().parent / "data" / "live" / "roce-no-gdr.nccl.xml").read_text().replace(
    'class="0x020000" link_speed="16.0 GT/s PCIe"', 'class="0x020000" vendor="0x15b3" device="0x101b" link_speed="16.0 GT/s PCIe"')
"""roce-no-gdr with ConnectX-6 200G ids on its NICs (a part that can do GPUDirect RDMA)."""


def _with_gdr(tmp_path: Path, gpu: str, net: str) -> Path:
    text = KNOWN_NICS.replace('rank="0" gdr="0"', f'rank="0" gdr="{gpu}"').replace('rank="1" gdr="0"', f'rank="1" gdr="{gpu}"')
    text = text.replace('port="1" gdr="0"/>\n        </nic>\n      </pci>\n      <pci busid="0000:1c',
                        f'port="1" gdr="{net}"/>\n        </nic>\n      </pci>\n      <pci busid="0000:1c')
    text = text.replace('name="mlx5_1" dev="1" speed="200000" port="1" gdr="0"',
                        f'name="mlx5_1" dev="1" speed="200000" port="1" gdr="{gpu}"')  # mlx5_1 agrees with the GPUs
    path = tmp_path / f"gpu{gpu}-net{net}.nccl.xml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("gpu, net", [("1", "0"), ("0", "1")])
def test_a_port_whose_gdr_disagrees_with_the_gpus_is_kept_as_stated_and_hw207_names_both(gpu, net, tmp_path, capsys):
    dump = _with_gdr(tmp_path, gpu, net)
    draft = tmp_path / "node.yaml"
    assert main(["import", str(dump), "-o", str(draft)]) == 0
    text = draft.read_text()
    assert f"part: connectx-6-200g\n  override: {{gpudirect: {'true' if net == '1' else 'false'}}}\n" in text
    capsys.readouterr()
    assert main(["validate", str(draft)]) == 0
    out = capsys.readouterr().out
    findings = [line for line in out.splitlines() if "HW207" in line]
    assert len(findings) == 1 and findings[0].endswith(
        f"warning[HW207 gpudirect-agrees]: nic0 (mlx5_0) states gdr {net}, but backend.gpudirect gives gpu0, gpu1 gdr "
        f"{gpu}: NCCL uses GPUDirect RDMA only where both say 1, so this port's GPU traffic goes through host memory")
    assert main(["generate", str(draft), "-o", str(tmp_path / "out"), "--no-svg"]) == 0
    generated = stated_gdr(tmp_path / "out" / "node" / "nccl-topo.xml")
    assert {k: v for k, v in generated.items() if k[0] == "gpu" or k[1] == "mlx5_0"} == {
        ("gpu", "0000:14:00.0"): gpu, ("gpu", "0000:1c:00.0"): gpu, ("net", "mlx5_0"): net}
    assert generated == stated_gdr(dump)


def test_gpus_that_state_different_gdr_are_drafted_with_a_note_naming_those_overridden(tmp_path, capsys):
    dump = tmp_path / "mixed.nccl.xml"
    dump.write_text(KNOWN_NICS.replace('rank="0" gdr="0"', 'rank="0" gdr="1"'))
    draft = tmp_path / "node.yaml"
    assert main(["import", str(dump), "-o", str(draft)]) == 0
    assert ("# note: the input gives gdr 1 for GPU(s) 0000:14:00.0 and gdr 0 for the others: backend.gpudirect (one "
            "value for every GPU) is drafted false, so nccl-topo.xml writes gdr 0 for them all\n") in draft.read_text()
