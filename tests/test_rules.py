"""The built-in rules (src/hwspec/rules/builtin/*.py): one fixture per fault, exact findings; shipped platforms clean.

Each fixture in tests/fixtures/rules/ is base_2gpu.yaml with one thing changed (its first
comment line says what). The expected findings are the exact `Diagnostic.format()` text, so a
changed message, severity, line or column fails here; update the expectation deliberately.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hwspec import pipeline
from hwspec.rules import Rule, load_rules

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path("tests/fixtures/rules")
CLEAN = ["base_2gpu", "nic_dual_port_ok", "c2c_gpu_nic_on_own_grace", "two_backend_nics_for_gpu_ok", "nvlink_cpu_links_ok"]


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # diagnostics show paths relative to the working directory


@pytest.fixture(scope="module")
def rules() -> list[Rule]:
    return load_rules(pipeline.rule_directories())


@pytest.fixture(scope="module")
def node_rules(rules: list[Rule]) -> list[Rule]:
    """The node rules (cluster rules are tested with the cluster fixtures)."""
    return [r for r in rules if r.scope == "node"]


def formatted(path: Path, rules: list[Rule]) -> list[str]:
    checked = pipeline.check(path, rules)
    assert checked.platform is not None, [d.format() for d in checked.diagnostics]
    return [d.format() for d in checked.diagnostics]


FAULTS = [
    pytest.param('cpu_affinity_too_long', [
        "14:11: error[HW901 nccl-topo-writable]: CPU 1027 needs a 296-character affinity mask, but NCCL reads attributes "
        "of at most 254 characters (CPU ids up to 895)\n  hint: number the CPUs from 0 without large gaps",
    ], id='HW901-cpu_affinity_too_long'),
    pytest.param('cpu_vendor_unknown_to_nccl', [
        "8:11: error[HW901 nccl-topo-writable]: socket cpu0 is x86_64 with vendor 'arm'; NCCL's topology file knows "
        "Intel and AMD\n  hint: use an Intel or AMD CPU part",
    ], id='HW901-cpu_vendor_unknown_to_nccl'),
    pytest.param('gpu_sm_beyond_attribute_length', [
        '39:5: error[HW901 nccl-topo-writable]: gpu0: sm="88888888888888888888..." in <gpu> would be 260 characters; NCCL '
        "reads attributes of at most 254\n  hint: use a realistic value",
    ], id='HW901-gpu_sm_beyond_attribute_length'),
    pytest.param('backend_nics_beyond_ib_hca', [
        "65:5: error[HW902 nccl-settings-writable]: 34 backend NICs; NCCL_IB_HCA takes at most 32"
        "\n  hint: keep at most 32 NICs in the backend role",
    ], id='HW902-backend_nics_beyond_ib_hca'),
    pytest.param('pcie_cycle', [
        '24:15: error[HW101 pcie-tree]: PCIe cycle sw0 -> sw1 -> sw0 reaches no CPU socket; cut off below it: gpu0, gpu1, nic0, nic1'
        "\n  hint: point one of these 'upstream' entries at a socket or a root port",
    ], id='HW101-pcie_cycle'),
    pytest.param('root_port_under_switch', [
        '30:15: error[HW101 pcie-tree]: rp1 is a root port, but its upstream sw0 is a switch: a root port belongs to a CPU socket'
        "\n  hint: set rp1's upstream to a socket, or make it 'kind: switch'",
    ], id='HW101-root_port_under_switch'),
    pytest.param('bus_id_duplicate', [
        '47:32: error[HW102 bus-id-unique]: bus id 0000:14:00.0 of gpu1 is already used by gpu0 (line 43)'
        "\n  hint: copy the bus ids from 'lspci -D' on the machine",
    ], id='HW102-bus_id_duplicate'),
    pytest.param('switch_oversubscribed', [
        '26:11: warning[HW103 pcie-oversubscription]: sw0: 63 GB/s of links below it (gpu0, nic0) share its Gen4 x4 uplink (7.88 GB/s): 8:1, above its max_oversubscription of 4'
        '\n  hint: widen the uplink, move devices to another bridge, or raise max_oversubscription if the traffic pattern allows it',
    ], id='HW103-switch_oversubscribed'),
    pytest.param('link_newer_than_bridge', [
        '26:11: error[HW104 pcie-link-exceeds-bridge]: sw0: Gen4 x16 link below rp0, a Gen3 root port (uplink Gen3 x16): a Gen3 root port has no Gen4 ports'
        "\n  hint: correct the generation sw0 or rp0 trains at ('lspci -vv', LnkSta), or rp0's own generation ('gen:' or a 'part:'); a link the OS shows differently"
        " (a VM's virtual bridge) is written as 'link', the trained one as 'link.physical'",
    ], id='HW104-link_newer_than_bridge'),
    pytest.param('nic_link_above_part', [
        '71:55: error[HW105 device-link-capability]: fe0: Gen4 x16 link, but its part ethernet-100g supports at most Gen3 x16'
        '\n  hint: write the link the device trains at (at most gen: 3, width: 16), or use the right part',
    ], id='HW105-nic_link_above_part'),
    pytest.param('backend_nic_without_gpu', [
        '66:5: error[HW201 backend-nic-per-gpu]: nic2 is a backend NIC but names no GPU, and backend.nic_per_gpu is declared'
        "\n  hint: add 'gpu:' with the GPU this NIC serves",
    ], id='HW201-backend_nic_without_gpu'),
    pytest.param('gpu_without_backend_nic', [
        '44:5: error[HW201 backend-nic-per-gpu]: gpu1 has no backend NIC, but backend.nic_per_gpu is declared'
        "\n  hint: add a backend NIC with 'gpu: gpu1', or correct another NIC's 'gpu:'",
    ], id='HW201-gpu_without_backend_nic'),
    pytest.param('backend_nic_shared_despite_nic_per_gpu', [
        '54:11: error[HW201 backend-nic-per-gpu]: nic0 serves 2 GPUs (gpu0, gpu1), but backend.nic_per_gpu declares dedicated NICs per GPU'
        '\n  hint: give each GPU its own NICs, or do not declare backend.nic_per_gpu',
    ], id='HW201-backend_nic_shared_despite_nic_per_gpu'),
    pytest.param('backend_nic_serving_gpu_on_other_switch', [
        '54:18: error[HW202 backend-nic-locality]: gpu1 (sw1, NUMA 0) is served by nic0 (sw0, NUMA 0): they share no PCIe switch '
        'or root port, so their traffic goes through the CPU (nic0 also serves gpu0)'
        "\n  hint: serve gpu1 from a NIC under sw1, and leave it out of nic0's 'gpus'",
    ], id='HW202-backend_nic_serving_gpu_on_other_switch'),
    pytest.param('backend_nic_on_socket', [
        '57:22: error[HW202 backend-nic-locality]: gpu0 (sw0, NUMA 0) is served by nic0 (cpu0, NUMA 0): they share no PCIe switch or root port, so their traffic goes through the CPU'
        '\n  hint: move nic0 under sw0',
    ], id='HW202-backend_nic_on_socket'),
    pytest.param('backend_nic_on_other_switch', [
        '57:22: error[HW202 backend-nic-locality]: gpu0 (sw0, NUMA 0) is served by nic0 (sw1, NUMA 1): they share no PCIe switch or root port, so their traffic goes through the CPU'
        '\n  hint: move nic0 under sw0, or pair it with gpu1',
        '57:22: error[HW203 backend-nic-numa]: gpu0 (sw0, NUMA 0) is served by nic0 (sw1, NUMA 1): their traffic crosses the socket interconnect'
        '\n  hint: move nic0 under sw0, or pair it with gpu1',
    ], id='HW202+HW203-backend_nic_on_other_switch'),
    pytest.param('apu_hbm_shared_twice', [
        "7:71: error[HW106 shared-memory]: apu1: memory is shared with gpu0, whose HBM is already apu0's memory"
        "\n  hint: an APU's HBM is the memory of one NUMA node: name the GPU of this socket's own package",
    ], id='HW106-apu_hbm_shared_twice'),
    pytest.param('apu_with_own_ddr', [
        "6:57: error[HW107 apu-memory]: gpu0 is an APU (AMD Instinct MI300A): its HBM is the memory of its CPU cores, "
        "but no socket says so; apu0 gives memory of its own (256 GB), a second pool"
        "\n  hint: write 'memory: {shared_with: gpu0}' on the socket of its package",
    ], id='HW107-apu_with_own_ddr'),
    pytest.param('c2c_gpu_nic_on_other_grace', [
        "32:22: error[HW202 backend-nic-locality]: gpu0 (grace0, NUMA 0) is served by nic0 (grace1, NUMA 1): they share "
        "no PCIe switch, and nic0 is not on grace0, where gpu0's NVLink-C2C goes, so their traffic crosses between the CPUs"
        "\n  hint: move nic0 onto grace0 (the socket of gpu0's NVLink-C2C), or pair it with gpu1",
        "32:22: error[HW203 backend-nic-numa]: gpu0 (grace0, NUMA 0) is served by nic0 (grace1, NUMA 1): their traffic "
        "crosses the socket interconnect\n  hint: move nic0 onto grace0 (the socket of gpu0's NVLink-C2C), or pair it with gpu1",
        "39:22: error[HW202 backend-nic-locality]: gpu1 (grace1, NUMA 1) is served by nic1 (grace0, NUMA 0): they share "
        "no PCIe switch, and nic1 is not on grace1, where gpu1's NVLink-C2C goes, so their traffic crosses between the CPUs"
        "\n  hint: move nic1 onto grace1 (the socket of gpu1's NVLink-C2C), or pair it with gpu0",
        "39:22: error[HW203 backend-nic-numa]: gpu1 (grace1, NUMA 1) is served by nic1 (grace0, NUMA 0): their traffic "
        "crosses the socket interconnect\n  hint: move nic1 onto grace1 (the socket of gpu1's NVLink-C2C), or pair it with gpu0",
    ], id='HW202+HW203-c2c_gpu_nic_on_other_grace'),
    pytest.param('backend_nic_not_rdma', [
        '59:11: error[HW204 backend-nic-rdma]: nic1: backend NIC part ethernet-100g (100GbE adapter) cannot do RDMA'
        '\n  hint: use an RDMA-capable part for backend NICs',
        '59:11: error[HW204 backend-nic-rdma]: nic1: backend.gpudirect is declared, but ethernet-100g does not support GPUDirect RDMA'
        '\n  hint: use a GPUDirect-capable part, or do not declare backend.gpudirect',
        '61:16: error[HW204 backend-nic-rdma]: nic1: transport rocev2 is not supported by ethernet-100g (supports tcp)'
        '\n  hint: use a transport the part supports, or another part',
    ], id='HW204-backend_nic_not_rdma'),
    pytest.param('backend_transport_mismatch', [
        '61:16: error[HW204 backend-nic-rdma]: nic1: transport infiniband, but backend.transport is rocev2'
        '\n  hint: backend NICs carry the backend transport',
    ], id='HW204-backend_transport_mismatch'),
    pytest.param('gpudirect_port_disagrees', [
        "61:27: warning[HW207 gpudirect-agrees]: nic1 (mlx5_1) states gdr 0, but backend.gpudirect gives gpu1 gdr 1: NCCL "
        "uses GPUDirect RDMA only where both say 1, so this port's GPU traffic goes through host memory"
        '\n  hint: where the machine should use GPUDirect RDMA, load nvidia-peermem (or use DMA-BUF) and import again; '
        'else leave both as the machine reports them',
    ], id='HW207-gpudirect_port_disagrees'),
    pytest.param('ingestion_nic_on_gpu_switch', [
        "71:22: error[HW205 ingestion-nic-placement]: fe0 (ingestion) sits below sw0, which also holds gpu0: host traffic shares the GPUs' uplink"
        '\n  hint: attach it to a socket or a root port',
    ], id='HW205-ingestion_nic_on_gpu_switch'),
    pytest.param('nic_names_duplicate', [
        "63:13: error[HW206 nic-names]: nic1: RDMA device mlx5_0 port 1 is already nic0's (line 55)"
        '\n  hint: each NIC port has its own device name or port number',
        "64:16: error[HW206 nic-names]: nic1: interface eth1 is already nic0's (line 56)"
        '\n  hint: each NIC port has its own interface name',
    ], id='HW206-nic_names_duplicate'),
    pytest.param('nic_name_not_its_bus', [
        "65:16: error[HW208 nic-name-bus]: nic1: interface enp56s0 names bus 56, but its bus id 0000:56:00.0 is bus 86 "
        "(Linux writes them in decimal: enp86s0...)"
        "\n  hint: copy the name from 'ip link' or 'ibv_devices' on the node, and the bus id from 'lspci -D'",
    ], id='HW208-nic_name_not_its_bus'),
    pytest.param('nic_names_missing', [
        "51:5: error[HW206 nic-names]: nic0: transport rocev2 needs the RDMA device name ('device:'), as nic1 has one"
        "\n  hint: e.g. 'device: mlx5_0', as 'ibv_devices' shows it; or name none and let NCCL pick them (optionally by "
        "'backend.ib_hca')",
        "66:5: warning[HW603 unknown-facts]: fe0: unknown network interface name"
        "\n  hint: give 'interface:' as 'ip link' shows it; until then NCCL_SOCKET_IFNAME is left out and NCCL picks "
        "its interfaces itself",
    ], id='HW206+HW603-nic_names_missing'),
    pytest.param('tcpxo_nic_without_interface', [
        "50:5: error[HW206 nic-names]: nic0: transport tcpxo needs the network interface name ('interface:'): "
        "its plugin (FasTrak) takes the interfaces by name\n  hint: e.g. 'interface: eth1', as 'ip link' shows it",
        "50:5: warning[HW603 unknown-facts]: nic0: unknown NIC part\n  hint: name the part (lspci -nn gives its PCI id)",
        "57:5: warning[HW603 unknown-facts]: nic1: unknown NIC part\n  hint: name the part (lspci -nn gives its PCI id)",
    ], id='HW206-tcpxo_nic_without_interface'),
    pytest.param('nvlink_gpu_without_slot', [
        '44:5: error[HW301 nvlink-embeds-in-baseboard]: gpu0-gpu1: 12 NVLink links asked, but gpu1 has no baseboard slot'
        "\n  hint: give gpu1 the 'slot:' it sits in",
    ], id='HW301-nvlink_gpu_without_slot'),
    pytest.param('nvlink_not_on_baseboard', [
        '48:20: error[HW301 nvlink-embeds-in-baseboard]: gpu0-gpu1 (slots 0 and 1): 12 NVLink links asked, but the baseboard wires 1 port(s) between these slots, carrying 6 link(s) at 6 per port'
        '\n  hint: leave the pair out (nvlink.exclude), lower its link count, or correct the baseboard wiring',
    ], id='HW301-nvlink_not_on_baseboard'),
    pytest.param('nvlink_without_baseboard', [
        '47:20: error[HW301 nvlink-embeds-in-baseboard]: nvlink: 1 GPU pair(s) are linked (gpu0-gpu1: 12 links), but there is no baseboard to carry them'
        "\n  hint: describe the accelerator baseboard and its wiring under 'baseboard:'",
    ], id='HW301-nvlink_without_baseboard'),
    pytest.param('nvlink_over_budget', [
        '48:20: error[HW302 nvlink-link-budget]: gpu0 uses 14 NVLink links (gpu1: 14), but its part a100-oam-40gb has 12'
        '\n  hint: lower links_per_pair or the per-pair counts, or leave pairs out',
        '48:20: error[HW302 nvlink-link-budget]: gpu1 uses 14 NVLink links (gpu0: 14), but its part a100-oam-40gb has 12'
        '\n  hint: lower links_per_pair or the per-pair counts, or leave pairs out',
    ], id='HW302-nvlink_over_budget'),
    pytest.param('nvlink_cpu_links_over_budget', [
        '48:13: error[HW302 nvlink-link-budget]: gpu1 uses 14 NVLink links (gpu0: 10, cpu1 (CPU): 4), but its part '
        'a100-oam-40gb has 12\n  hint: lower links_per_pair or the per-pair counts, or leave pairs out',
    ], id='HW302-nvlink_cpu_links_over_budget'),
    pytest.param('nvlink_pair_twice', [
        '51:7: error[HW303 nvlink-symmetric]: gpu0-gpu1 is listed twice, with 12 and 6 links'
        "\n  hint: keep one entry with the pair's link count",
    ], id='HW303-nvlink_pair_twice'),
    pytest.param('nvlink_self_link', [
        '51:7: error[HW303 nvlink-symmetric]: gpu1 is linked to itself (2 links)'
        '\n  hint: name the other GPU of the pair',
    ], id='HW303-nvlink_self_link'),
    pytest.param('nvlink_islands', [
        '48:20: error[HW304 nvlink-connected]: the NVLink fabric splits the 2 GPUs into 2 islands: {gpu0} and {gpu1}'
        '\n  hint: link the islands, or leave fewer pairs out of the pattern',
    ], id='HW304-nvlink_islands'),
    pytest.param('fabric_asymmetric', [
        '49:20: error[HW305 fabric-uniform]: gpu1 has 250 GB/s of NVLink bandwidth, gpu0 has 300 GB/s; the fabric is declared symmetric'
        '\n  hint: give every GPU the same links, or set nvlink.symmetric: false',
    ], id='HW305-fabric_asymmetric'),
    pytest.param('baseboard_too_many_ports', [
        '38:70: error[HW306 baseboard-ports]: baseboard slot 0 has 2 wired ports (slot 1: 2), but ports_per_slot is 1'
        '\n  hint: correct the wiring or ports_per_slot',
        '38:70: error[HW306 baseboard-ports]: baseboard slot 1 has 2 wired ports (slot 0: 2), but ports_per_slot is 1'
        '\n  hint: correct the wiring or ports_per_slot',
    ], id='HW306-baseboard_too_many_ports'),
    pytest.param('baseboard_wiring_outside_board', [
        '38:70: error[HW306 baseboard-ports]: baseboard wiring [1, 2] (1 port(s)) names a slot outside 0-1'
        '\n  hint: the board has 2 slots, numbered from 0',
    ], id='HW306-baseboard_wiring_outside_board'),
    pytest.param('nvswitch_generation_not_the_gpus', [
        "38:118: warning[HW308 nvswitch-generation]: baseboard: nvswitch_generation is 3, but the GPUs' nvlink3 attaches "
        "to generation-2 NVSwitch chips\n  hint: write nvswitch_generation: 2, or leave it out to take the GPUs'",
    ], id='HW308-nvswitch_generation_not_the_gpus'),
    pytest.param('gpu_slot_outside_board', [
        "46:11: error[HW307 gpu-slot]: gpu1: slot 2 is outside the baseboard's 2 slots (0-1)"
        '\n  hint: slots are numbered from 0',
    ], id='HW307-gpu_slot_outside_board'),
    pytest.param('gpu_slot_taken', [
        '46:11: error[HW307 gpu-slot]: gpu1: slot 0 is already taken by gpu0'
        '\n  hint: give each GPU its own slot',
    ], id='HW307-gpu_slot_taken'),
    pytest.param('nic_link_too_slow', [
        '57:54: error[HW401 nic-path-bandwidth]: nic0: 200 Gb/s NIC (25 GB/s) sits behind a Gen3 x8 link (7.88 GB/s)'
        '\n  hint: give the NIC (and the bridges above it) a link at least as fast as the NIC',
    ], id='HW401-nic_link_too_slow'),
    pytest.param('nic_behind_slow_uplink', [
        "36:11: error[HW401 nic-path-bandwidth]: nic1: 200 Gb/s NIC (25 GB/s) sits behind sw1's Gen4 x8 uplink (15.8 GB/s)"
        '\n  hint: give the NIC (and the bridges above it) a link at least as fast as the NIC',
        '36:11: warning[HW402 switch-uplink-traffic]: sw1: nic1 sends 200 Gb/s (25 GB/s) across its Gen4 x8 uplink (15.8 GB/s)'
        '\n  hint: widen the uplink, spread the NICs over more bridges, or place each backend NIC beside its GPU with GPUDirect RDMA',
    ], id='HW401+HW402-nic_behind_slow_uplink'),
    pytest.param('switch_uplink_shared', [
        '22:11: warning[HW402 switch-uplink-traffic]: rp0: nic0, nic1 send 400 Gb/s (50 GB/s) across its Gen4 x16 uplink (31.5 GB/s)'
        '\n  hint: widen the uplink, spread the NICs over more bridges, or place each backend NIC beside its GPU with GPUDirect RDMA',
        '26:11: warning[HW402 switch-uplink-traffic]: sw0: nic0, nic1 send 400 Gb/s (50 GB/s) across its Gen4 x16 uplink (31.5 GB/s)'
        '\n  hint: widen the uplink, spread the NICs over more bridges, or place each backend NIC beside its GPU with GPUDirect RDMA',
    ], id='HW402-switch_uplink_shared'),
    pytest.param('cpus_overlap', [
        '16:11: error[HW501 numa-unique]: cpu1: CPUs 20-27 are also listed for cpu0'
        "\n  hint: copy each node's CPU list from 'lscpu' or 'numactl -H'",
    ], id='HW501-cpus_overlap'),
    pytest.param('numa_duplicate', [
        "14:16: error[HW501 numa-unique]: cpu1: NUMA node 0 is already cpu0's"
        "\n  hint: number NUMA nodes as 'numactl -H' shows them",
    ], id='HW501-numa_duplicate'),
    pytest.param('memory_mismatch', [
        '6:41: error[HW502 memory-total]: declares.memory is 1 TiB, but the sockets have 512 GiB (256 GiB + 256 GiB)'
        '\n  hint: correct the per-socket memory or the declared total',
    ], id='HW502-memory_mismatch'),
    pytest.param('hbm_override', [
        '47:32: warning[HW503 hbm-matches-part]: gpu1 overrides the HBM capacity of its part a100-oam-40gb with 80 GiB'
        '\n  hint: name (or add) the part with this memory instead of overriding it',
    ], id='HW503-hbm_override'),
    pytest.param('cores_fewer_than_ranks', [
        "10:11: warning[HW504 cores-per-rank]: cpu0 (NUMA 0) has 0 physical core(s) in its CPU list (1 CPUs, 2 per core) "
        "for 1 GPUs (gpu0)\n  hint: check the CPU list ('numactl -H') and the part's threads_per_core",
    ], id='HW504-cores_fewer_than_ranks'),
    pytest.param('c2c_socket_not_pcie_socket', [
        "20:19: error[HW505 c2c-socket-numa]: gpu0: its NVLink-C2C goes to grace1, but its PCIe presence reaches grace0 (NUMA 0)"
        "\n  hint: name the same socket in gpu0's 'c2c' and 'pcie'",
        "32:22: error[HW202 backend-nic-locality]: gpu0 (grace0, NUMA 0) is served by nic0 (grace0, NUMA 0): they share "
        "no PCIe switch, and nic0 is not on grace1, where gpu0's NVLink-C2C goes, so their traffic crosses between the CPUs"
        "\n  hint: move nic0 onto grace1 (the socket of gpu0's NVLink-C2C)",
    ], id='HW505+HW202-c2c_socket_not_pcie_socket'),
    pytest.param('nvlink_cpu_link_to_other_socket', [
        "51:27: error[HW506 nvlink-cpu-socket]: gpu0: its NVLinks to a CPU go to cpu1, but its PCIe presence reaches cpu0 "
        "(NUMA 0); NCCL joins such links to the GPU's own CPU\n  hint: name cpu0, the socket gpu0 hangs off",
    ], id='HW506-nvlink_cpu_link_to_other_socket'),
    pytest.param('declared_counts_wrong', [
        '6:21: error[HW601 declared-counts]: declares.sockets is 4, but 2 socket(s) are described (cpu0, cpu1)'
        '\n  hint: correct the sockets list or the declared count',
        '6:30: error[HW601 declared-counts]: declares.gpus is 8, but 2 GPU(s) are described (gpu0, gpu1)'
        '\n  hint: correct the gpus list or the declared count',
    ], id='HW601-declared_counts_wrong'),
    pytest.param('unknown_facts', [
        "1:1: warning[HW603 unknown-facts]: waiting for the unknown facts of devices: nccl-topo.xml (PCI bus id of nic1); the figures "
        "of roofline.json, torchrec-topology.json, calculon-system.json, 'hwspec estimate' and 'compare' (GPU part of gpu1)"
        "\n  hint: fill in the facts the findings above name, then generate again",
        "43:5: warning[HW603 unknown-facts]: gpu1: unknown GPU part 0x10de:0x20b0 (so its HBM, compute and fabric figures)"
        "\n  hint: name the part, or import nvidia-smi -q -x with the other inputs",
        "58:5: warning[HW603 unknown-facts]: nic1: unknown PCI bus id"
        "\n  hint: copy the bus id from 'lspci -D' (or nvidia-smi -q's Bus Id, lower case)",
    ], id='HW603-unknown_facts'),
    pytest.param('amd_gpus_on_nvswitch', [
        "48:20: error[HW911 rccl-topo-writable]: an AMD GPU fabric is point-to-point xGMI: RCCL's file has no switch "
        "to join the GPUs to; list the xGMI pairs (fully-connected or explicit)"
        "\n  hint: give each AMD GPU its part's gcn, hip_arch and compute_units (or an override: with them), and xGMI pairs",
    ], id='HW911-amd_gpus_on_nvswitch'),
    pytest.param('amd_backend_on_tcpx', [
        '53:16: error[HW204 backend-nic-rdma]: nic0: transport tcpx is not supported by connectx-7-400g '
        '(supports infiniband, rocev2, tcp)\n  hint: use a transport the part supports, or another part',
        '61:16: error[HW204 backend-nic-rdma]: nic1: transport tcpx is not supported by connectx-7-400g '
        '(supports infiniband, rocev2, tcp)\n  hint: use a transport the part supports, or another part',
        "72:22: error[HW210 rccl-transport]: backend.transport is tcpx, which RCCL (the library of this node's AMD GPUs) "
        "cannot use\n  hint: use one RCCL supports: infiniband, rocev2, tcp, slingshot",
    ], id='HW204+HW210-amd_backend_on_tcpx'),
    pytest.param('nccl_variable_unknown', [
        "74:30: warning[HW701 nccl-variable-known]: environment: NCCL does not read NCCL_IB_QPS_PER_CONECTION"
        "\n  hint: did you mean NCCL_IB_QPS_PER_CONNECTION? a variable of a newer NCCL or a plugin is fine: change this "
        "rule under 'rules:' with the reason",
    ], id='HW701-nccl_variable_unknown'),
    pytest.param('environment_refused', [
        "78:15: error[HW702 environment-policy]: environment: LD_PRELOAD loads code or chooses which programs and "
        "libraries run: a platform file may not set it"
        "\n  hint: what a platform file sets runs as root on every node; set it in the job's own environment, or "
        "have the operator accept it for this run with --allow-env LD_PRELOAD",
        "79:20: error[HW702 environment-policy]: environment: NCCL_DEBUG_FILE names a file or directory that NCCL or "
        "the launcher reads or writes: a platform file may not set it"
        "\n  hint: what a platform file sets runs as root on every node; set it in the job's own environment, or "
        "have the operator accept it for this run with --allow-env NCCL_DEBUG_FILE",
        "80:17: error[HW702 environment-policy]: environment: NCCL_COMM_ID changes where the job connects or what it "
        "runs on (hosts, addresses, rendezvous, ranks, devices): a platform file may not set it"
        "\n  hint: what a platform file sets runs as root on every node; set it in the job's own environment, or "
        "have the operator accept it for this run with --allow-env NCCL_COMM_ID",
        "81:12: error[HW702 environment-policy]: environment: MY_FLAG is not a setting hwspec has reviewed as a "
        "tunable ('hwspec explain HW702' lists the reviewed ones): a platform file may not set it"
        "\n  hint: what a platform file sets runs as root on every node; set it in the job's own environment, or "
        "have the operator accept it for this run with --allow-env MY_FLAG",
    ], id='HW702-environment_refused'),
]


@pytest.mark.parametrize("fixture, expected", FAULTS)
def test_fault_findings(fixture: str, expected: list[str], rules: list[Rule]) -> None:
    path = FIXTURES / f"{fixture}.yaml"
    assert formatted(path, rules) == [f"{path}:{line}" for line in expected]


@pytest.mark.parametrize("fixture", CLEAN)
def test_clean_fixture(fixture: str, rules: list[Rule]) -> None:
    assert formatted(FIXTURES / f"{fixture}.yaml", rules) == []


@pytest.mark.parametrize("name", ["zion", "zionex", "hgx-h100", "mi300x-oam", "gb200-tray"])
def test_shipped_platform_is_clean(name: str, rules: list[Rule]) -> None:
    assert formatted(Path("platforms") / f"{name}.yaml", rules) == []


def test_every_node_rule_has_a_fault_fixture(node_rules: list[Rule]) -> None:
    covered = {line.split("[", 1)[1].split(" ", 1)[0] for param in FAULTS for line in param.values[1]}
    assert {r.id for r in node_rules} - covered == set()


def test_every_fixture_is_used() -> None:
    used = {param.values[0] for param in FAULTS} | set(CLEAN)
    assert {p.stem for p in (ROOT / FIXTURES).glob("*.yaml")} == used


def test_node_rules_document_invariant_and_rationale(node_rules: list[Rule]) -> None:
    for r in node_rules:
        first, _, rest = r.doc.partition("\n\n")
        assert "\n" not in first and first.endswith("."), f"{r.id}: the first line states the invariant"
        assert len(rest.split()) >= 15, f"{r.id}: the docstring says why the invariant matters"


def test_every_built_in_rule_says_what_to_do_about_its_findings(rules: list[Rule]) -> None:
    assert [r.id for r in rules if not (r.hint and r.hint.strip())] == []


def test_a_finding_without_a_hint_of_its_own_gets_its_rules(tmp_path: Path) -> None:
    site = tmp_path / "site_rules"
    site.mkdir()
    (site / "eight.py").write_text(
        "from hwspec.rules import rule\n\n\n"
        "@rule('SITE001', 'eight-gpus', hint='order full 8-GPU nodes')\n"
        "def eight(ctx):\n"
        "    '''Every node has eight GPUs.'''\n"
        "    yield ctx.finding('not eight')\n"
        "    yield ctx.finding('still not eight', hint='its own hint')\n")
    (found,) = [r for r in load_rules([site])]
    checked = pipeline.check(FIXTURES / "base_2gpu.yaml", [found])
    assert [(d.message, d.hint) for d in checked.diagnostics] == [("not eight", "order full 8-GPU nodes"),
                                                                  ("still not eight", "its own hint")]
