"""Fuzzing the input path: whatever a platform file holds, `hwspec validate` ends with
diagnostics and exit status 1 or 2, never a traceback, a hang or unbounded memory.

Inputs: arbitrary bytes, arbitrary YAML (random data dumped to YAML) and YAML-ish text, deep
nesting, alias expansions, a wrong-typed value at any position of a valid node or cluster spec,
non-UTF-8 bytes in a valid file, very long strings, and `${...}` expressions in repeat blocks.
Examples run in-process through `hwspec.cli.commands.main` (an exception is a traceback) and
`hwspec.pipeline.check`, each under a hard time limit; the memory-hungry families also run in a
subprocess under an address-space limit. Every crash found is kept in tests/fuzz_corpus/ (the
minimal input, named for the bug) and replayed by the corpus tests at the end.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from hypothesis import given, note, settings
from hypothesis import strategies as st

from hwspec import pipeline
from hwspec.cli.commands import main
from hwspec.diagnostics import Diagnostic, Severity, report
from hwspec.testing import (
    cluster_specs,
    dump_yaml,
    hostile_cluster_specs,
    hostile_names,
    hostile_node_specs,
    hostile_texts,
    node_specs,
)
from tests.cli import hang_guard

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(__file__).resolve().parent / "fuzz_corpus"
EXAMPLES = settings.default.max_examples
TIME_LIMIT = 20  # seconds for one input, in-process: far above any real file's time
MEMORY_LIMIT = 1536 * 2**20  # bytes of address space for a subprocess validate
FUZZ = settings(max_examples=EXAMPLES * 2, deadline=timedelta(seconds=10))


# ------------------------------------------------------------------ running validate


def validate(files: dict[str, bytes], target: str) -> tuple[int, str, str]:
    """Write `files` into a fresh directory, run `hwspec validate target` in-process, and check
    `pipeline.check` agrees. Returns (status, stdout, stderr); any exception propagates."""
    with tempfile.TemporaryDirectory(prefix="hwspec-fuzz-") as directory:
        for name, raw in files.items():
            (Path(directory) / name).write_bytes(raw)
        path = Path(directory) / target
        out, err = io.StringIO(), io.StringIO()
        with hang_guard(TIME_LIMIT, "validate"):
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                status = main(["validate", str(path)])
            checked = pipeline.check(path)
    assert (status == 0) == (not checked.failed()), (status, [d.format() for d in checked.diagnostics])
    return status, out.getvalue(), err.getvalue()


def assert_diagnosed(files: dict[str, bytes], target: str = "fuzz.yaml") -> None:
    """validate ends with at least one error diagnostic and exit status 1 or 2."""
    status, out, err = validate(files, target)
    assert status in (1, 2), f"exit {status}\n{out}{err}"
    assert "error[" in out, out + err
    assert "Traceback" not in out + err


def assert_ends_cleanly(files: dict[str, bytes], target: str = "fuzz.yaml") -> int:
    """validate ends with a verdict: 0 when pipeline.check finds nothing wrong, else 1 or 2."""
    status, out, err = validate(files, target)
    assert status in (0, 1, 2) and "Traceback" not in out + err, f"exit {status}\n{out}{err}"
    return status


# ------------------------------------------------------------------ bytes and YAML


@FUZZ
@given(st.binary(max_size=2000))
def test_arbitrary_bytes(raw):
    assert_diagnosed({"fuzz.yaml": raw})


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=30))
KEYS = st.one_of(st.text(max_size=12), st.sampled_from(["hwspec", "kind", "name", "sockets", "gpus", "nics", "pcie",
                                                        "nvlink", "baseboard", "backend", "declares", "nodes", "repeat",
                                                        "value", "source", "assumed", "<<", "id", "part", "upstream"]))
DATA = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(KEYS, inner, max_size=5),
                    max_leaves=40)


@FUZZ
@given(DATA, st.sampled_from([None, "node", "cluster"]), st.sampled_from([False, True, None]))
def test_arbitrary_yaml(data, kind, flow):
    """Random data as YAML; with `kind` set it reaches the spec models and their error paths."""
    if kind is not None and isinstance(data, dict):
        data = {"hwspec": 1, "kind": kind, **data}
    raw = yaml.safe_dump(data, default_flow_style=flow, allow_unicode=True).encode()
    note(raw.decode())
    assert_diagnosed({"fuzz.yaml": raw})


def tokens(*words: str) -> st.SearchStrategy[str]:
    """Text made of `words` (single characters or longer tokens)."""
    return st.lists(st.sampled_from(words), max_size=80).map("".join)


YAMLISH = tokens(*"abk01: -[]{},&*!|>'\"#%@`?<=\n\t\\.$", "\r\n", "${i}", "!!str ", "&a ", "*a", "<<: ", "---\n",
                 "\ufeff", "\x85", "\u2028")


@FUZZ
@given(YAMLISH)
def test_yaml_syntax_soup(text):
    assert_diagnosed({"fuzz.yaml": ("hwspec: 1\nkind: node\n" + text).encode()})


@settings(max_examples=max(5, EXAMPLES // 2), deadline=timedelta(seconds=10))
@given(depth=st.integers(1, 400), style=st.sampled_from(["flow-list", "flow-map", "block-list", "block-map", "alias"]))
def test_deep_nesting(depth, style):
    if style == "flow-list":
        body = "x: " + "[" * depth + "1" + "]" * depth + "\n"
    elif style == "flow-map":
        body = "x: " + "{a: " * depth + "1" + "}" * depth + "\n"
    elif style == "block-list":
        body = "x:\n" + "".join("  " * i + "-\n" for i in range(1, depth)) + "  " * depth + "- 1\n"
    elif style == "block-map":
        body = "x:\n" + "".join("  " * i + "a:\n" for i in range(1, depth)) + "  " * depth + "a: 1\n"
    else:  # each anchor nests the previous one: shallow text, deep data
        body = "a0: &a0 [1]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, depth)) + "x: *a0\n"
    assert_diagnosed({"fuzz.yaml": ("hwspec: 1\nkind: node\nname: n\n" + body).encode()})


def alias_bomb(width: int, depth: int) -> str:
    lines = ["hwspec: 1", "kind: node", "name: n", "l0: &l0 [" + ", ".join(["x"] * width) + "]"]
    for level in range(1, depth):
        lines.append(f"l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


@settings(max_examples=max(5, EXAMPLES // 2), deadline=timedelta(seconds=10))
@given(width=st.integers(2, 12), depth=st.integers(1, 12))
def test_alias_expansion(width, depth):
    """'Billion laughs' of every shape: refused (E105) or small enough, never expanded blindly."""
    assert_diagnosed({"fuzz.yaml": alias_bomb(width, depth).encode()})


# ------------------------------------------------------------------ valid specs, one value wrong


def paths(data, prefix=()):
    """Every path into `data`, the root first."""
    yield prefix
    if isinstance(data, dict):
        for key, value in data.items():
            yield from paths(value, prefix + (key,))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from paths(value, prefix + (index,))


def replaced(data, path, value):
    if not path:
        return value
    data = copy.deepcopy(data)
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return data


def at(data, path):
    for key in path:
        data = data[key]
    return data


WRONG_SCALAR = st.one_of(st.lists(SCALARS, min_size=1, max_size=3), st.dictionaries(st.text(max_size=6), SCALARS,
                                                                                     min_size=1, max_size=3))


def wrong_type(value) -> st.SearchStrategy:
    """A value of another type than `value` that no field accepting `value` also accepts:
    collections for scalars (non-empty: `[]` is a valid explicit NVLink topology), scalars or
    the other collection for collections (never None: optional sections accept it)."""
    if isinstance(value, dict):
        return st.one_of(st.integers(), st.text(max_size=12), st.booleans(), st.lists(SCALARS, min_size=1, max_size=3))
    if isinstance(value, list):
        return st.one_of(st.integers(), st.text(max_size=12), st.booleans(),
                         st.dictionaries(st.text(max_size=6), SCALARS, min_size=1, max_size=3))
    return WRONG_SCALAR


@FUZZ
@given(node_specs(max_gpus=4, max_sockets=2), st.data())
def test_wrong_type_anywhere_in_a_node_spec(spec, data):
    path = data.draw(st.sampled_from(list(paths(spec))), label="path")
    bad = replaced(spec, path, data.draw(wrong_type(at(spec, path)), label="wrong value"))
    raw = yaml.safe_dump(bad, sort_keys=False, allow_unicode=True).encode()
    note(raw.decode())
    assert_diagnosed({"fuzz.yaml": raw})


@settings(max_examples=EXAMPLES, deadline=timedelta(seconds=10))
@given(cluster_specs(max_gpus=2, max_sockets=2, max_nodes=8), st.data())
def test_wrong_type_anywhere_in_a_cluster_spec(files, data):
    path = data.draw(st.sampled_from(list(paths(files.cluster))), label="path")
    bad = replaced(files.cluster, path, data.draw(wrong_type(at(files.cluster, path)), label="wrong value"))
    raw = yaml.safe_dump(bad, sort_keys=False, allow_unicode=True).encode()
    note(raw.decode())
    assert_diagnosed({"cluster.yaml": raw, files.node_file: dump_yaml(files.node).encode()}, "cluster.yaml")


# ------------------------------------------------------------------ encodings and sizes


@FUZZ
@given(node_specs(max_gpus=2, max_sockets=2), st.data())
def test_non_utf8_bytes_in_a_valid_file(spec, data):
    raw = dump_yaml(spec).encode()
    bad = data.draw(st.sampled_from([b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf", b"\x80abc",
                                     b"\xf8\x88\x80\x80\x80"]), label="bad bytes")
    where = data.draw(st.integers(0, len(raw)), label="offset")
    encoding = data.draw(st.sampled_from([None, "utf-16", "latin-1", "utf-32"]), label="encoding")
    if encoding is None:
        raw = raw[:where] + bad + raw[where:]
    else:
        raw = (dump_yaml(spec) + "title: caf\u00e9 \u00b5s\n").encode(encoding)
    assert_diagnosed({"fuzz.yaml": raw})


@settings(max_examples=EXAMPLES, deadline=timedelta(seconds=10))
@given(node_specs(max_gpus=2, max_sockets=2), st.data())
def test_very_long_strings(spec, data):
    """A long string in place of any string value (free-text fields may take it: then the file
    is clean), or a file beyond the 4 MiB limit (E101)."""
    strings = [p for p in paths(spec) if isinstance(at(spec, p), str)]
    path = data.draw(st.sampled_from(strings), label="path")
    length = data.draw(st.sampled_from([70, 300, 10_000, 200_000, 5 * 2**20]), label="length")
    char = data.draw(st.sampled_from(["x", "\u00e9", "\U0001f600", " ", "9", "$"]), label="char")
    if length > 4 * 2**20:  # beyond the file limit; PyYAML's emitter would take seconds to write it
        raw = (dump_yaml(spec) + "title: " + char * length + "\n").encode()
    else:
        raw = yaml.safe_dump(replaced(spec, path, char * length), sort_keys=False, allow_unicode=True,
                             width=2**31).encode()
    status = assert_ends_cleanly({"fuzz.yaml": raw})
    if len(raw) > 4 * 2**20:
        assert status == 2


EXPRESSION = tokens(*"i01239+-*/%()x ", "//", "0x", "j", "1114112", "2**48").filter(bool)
FORMAT = tokens(*"0123456789<>^=+-#,_.xXbcdeEfFgGnos%", "99", "100")


@FUZZ
@given(EXPRESSION, FORMAT, st.sampled_from(["node", "cluster"]))
def test_expressions_and_formats(expr, fmt, where):
    """Arbitrary `${expr:fmt}` in a repeat block or a hostname pattern: a value or a diagnostic."""
    placeholder = "${" + expr + (":" + fmt if fmt else "") + "}"
    node = ("hwspec: 1\nkind: node\nname: n\nsockets:\n  - repeat: {i: 0..3}\n    id: \"cpu" + placeholder + "\"\n"
            "    part: xeon-platinum-8380h\n    numa_node: ${i}\n    memory: {capacity: 1 GiB, bandwidth: 1 GB/s}\n")
    if where == "node":
        assert_ends_cleanly({"fuzz.yaml": node.encode()})
        return
    node = node.replace('"cpu' + placeholder + '"', "cpu${i}")
    cluster = ("hwspec: 1\nkind: cluster\nname: c\nnodes:\n  - platform: node.yaml\n    count: 3\n"
               "    hostname: \"n" + placeholder + "\"\n")
    assert_ends_cleanly({"cluster.yaml": cluster.encode(), "node.yaml": node.encode()}, "cluster.yaml")


# ------------------------------------------------------------------ hostile text in every field, hostile paths

_UNSAFE_CHARS = re.compile("[\x00-\x08\x0b-\x1f\x7f\x85\u2028\u2029\ud800-\udfff]")
_ENV_LINE = re.compile(r"(#.*|[A-Z_][A-Z0-9_]*=[A-Za-z0-9_./:,=@%+^-]*|)")


def assert_outputs_safe(out: Path) -> None:
    """Every generated file is UTF-8 with no control character but newline and TAB; env/conf
    files are comments and NAME=safe-value lines only; scripts parse; sourcing the env files
    and running bind.sh's argument check runs nothing; XML passes NCCL's (RCCL's, for
    rccl-topo.xml) parser rules with a
    header comment free of `--`; JSON parses."""
    from hwspec.formats.nccl_topology import check_nccl_xml, check_rccl_xml

    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        text = path.read_bytes().decode("utf-8")
        bad = _UNSAFE_CHARS.search(text)
        assert bad is None, f"{path.name}: unsafe character {bad.group()!r}"
        lines = text.split("\n")
        if path.suffix in (".env", ".conf") and path.parent.name != "slurm":
            for line in lines:
                assert _ENV_LINE.fullmatch(line), f"{path.name}: {line!r}"
        elif path.suffix == ".sh" or path.suffix == ".sbatch":
            assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0, path.name
        elif path.suffix == ".xml":
            check = check_rccl_xml if path.name == "rccl-topo.xml" else check_nccl_xml
            assert check(text) == [], path.name
            assert "--" not in lines[0][4:-3], lines[0]
        elif path.suffix == ".json":
            json.loads(text)
        else:
            assert all(not line.startswith(("#", "//")) or "\r" not in line for line in lines)
    for env in out.rglob("*.env"):
        subprocess.run(["bash", "-c", "set -a; . ./" + env.name], cwd=env.parent, capture_output=True, timeout=30)
    for script in out.rglob("bind.sh"):
        subprocess.run(["bash", str(script)], cwd=script.parent, capture_output=True, timeout=30,
                       env={"LOCAL_RANK": "999", "PATH": os.environ.get("PATH", "")})
    assert not list(out.rglob("PWNED")) and not Path("PWNED").exists()


@contextlib.contextmanager
def inside(directory: Path):
    previous = os.getcwd()
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(previous)


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with hang_guard(TIME_LIMIT, "validate"), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(args))
    return status, out.getvalue(), err.getvalue()


@settings(max_examples=EXAMPLES, deadline=None)
@given(hostile_node_specs(max_sockets=2, max_gpus=3), hostile_names())
def test_hostile_text_in_any_field_and_a_hostile_directory_name(case, directory_name):
    """Free text is accepted and shown safely, a hostile name is refused at its place (or the
    file refused as unencodable), and a clean validate means generate writes only safe files,
    from a directory whose name holds line breaks, `$(...)`, quotes, controls or non-UTF-8 bytes."""
    path, kind, spec = case
    note(f"{kind} at {path}: {pipeline_path(spec, path)!r}; directory {directory_name!r}")
    with tempfile.TemporaryDirectory(prefix="hwspec-hostile-") as work:
        directory = os.path.join(os.fsencode(work), directory_name)
        os.mkdir(directory)
        with open(os.path.join(directory, b"node.yaml"), "w", encoding="utf-8") as handle:
            handle.write(dump_yaml(spec))
        target = os.fsdecode(os.path.join(directory_name, b"node.yaml"))
        with inside(Path(work)):
            status, out, err = run_cli("validate", "--", target)
            assert "Traceback" not in out + err and status in (0, 1, 2), out + err
            assert_one_line_each(out)
            generated, gen_out, gen_err = run_cli("generate", "--no-svg", "-o", "out", "--", target)
            assert "Traceback" not in gen_out + gen_err
            if status == 0:
                assert generated == 0, f"validate said ok, generate failed:\n{gen_err}"
                assert_outputs_safe(Path(work) / "out")
            else:
                assert generated == 2 and not (Path(work) / "out").exists(), gen_err
                assert "error[" in out
                if kind == "name":
                    assert re.search(r"node\.yaml:\d+:\d+: error\[", out), out


def pipeline_path(spec: dict, path: tuple) -> object:
    node: object = spec
    for key in path:
        node = node[key]  # type: ignore[index]
    return node


_REPORT_LINE = re.compile(r".+:\d+:\d+: (error|warning|info)\[[^\]]+\]: .*|  hint: .*")


def assert_one_line_each(report: str) -> None:
    """Every line of a text report is a diagnostic or its hint: no message or hint breaks a line."""
    for line in report.splitlines():
        assert _REPORT_LINE.fullmatch(line), f"a line no diagnostic starts: {line!r}"


@settings(max_examples=EXAMPLES * 5)
@given(hostile_texts(), hostile_texts())
def test_a_diagnostic_message_and_hint_are_one_line_whatever_they_quote(message, hint):
    """A value quoted from a hostile file cannot break a message or hint in any report format."""
    diagnostic = Diagnostic("f.yaml", 1, 2, Severity.ERROR, "E110", f"x: '{message}'", f"write '{hint}'")
    assert diagnostic.hint is not None
    assert len(diagnostic.message.splitlines()) == len(diagnostic.hint.splitlines()) == 1
    assert_one_line_each(diagnostic.format())
    assert len(report.render([diagnostic], "github").splitlines()) == 1


@settings(max_examples=EXAMPLES, deadline=None)
@given(hostile_cluster_specs(max_gpus=2, max_sockets=2, max_nodes=4))
def test_hostile_text_in_a_cluster_title_hostname_or_address(case):
    path, files = case
    with tempfile.TemporaryDirectory(prefix="hwspec-hostile-") as work:
        files.write(work)
        with inside(Path(work)):
            status, out, err = run_cli("validate", "cluster.yaml")
            assert "Traceback" not in out + err and status in (0, 1, 2), out + err
            assert_one_line_each(out)
            generated, _, gen_err = run_cli("generate", "--no-svg", "-o", "out", "cluster.yaml")
            if status == 0:
                assert generated == 0, f"validate said ok, generate failed:\n{gen_err}"
                assert_outputs_safe(Path(work) / "out")
            else:
                assert generated == 2 and not (Path(work) / "out").exists(), gen_err
                if path != ("title",):
                    assert "cluster.yaml:" in out and "error[" in out, out


# ------------------------------------------------------------------ memory, in a subprocess


def run_limited(*args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    """`python -m hwspec ARGS` with at most MEMORY_LIMIT of address space."""
    return subprocess.run([sys.executable, "-m", "hwspec", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout, preexec_fn=_limit_memory)


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


ONE_PROCESS = r"""
import contextlib, io, json, sys, traceback
from hwspec.cli.commands import main
results = []
for argv in json.loads(sys.stdin.read()):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except BaseException:
            traceback.print_exc()
            status = None
    results.append([status, out.getvalue(), err.getvalue()])
