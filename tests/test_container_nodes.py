"""Docker and Kubernetes nodes (issue 44, item 1): NCCL 2.22+ repeats every NIC without a PCI
device (calico veths, tunl0, kube-ipvs0, bridges) under each CPU with a GPU. The draft has one NIC
each, keeps the interfaces NCCL's socket transport takes by default and leaves out the others,
says so, and validates, generates and diffs clean. Fixtures in tests/data/live (README there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwspec.cli.commands import main
from hwspec.formats.nccl_sockets import MAX_IFS, default_socket_interfaces
from hwspec.live.merge import read_inputs

LIVE = Path(__file__).resolve().parent / "data" / "live"
REPEATED = "container-interfaces-on-every-cpu.nccl.xml"
DOCKER = "docker-bridge-listed.nccl.xml"
INTERFACES = ["eth0", "kube-ipvs0", "tunl0", *(f"cali{h}" for h in (
    "0a1b2c3d4e5", "1f2e3d4c5b6", "2a3b4c5d6e7", "3c4d5e6f708", "4d5e6f70819", "5e6f708192a", "6f708192a3b",
    "708192a3b4c", "8192a3b4c5d", "92a3b4c5d6e", "a3b4c5d6e7f", "b4c5d6e7f80"))]


@pytest.fixture(autouse=True)
def _in_live(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(LIVE)  # inputs shown by their names


def _draft(tmp_path: Path, name: str, capsys) -> tuple[str, str]:
    """The draft of `name` and import's stderr, after checking it validates, diffs and generates clean."""
    draft = tmp_path / "node.yaml"
    assert main(["import", name, "-o", str(draft)]) == 0
    err = capsys.readouterr().err
    assert main(["validate", str(draft)]) == 0
    assert "error[" not in capsys.readouterr().out
    assert main(["diff", str(draft), name]) == 0
    assert "the machine matches its spec" in capsys.readouterr().err
    assert main(["generate", str(draft), "-o", str(tmp_path / "out"), "--no-svg"]) == 0
    capsys.readouterr()
    return draft.read_text(), err


def test_nics_repeated_under_every_cpu_are_read_once_each_on_the_first():
    machine = read_inputs([LIVE / REPEATED])
    busless = [nic for nic in machine.nics.values() if nic.bus is None]
    assert [(nic.parent, [p.name for p in nic.ports]) for nic in busless] == [("numa:0", INTERFACES)]


def test_a_kubernetes_node_drafts_one_nic_per_interface_and_says_why(tmp_path, capsys):
    text, err = _draft(tmp_path, REPEATED, capsys)
    assert (f"{REPEATED}:32:5: warning[I102 input-ignored]: <nic> repeats 15 NIC(s) without a PCI device listed under "
            f"an earlier <cpu> ({', '.join(INTERFACES)}): NCCL 2.22+ writes them under every CPU with a GPU; read once\n") in err
    assert err.count("<nic> repeats 15 NIC(s)") == 3
    note = (f"# note: {REPEATED}:8: 15 NIC(s) without a PCI device (eth0, kube-ipvs0, tunl0, cali0a1b2c3d4e5 and 11 more) "
            "are repeated under 4 CPUs (again at lines 32, 56, 80): NCCL 2.22+ fuses its ranks' topologies and each rank "
            "attaches such a NIC to its own first CPU; drafted once each, where first listed\n")
    assert note in text
    assert [line.split(": ")[1] for line in text.splitlines() if line.startswith("  interface: ")] == INTERFACES
    assert text.count("pcie: {upstream: cpu0, bus: unknown}") == 15
    conf = (tmp_path / "out" / "node" / "nccl.conf").read_text()
    ifname = next(line for line in conf.splitlines() if line.startswith("NCCL_SOCKET_IFNAME="))
    assert sorted(ifname.removeprefix("NCCL_SOCKET_IFNAME==").split(",")) == sorted(INTERFACES)


def test_an_interface_nccl_takes_only_when_named_is_left_out_with_a_note(tmp_path, capsys):
    text, _ = _draft(tmp_path, DOCKER, capsys)
    assert (f"# note: {DOCKER}:6: docker0 left out: no PCI device, and NCCL's socket transport does not take such an "
            "interface unless NCCL_SOCKET_IFNAME names it (it takes ib* first, else every interface but docker*, lo* "
            "and virbr*)\n") in text
    assert "  interface: eth0\n" in text and "docker0\n" not in text.split("hwspec: 1")[1]


@pytest.mark.parametrize(("names", "taken"), [
    (["eth0", "docker0", "lo", "virbr0", "cali1"], ["eth0", "cali1"]),
    (["ib0", "eth0"], ["ib0"]),
    (["docker0", "lo", "virbr0"], ["docker0"]),
    (["lo", "virbr0"], ["lo"]),
    (["virbr0"], ["virbr0"]),
    ([], []),
])
def test_nccls_default_interface_selection(names, taken):
    assert default_socket_interfaces(names) == taken


def test_nccls_default_interface_selection_takes_at_most_max_ifs():
    names = [f"veth{i}" for i in range(MAX_IFS + 4)]
    assert default_socket_interfaces(names) == names[:MAX_IFS]
