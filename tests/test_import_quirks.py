"""Import accepts what real tools write and NCCL accepts (issue 22, item 4): each quirk pinned by a
tiny synthetic file in tests/data/live (README there), drafted, validated and diffed clean."""

from __future__ import annotations

from pathlib import Path

from hwspec.cli.commands import main
from hwspec.live.merge import read_inputs

LIVE = Path(__file__).resolve().parent / "data" / "live"


def _import(tmp_path: Path, name: str, capsys) -> tuple[str, str]:
    draft = tmp_path / "draft.yaml"
    assert main(["import", str(LIVE / name), "-o", str(draft)]) == 0
    err = capsys.readouterr().err
    assert main(["validate", str(draft)]) == 0
    assert "error[" not in capsys.readouterr().out
    assert main(["diff", str(draft), str(LIVE / name)]) == 0
    capsys.readouterr()
    return draft.read_text(), err


def test_nvlink_entries_targeting_their_own_gpu_are_ignored_with_a_note_not_errors(tmp_path, capsys):
    text, err = _import(tmp_path, "vm-self-nvlink.nccl.xml", capsys)
    file = "vm-self-nvlink.nccl.xml"  # shown relative to the working directory
    assert (f"{file}:6:11: warning[I102 input-ignored]: 12 NVLink(s) of 0000:05:00.0 target the GPU itself "
            "(a VM's passed-through PCIe GPU): not a link between GPUs, ignored; NCCL links the GPU to itself with them and counts "
            "them in its NVLink bandwidth (topo.cc ncclTopoAddNvLinks, search.cc getTotalBw), which nccl-topo.xml leaves out\n") in err
    assert (f"{file}:13: 12 NVLink(s) of 0000:06:00.0 target the GPU itself (a VM's passed-through "
            "PCIe GPU): not a link between GPUs, ignored; NCCL links the GPU to itself with them and counts them in its NVLink "
            "bandwidth (topo.cc ncclTopoAddNvLinks, search.cc getTotalBw), which nccl-topo.xml leaves out\n") in text
    assert "nvlink:" not in text and "baseboard:" not in text
    assert err.endswith("from 1 NUMA node(s), 2 GPU(s), 0 NIC(s): validates with no error; check its 'assumed:' notes\n")


def test_a_host_bridge_holding_a_gpu_and_a_nic_stays_a_bridge_and_the_rdma_nic_is_a_backend_nic_on_its_cpu(tmp_path, capsys):
    machine = read_inputs([LIVE / "gvisor-host-bridge.nccl.xml"])
    assert list(machine.bridges) == ["0000:00:00.0"] and list(machine.gpus) == ["0000:18:00.0"]
    assert [(n.bus, n.parent, [p.name for p in n.ports]) for n in machine.nics.values()] == [
        (None, "0000:00:00.0", ["mlx5_0"])]
    text, err = _import(tmp_path, "gvisor-host-bridge.nccl.xml", capsys)
    file = "gvisor-host-bridge.nccl.xml"
    assert (f"{file}:7:7: warning[I103 input-value]: <nic> directly under the bridge 0000:00:00.0 (class 0x060000): "
            "a NIC whose PCI device the input does not show; the bridge stays a bridge\n") in err
    assert "part: b200" in text and "bus: '0000:18:00.0'" in text
    assert ("  role: backend\n  transport: rocev2\n  device: mlx5_0\n  pcie:\n    upstream: {value: cpu0, assumed: "
            "'the input shows it under the bridge 0000:00:00.0 without a PCI device of its own: attached to "
            "the bridge''s CPU, as NCCL attaches a NIC that is no PCI device'}\n    bus: unknown\n") in text
    assert main(["generate", str(tmp_path / "draft.yaml"), "-o", str(tmp_path / "out"), "--no-svg"]) == 0
    xml = (tmp_path / "out" / "draft" / "nccl-topo.xml").read_text()
    assert ('    </pci>\n    <nic>\n      <net name="mlx5_0" dev="0" speed="400000" port="1" gdr="1"/>\n    </nic>\n'
            "  </cpu>\n") in xml
    assert "backend NICs without a bus id in the platform file (no PCI device in the input) are a <nic> under their <cpu>" in xml
    conf = (tmp_path / "out" / "draft" / "nccl.conf").read_text()
    assert "NCCL_IB_DISABLE" not in conf and "NCCL_IB_HCA==mlx5_0:1\n" in conf


