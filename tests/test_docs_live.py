"""docs/live.md's "From the tools' own output" runs as written: the capture block on the node
(lstopo, nvidia-smi and nccl-tests replaced by stand-ins that check their arguments and print
the ZionEX samples) and the import, validate and diff block on what it wrote."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.test_docs import hwspec_on_path, run_shown

ROOT = Path(__file__).resolve().parent.parent
LIVE = ROOT / "tests" / "data" / "live"
SECTION = (ROOT / "docs" / "live.md").read_text().split("\n## From the tools' own output\n", 1)[1].split("\n## ", 1)[0]

STAND_INS = {
    "lstopo": f'[ "$*" = "--of xml" ] || exit 64\ncat {LIVE / "zionex.lstopo.xml"}\n',
    "nvidia-smi": (f'case "$*" in\n  "topo -m") cat {LIVE / "zionex.topo-m.txt"} ;;\n'
                   f'  "-q -x") cat {LIVE / "zionex.smi.xml"} ;;\n  *) exit 64 ;;\nesac\n'),
    "all_reduce_perf": (f'[ "$*" = "-b 8 -e 8 -g 8" ] && [ "$NCCL_TOPO_DUMP_FILE_RANK" = 0 ] || exit 64\n'
                        f'cp {LIVE / "zionex.nccl.xml"} "$NCCL_TOPO_DUMP_FILE"\n'),
}
"""What each tool the capture block runs does here: exit 64 on any other arguments."""


@pytest.mark.slow  # runs the page's blocks in a shell, each running hwspec
def test_the_tool_capture_and_import_blocks_run_with_stand_in_tools(tmp_path):
    capture, anywhere = re.findall(r"```sh\n(.*?)```", SECTION.split("\n### ", 1)[0], re.DOTALL)
    env = hwspec_on_path(tmp_path)
    for tool, body in STAND_INS.items():
        script = Path(env["PATH"].split(":", 1)[0]) / tool
        script.write_text("#!/bin/sh\n" + body)
        script.chmod(0o755)
    node = tmp_path / "node"
    node.mkdir()
    for line in capture.strip().splitlines():
        assert run_shown(line, node, env).returncode == 0, line
    assert sorted(p.name for p in node.iterdir()) == ["node.lstopo.xml", "node.nccl.xml", "node.smi.xml", "node.topo-m.txt"]
    results = [run_shown(line, node, env) for line in anywhere.strip().splitlines()]
    assert [r.returncode for r in results] == [0, 0, 0], [r.stderr[-1000:] for r in results]
    assert "hwspec: draft written to platforms/mynode.yaml from 4 NUMA node(s), 8 GPU(s), 12 NIC(s)" in results[0].stderr
    assert results[2].stderr == "hwspec: platforms/mynode.yaml against node.nccl.xml: the machine matches its spec\n"