json.dump(results, sys.stdout)
"""


def run_limited_each(commands: list[list[str]], timeout: int = 300) -> list[tuple[int | None, str, str]]:
    """(exit status, stdout, stderr) of each `hwspec ARGV` of `commands`, run one after the other
    in one Python process under MEMORY_LIMIT (one start-up for all of them; an exception is a
    traceback in that command's stderr and status None)."""
    result = subprocess.run([sys.executable, "-c", ONE_PROCESS], input=json.dumps(commands), capture_output=True,
                            text=True, cwd=ROOT, timeout=timeout, preexec_fn=_limit_memory)
    assert result.returncode == 0, result.stderr[-3000:]
    return [tuple(r) for r in json.loads(result.stdout)]


@pytest.mark.slow  # a memory-limited process reads 5 MiB bombs
def test_resource_bombs_stay_within_memory(tmp_path):
    """One subprocess, several files that ask for far more than MEMORY_LIMIT if expanded
    naively: every one gets its own error, nothing runs out of memory."""
    bombs = {
        "laughs.yaml": alias_bomb(10, 12),  # 10^12 nodes
        "wide.yaml": alias_bomb(1000, 3),  # 10^9 nodes from a 12 kB file
        "repeat.yaml": ("hwspec: 1\nkind: node\nname: n\nsockets:\n  - repeat: {i: 0..4095, j: 0..4095}\n    id: c\n"),
        "body.yaml": ("hwspec: 1\nkind: node\nname: n\nsockets:\n  - repeat: {i: 0..4095}\n    id: c\n    source: ["
                      + ", ".join(["1"] * 50_000) + "]\n"),
        "width.yaml": ("hwspec: 1\nkind: node\nname: n\nsockets:\n  - repeat: {i: 0..4095}\n    id: \"${i:0999999999}\"\n"),
        "big.yaml": "hwspec: 1\nkind: node\nname: n\ntitle: " + "x" * (5 * 2**20) + "\n",
        # 4 MiB of small values: once composed in full (800 MB) before being counted
        "many.yaml": "hwspec: 1\nkind: node\nname: n\nsources: {" + ", ".join(f"k{i}: v" for i in range(340_000)) + "}\n",
    }
    for name, text in bombs.items():
        (tmp_path / name).write_text(text)
    result = run_limited("validate", str(tmp_path))
    assert result.returncode in (1, 2) and "Traceback" not in result.stderr and "MemoryError" not in result.stderr, \
        result.stderr[-3000:]
    for name in bombs:
        assert f"{name}:" in result.stdout, f"no diagnostic for {name}\n{result.stdout[-3000:]}"


# ------------------------------------------------------------------ the corpus of crashes found


def corpus_entries() -> list[Path]:
    """Top-level files and directories (a cluster and its node platform) of tests/fuzz_corpus/,
    except `generate/`: inputs that validate clean but once crashed a generator."""
    return sorted(p for p in CORPUS.iterdir() if p.name != "generate" and (p.is_dir() or p.suffix == ".yaml"))


CORPUS_ENTRIES = corpus_entries()
CORPUS_GENERATES = sorted((CORPUS / "generate").glob("*.yaml"))


def _corpus_target(entry: Path) -> str:
    return str((entry / "cluster.yaml" if entry.is_dir() else entry).relative_to(ROOT))


def _generate_commands(entry: Path, out: Path) -> list[list[str]]:
    relative = str(entry.relative_to(ROOT))
    return [["validate", relative], ["generate", "--no-svg", "-o", str(out), relative], ["roofline", relative]]


@pytest.fixture(scope="module")
def corpus_validated() -> dict[Path, tuple[int | None, str, str]]:
    """`hwspec validate` of every corpus entry, all in one process under the memory limit."""
    return dict(zip(CORPUS_ENTRIES, run_limited_each([["validate", _corpus_target(e)] for e in CORPUS_ENTRIES])))


@pytest.fixture(scope="module")
def corpus_generated(tmp_path_factory) -> dict[Path, list[tuple[list[str], tuple[int | None, str, str]]]]:
    """validate, generate and roofline of every generate-corpus input, all in one process under the memory limit."""
    out = tmp_path_factory.mktemp("corpus-generated")
    commands = {entry: _generate_commands(entry, out / entry.stem) for entry in CORPUS_GENERATES}
    results = iter(run_limited_each([argv for entry in CORPUS_GENERATES for argv in commands[entry]]))
    return {entry: [(argv, next(results)) for argv in commands[entry]] for entry in CORPUS_GENERATES}


@pytest.mark.parametrize("entry", CORPUS_ENTRIES, ids=lambda p: p.name)
def test_corpus_input_ends_in_diagnostics(entry, corpus_validated):
    """Every crash ever found, through `hwspec validate` under the memory limit."""
    status, out, err = corpus_validated[entry]
    assert status in (1, 2), out[-2000:] + err[-2000:]
    assert "Traceback" not in err and "error[" in out, err[-3000:]


@pytest.mark.parametrize("entry", CORPUS_GENERATES, ids=lambda p: p.name)
def test_corpus_platform_generates(entry, corpus_generated):
    """Inputs that validate and once crashed `generate` or `roofline`: both now succeed."""
    for argv, (status, _, err) in corpus_generated[entry]:
        assert status == 0 and "Traceback" not in err, f"{argv}\n{err[-3000:]}"