def test_a_nic_without_a_pci_device_is_drafted_on_its_cpu_and_left_to_nccls_detection(tmp_path, capsys):
    text, err = _import(tmp_path, "nic-without-pci.nccl.xml", capsys)
    note = ("nic-without-pci.nccl.xml:6: eth0 has no PCI device in the input (virtual, fused, or hidden "
            "by a sandbox): drafted with bus unknown on its CPU, where NCCL attaches it")
    assert f"{note}\n" in text.split("hwspec: 1")[0] and f"{note}\n" in err
    assert "  role: ingestion\n  transport: tcp\n  interface: eth0\n  pcie: {upstream: cpu0, bus: unknown}\n" in text
    assert err.endswith("from 1 NUMA node(s), 1 GPU(s), 1 NIC(s): validates with no error; check its 'assumed:' notes\n")


def test_rccl_bare_gcn_number_is_read_as_its_gfx_target():
    machine = read_inputs([LIVE / "nic-without-pci.nccl.xml"])
    assert [g.gcn for g in machine.gpus.values()] == ["gfx908"]


def test_nvswitch_pci_functions_are_drafted_as_the_baseboards_switches_not_nics(tmp_path, capsys):
    machine = read_inputs([LIVE / "nvswitch-functions.nccl.xml"])
    assert sorted(machine.nvswitches) == ["0000:c0:00.0", "0000:c1:00.0"] and not machine.nics
    text, _ = _import(tmp_path, "nvswitch-functions.nccl.xml", capsys)
    assert ("  nvswitches:\n  - {id: nvs0, bus: '0000:c0:00.0', links_per_gpu: 6}\n"
            "  - {id: nvs1, bus: '0000:c1:00.0', links_per_gpu: 6}\n") in text
    assert "nics:" not in text


def test_an_unknown_amd_gpu_keeps_rccls_gcn_arch_and_cu_count_and_rccl_topo_xml_writes_them(tmp_path, capsys):
    text, _ = _import(tmp_path, "unknown-amd.rccl.xml", capsys)
    assert ("  part: unknown\n  slot: 0\n  override:\n    vendor: amd\n    pci_vendor: \"0x1002\"\n    pci_device: \"0x00ff\"\n"
            "    gcn: gfx999\n    hip_arch: 12345\n    compute_units: 64\n    fabric: {kind: xgmi, links: 2}\n") in text
    assert main(["generate", str(tmp_path / "draft.yaml"), "-o", str(tmp_path / "out"), "--no-svg"]) == 0
    xml = (tmp_path / "out" / "draft" / "rccl-topo.xml").read_text()
    assert xml.count('sm="64" gcn="gfx999" arch="12345"') == 2


def test_an_unknown_amd_gpu_without_arch_and_cu_count_is_a_located_hw911_naming_what_to_fill_in(tmp_path, capsys):
    bare = tmp_path / "bare.rccl.xml"
    bare.write_text((LIVE / "unknown-amd.rccl.xml").read_text().replace(' sm="64"', "").replace(' arch="12345"', ""))
    draft = tmp_path / "draft.yaml"
    assert main(["import", str(bare), "-o", str(draft)]) == 1
    capsys.readouterr()
    assert main(["validate", str(draft)]) == 1
    out = capsys.readouterr().out
    assert (f"{draft}:20:9: error[HW911 rccl-topo-writable]: gpu0: part unknown and its override: gives no hip_arch, "
            "compute_units; RCCL's <gpu> needs gcn, arch and sm (the compute-unit count): write them under override: "
            "(hip_arch: 38911, the arch HIP gives every AMD GPU (ROCm/clr hip_device.cpp); compute_units: rocminfo's "
            "Compute Unit count; or an RCCL topology dump's gcn, arch and sm)\n") in out
    assert main(["generate", str(draft), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "error[HW911" in err and "E901" not in err and not (tmp_path / "out").exists()


def test_two_xgmi_hives_of_equal_size_validate_as_rccl_reads_them(tmp_path, capsys):
    text, err = _import(tmp_path, "two-hives.rccl.xml", capsys)
    assert "  - gpus: [gpu0, gpu1]\n    links: 1\n  - gpus: [gpu2, gpu3]\n    links: 1\n" in text and "HW304" not in err


def test_islands_of_unequal_size_are_still_hw304(tmp_path, capsys):
    uneven = tmp_path / "uneven.rccl.xml"  # the second hive's link left out: a hive of 2 and two lone GPUs
    uneven.write_text((LIVE / "two-hives.rccl.xml").read_text().replace(
        '        <xgmi target="0000:31:00.0" count="1" tclass="0x038000"/>\n', "").replace(
        '        <xgmi target="0000:41:00.0" count="1" tclass="0x038000"/>\n', ""))
    draft = tmp_path / "draft.yaml"
    assert main(["import", str(uneven), "-o", str(draft)]) == 1
    capsys.readouterr()
    assert main(["validate", str(draft)]) == 1
    assert ("error[HW304 nvlink-connected]: the NVLink fabric splits the 4 GPUs into 3 islands: {gpu0, gpu1} "
            "and {gpu2} and {gpu3}") in capsys.readouterr().out


def test_nvswitches_without_nvlinks_are_named_in_a_note_and_no_fabric_is_drafted(tmp_path, capsys):
    text, err = _import(tmp_path, "dgx2-nvswitches.lstopo.xml", capsys)
    note = ("2 NVSwitch chip(s) in the input (0000:61:00.0, 0000:66:00.0) but no NVLink of any GPU to them: the "
            "NVLink fabric is left out of the draft (describe 'baseboard:' and 'nvlink:' from the board's "
            "documentation, or import an NCCL topology dump, which gives each GPU's links)")
    assert f"hwspec: note: {note}\n" in err and f"# note: {note}\n" in text
    assert "\nnvlink:" not in text and "\nbaseboard:" not in text


def test_a_cpu_whose_model_name_differs_from_the_catalogue_part_of_its_family_and_model_is_unknown(tmp_path, capsys):
    text, _ = _import(tmp_path, "dgx2-nvswitches.lstopo.xml", capsys)  # a Xeon 8174: family 6 model 85, as the 8280
    assert ("  part: unknown\n  override: {vendor: intel, arch: x86_64, model_name: Intel(R) Xeon(R) Platinum 8174 CPU @ "
            "3.10GHz, family: 6, model: 85}\n") in text  # arch: an Intel CPUID vendor is an x86 CPU's
    assert "xeon-platinum-8280" not in text


def test_a_net_speed_beyond_any_nic_port_is_left_unknown_with_a_note_not_an_hw401(tmp_path, capsys):
    draft = tmp_path / "draft.yaml"
    assert main(["import", str(LIVE / "net-speed-unit.rccl.xml"), "-o", str(draft)]) == 0
    err = capsys.readouterr().err
    message = ('<net> speed="200000000" is 200 Tb/s in NCCL\'s Mb/s, beyond any NIC port (a figure in another unit?): '
               "the draft leaves the speed unknown")
    assert f"net-speed-unit.rccl.xml:8:9: warning[I103 input-value]: {message}\n" in err
    text = draft.read_text()
    assert f"net-speed-unit.rccl.xml:8: {message}\n" in text
    assert "speed:" not in text.split("\nnics:")[1]
    assert main(["validate", str(draft)]) == 0
    assert "HW401" not in capsys.readouterr().out


def _generated(draft: Path, out: Path, capsys) -> dict[str, str]:
    """The generated files of `draft` by file name (no SVG)."""
    assert main(["generate", str(draft), "-o", str(out), "--no-svg"]) == 0
    capsys.readouterr()
    return {p.name: p.read_text() for p in out.rglob("*") if p.is_file()}


def test_a_slingshot_nic_without_an_interface_is_an_hw603_unknown_and_leaves_nccl_socket_ifname_to_nccl(tmp_path, capsys):
    """RCCL's MI300A model names its cxi devices, not their hsn interfaces: the draft invents none,
    validate warns (NCCL picks its bootstrap interfaces itself), and the files say it is not set."""
    text, _ = _import(tmp_path, "net-speed-unit.rccl.xml", capsys)
    assert "  part: hpe-slingshot-200g\n  role: backend\n  transport: slingshot\n  device: cxi0\n" in text
    assert "interface:" not in text and "placeholder" not in text
    assert main(["validate", str(tmp_path / "draft.yaml")]) == 0
    out = capsys.readouterr().out
    assert "warning[HW603 unknown-facts]: nic0: unknown network interface name\n  hint: give 'interface:' as " \
           "'ip link' shows it; until then NCCL_SOCKET_IFNAME is left out and NCCL picks its interfaces itself\n" in out
    files = _generated(tmp_path / "draft.yaml", tmp_path / "out", capsys)
    note = ("# NCCL_SOCKET_IFNAME is not set: the platform does not name the network interfaces of its slingshot "
            "backend NICs, so NCCL picks its interfaces itself (HW603 lists them)\n")
    assert note in files["rccl.conf"] and "NCCL_SOCKET_IFNAME=" not in files["rccl.conf"]
    assert "FI_PROVIDER=cxi\n" in files["launch.env"]


def test_an_efa_function_beside_a_gpu_is_drafted_as_efa_and_its_files_select_the_efa_provider(tmp_path, capsys):
    """0x1d0f:0xefa1 (EFA, p5) under the GPU's switch is an aws-ofi-nccl (libfabric) NIC serving
    that GPU, whatever class NCCL gives its function."""
    text, _ = _import(tmp_path, "efa-gpu-switch.nccl.xml", capsys)
    assert "  role: backend\n  transport: efa\n  gpu: gpu0\n  device: rdmap22s0\n" in text
    assert "backend: {transport: efa, nic_per_gpu: true, gpudirect: true," in text
    files = _generated(tmp_path / "draft.yaml", tmp_path / "out", capsys)
    assert "FI_PROVIDER=efa\n" in files["launch.env"] and "FI_EFA_USE_DEVICE_RDMA=1\n" in files["launch.env"]
    assert "NCCL_IB_HCA" not in files["nccl.conf"]  # NCCL's IB verbs net does not carry EFA
    assert '<net name="rdmap22s0" dev="0" speed="100000" port="1" gdr="1"/>' in files["nccl-topo.xml"]


def test_a_cpu_without_a_numa_node_keeps_its_identity_so_the_draft_validates_and_generates(tmp_path, capsys):
    dump = tmp_path / "numa-unknown.nccl.xml"
    dump.write_text((LIVE / "nic-without-pci.nccl.xml").read_text().replace('numaid="0"', 'numaid="-1"'))
    draft = tmp_path / "draft.yaml"
    assert main(["import", str(dump), "-o", str(draft)]) == 0
    # its CPUID names the part; its NUMA node stays -1, as NCCL wrote it
    assert "sockets:\n- id: cpu0\n  part: epyc-7v12\n  numa_node: -1\n" in draft.read_text()
    assert main(["generate", str(draft), "-o", str(tmp_path / "out"), "--no-svg"]) == 0
    assert '<cpu numaid="-1" ' in next((tmp_path / "out" / "draft").glob("*-topo.xml")).read_text()
