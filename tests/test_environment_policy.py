"""The `environment:` policy: a platform or cluster file sets tunables only; names that load
code, name files or move the launch are refused at validate (HW702, HW812) and by the
generators, unless the operator grants them on the command line (`--allow-env`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from hwspec.formats.environment import LOADS_CODE, NAMES_FILE, REDIRECTS, REVIEWED_TUNABLES, STRICT, UNREVIEWED, EnvironmentPolicy, refusal
from hwspec.formats.nccl_env import KNOWN
from hwspec.generate.engine import GenerationError, plan_for
from hwspec.pipeline import check
from hwspec.testing import hostile_environment_specs
from hwspec.testing.nodes import dump_yaml
from tests.cli import run_hwspec
from tests.examples import pinned

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
REFUSED = FIXTURES / "rules" / "environment_refused.yaml"

VENDOR_SETTINGS = [
    # what vendors document for real fabrics: QPs, adaptive routing, timeouts, SHARP and NVLS, rails
    "NCCL_IB_QPS_PER_CONNECTION", "NCCL_IB_SPLIT_DATA_ON_QPS", "NCCL_IB_ADAPTIVE_ROUTING", "NCCL_IB_AR_THRESHOLD",
    "NCCL_IB_TIMEOUT", "NCCL_IB_RETRY_CNT", "NCCL_IB_GID_INDEX", "NCCL_IB_TC", "NCCL_IB_SL", "NCCL_IB_HCA",
    "NCCL_IB_PCI_RELAXED_ORDERING", "NCCL_SOCKET_IFNAME", "NCCL_NET_GDR_LEVEL", "NCCL_CROSS_NIC", "NCCL_NVLS_ENABLE",
    "NCCL_COLLNET_ENABLE", "NCCL_SHARP_DISABLE", "NCCL_NVLSTREE_MAX_CHUNKSIZE", "NCCL_P2P_NET_CHUNKSIZE", "NCCL_BUFFSIZE",
    "NCCL_MIN_NCHANNELS", "NCCL_ALGO", "NCCL_PROTO", "NCCL_NET", "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_MNNVL_ENABLE",
    "SHARP_COLL_ENABLE_SAT", "UCX_TLS", "UCX_NET_DEVICES", "FI_PROVIDER", "FI_EFA_USE_DEVICE_RDMA",
    "CUDA_DEVICE_MAX_CONNECTIONS", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "OMP_NUM_THREADS",
]


@pytest.mark.parametrize("name", VENDOR_SETTINGS)
def test_vendor_settings_real_fabrics_need_are_tunables(name):
    assert refusal(name) is None


@pytest.mark.parametrize("name", ["LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "PATH", "PYTHONPATH", "PYTHONSTARTUP",
                                  "PYTHONHOME", "BASH_ENV", "ENV", "IFS", "PS4", "NCCL_ENV_PLUGIN", "NCCL_NET_PLUGIN",
                                  "NCCL_TUNER_PLUGIN", "NCCL_PROFILER_PLUGIN", "NCCL_GIN_PLUGIN", "NCCL_IBVERBS_LIB",
                                  "CUDA_INJECTION64_PATH", "GLIBC_TUNABLES", "NODE_OPTIONS", "RCCL_NEW_PLUGIN"])
def test_names_that_load_code_are_refused(name):
    assert refusal(name) == LOADS_CODE


@pytest.mark.parametrize("name", ["NCCL_DEBUG_FILE", "NCCL_TOPO_DUMP_FILE", "NCCL_GRAPH_DUMP_FILE", "NCCL_TOPO_FILE",
                                  "NCCL_CONF_FILE", "NCCL_GRAPH_FILE", "NCCL_PARAM_DUMP_ALL", "UCX_LOG_FILE", "TMPDIR",
                                  "HOME", "XDG_CACHE_HOME", "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", "HWSPEC_DIR"])
def test_names_that_name_files_are_refused(name):
    assert refusal(name) == NAMES_FILE


@pytest.mark.parametrize("name", ["PET_RDZV_ENDPOINT", "PET_NNODES", "MASTER_ADDR", "MASTER_PORT", "NCCL_COMM_ID",
                                  "NCCL_HOSTID", "NCCL_RAS_ADDR", "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                                  "CUDA_DEVICE_ORDER", "HWSPEC_NODE", "HWSPEC_RDZV_PORT", "SLURM_PROCID",
                                  "TORCHELASTIC_RUN_ID", "WORLD_SIZE", "HTTPS_PROXY"])
def test_names_that_move_the_launch_are_refused(name):
    assert refusal(name) == REDIRECTS


@pytest.mark.parametrize("name", ["MY_FLAG", "LANG", "TZ", "MALLOC_ARENA_MAX", "UCX_SOMETHING_NEW"])
def test_names_nobody_reviewed_are_refused(name):
    assert refusal(name) == UNREVIEWED


def test_every_reviewed_tunable_is_outside_the_refused_classes():
    assert sorted(n for n in REVIEWED_TUNABLES if refusal(n) is not None) == []


def test_hw701_knows_what_nccl_2_32_reads():
    assert {"NCCL_NVLSTREE_MAX_CHUNKSIZE", "NCCL_IB_RAIL_POLICY", "NCCL_NET_MERGE_POLICY"} <= KNOWN
    assert not {"NCCL_LOG_WARN", "NCCL_PARAM_TYPE_I32", "NCCL_INIT"} & KNOWN  # enum and subsystem names


def test_an_operator_grant_admits_a_refused_name_and_only_that_one():
    policy = EnvironmentPolicy.allowing(["LD_PRELOAD"])
    assert policy.refusal("LD_PRELOAD") is None
    assert policy.refusal("LD_AUDIT") == LOADS_CODE


def test_rules_cannot_switch_the_policy_off(tmp_path):
    text = REFUSED.read_text() + "rules:\n  HW702: {severity: off, reason: trust the pull request}\n"
    path = tmp_path / "waived.yaml"
    path.write_text(text)
    found = [(d.code, d.line) for d in check(path).diagnostics]
    assert ("E304", 83) in found and sum(code == "HW702" for code, _ in found) == 4


def _refused_platform(tmp_path: Path, environment: str) -> Path:
    base = REFUSED.read_text().split("environment:\n", 1)[0]
    path = tmp_path / "platform.yaml"
    path.write_text(base + "environment:\n" + environment)
    return path


def test_generate_refuses_a_refused_name_without_validate(tmp_path):
    """A library caller that renders without running the rules still cannot write one."""
    checked = check(_refused_platform(tmp_path, "  NCCL_ENV_PLUGIN: /tmp/pr/libnccl-env.so\n"))
    assert [d.code for d in checked.diagnostics] == ["HW702"]
    with pytest.raises(GenerationError) as error:
        plan_for(checked.topology)
    assert str(error.value) == (f"{checked.platform.file}: environment: environment: NCCL_ENV_PLUGIN {LOADS_CODE}: "
                                "a platform file may not set it")


def test_a_granted_name_is_generated_into_launch_env_and_nccl_conf(tmp_path):
    path = _refused_platform(tmp_path, "  NCCL_DEBUG_FILE: /var/log/nccl.%h.%p\n  MY_FLAG: 1\n")
    policy = EnvironmentPolicy.allowing(["NCCL_DEBUG_FILE", "MY_FLAG"])
    checked = check(path, policy=policy)
    assert checked.diagnostics == []
    files = plan_for(checked.topology, only=["nccl-conf", "launch-env"], policy=policy)
    assert "NCCL_DEBUG_FILE=/var/log/nccl.%h.%p\n" in files["environment-refused/nccl.conf"]
    assert "MY_FLAG=1\n" in files["environment-refused/launch.env"]


def _hwspec(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_hwspec(*args, cwd=cwd)


def test_allow_env_on_the_command_line_grants_names_for_validate_and_generate(tmp_path):
    path = _refused_platform(tmp_path, "  LD_PRELOAD: /opt/site/libhook.so\n  MASTER_PORT: 29400\n")
    refused = _hwspec("generate", str(path), "-o", "out", cwd=tmp_path)
    assert refused.returncode == 2 and not (tmp_path / "out").exists()  # generate: errors stop it before writing
    assert "error[HW702 environment-policy]: environment: LD_PRELOAD" in refused.stderr
    granted = _hwspec("generate", str(path), "-o", "out", "--allow-env", "LD_PRELOAD", "--allow-env", "MASTER_PORT",
                      cwd=tmp_path)
    assert granted.returncode == 0, granted.stderr
    assert "LD_PRELOAD=/opt/site/libhook.so\n" in (tmp_path / "out" / "environment-refused" / "launch.env").read_text()


def test_allow_env_refuses_what_is_not_a_variable_name(tmp_path):
    result = _hwspec("validate", str(REFUSED), "--allow-env", "LD_PRELOAD,ld-audit", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == ("hwspec validate: error: argument --allow-env: expected environment "
                                              "variable names (upper-case letters, digits, '_'), got 'ld-audit'")


@pytest.mark.parametrize("value, shown", [(".nan", "nan"), (".inf", "inf"), ("-.inf", "-inf"), ("1.0e+400", "inf")])
def test_a_non_finite_environment_value_is_refused_at_its_place(tmp_path, value, shown):
    checked = check(_refused_platform(tmp_path, f"  NCCL_IB_TIMEOUT: {value}\n"))
    assert [d.format() for d in checked.diagnostics] == [
        f"{checked.path}:73:20: error[E110]: environment.NCCL_IB_TIMEOUT: {shown} is not a finite number: write the "
        "number the consumer reads, or quote the text if you mean a word, e.g. '22'"]


def _sourced(env_file: Path) -> dict[str, str]:
    """The variables bash exports after `set -a; . env_file` in an empty environment."""
    out = subprocess.run(["env", "-i", "bash", "-c", f'set -a; . "{env_file}"; env -0'], capture_output=True, check=True,
                         timeout=30).stdout.decode()
    return dict(entry.split("=", 1) for entry in out.split("\0") if entry)


def _sourced_launch_env(spec: dict, directory: Path) -> dict[str, str] | None:
    """What bash exports after sourcing the launch.env generated for `spec`; None when validate
    refuses it (every error located below line 1)."""
    path = directory / "platform.yaml"
    path.write_text(dump_yaml(spec))
    checked = check(path)
    errors = [d for d in checked.diagnostics if d.severity.label == "error"]
    if errors:
        assert all(d.line > 1 for d in errors), [d.format() for d in errors]
        return None
    env_file = directory / "launch.env"
    env_file.write_text(plan_for(checked.topology, only=["launch-env"])[f"{checked.platform.name}/launch.env"])
    return _sourced(env_file)


def _as_text(value: object) -> str:
    return {True: "1", False: "0"}.get(value, str(value)) if isinstance(value, (bool, int, float)) else str(value)


@settings(max_examples=pinned(25), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(hostile_environment_specs(max_sockets=2, max_gpus=2))
def test_a_hostile_environment_is_refused_or_sourced_as_written(tmp_path_factory, drawn):
    """Whatever a platform file's `environment:` says, validate refuses it at its place, or bash
    sourcing the generated launch.env sets exactly hwspec's own variables with the tunables
    written laid over them."""
    environment, spec = drawn
    sourced = _sourced_launch_env(spec, tmp_path_factory.mktemp("env"))
    if sourced is None:
        return
    assert all(STRICT.refusal(name) is None for name in environment)
    own = _sourced_launch_env({k: v for k, v in spec.items() if k != "environment"}, tmp_path_factory.mktemp("own"))
    assert own is not None
    assert sourced == own | {name: _as_text(value) for name, value in environment.items()}


# Issue 36: NCCL's and its plugins' names for a file to write or a socket directory, which no
# word gave away: each was a tunable (an HW701 warning the platform could switch off).
PATH_NAMES_OF_NCCL_AND_PLUGINS = ["NCCL_PROXY_PROFILE", "NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX",
                                  "NCCL_PROXY_PROFILE_DIR", "NCCL_TUNER_CONFIG_PATH",
                                  "NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE", "NCCL_RXDM_UNIX_SOCKET"]


@pytest.mark.parametrize("name", PATH_NAMES_OF_NCCL_AND_PLUGINS)
def test_nccl_and_plugin_names_of_a_path_or_socket_are_refused(name):
    assert refusal(name) == NAMES_FILE


@pytest.mark.parametrize("name", ["NCCL_IB_SUBNET_PREFIX_LEN", "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME",
                                  "NCCL_GPUDIRECTTCPX_CTRL_DEV", "NCCL_FASTRAK_IFNAME", "NCCL_SOCKET_NTHREADS"])
def test_plugin_tunables_beside_those_names_stay_tunables(name):
    assert refusal(name) is None


def test_a_tcpx_socket_prefix_is_refused_even_with_hw702_switched_off_and_granted_by_allow_env(tmp_path):
    setting = "  NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX: /tmp/pr/uds\n  NCCL_PROXY_PROFILE: /etc/cron.d/x\n"
    path = _refused_platform(tmp_path, setting)
    plain = path.read_text()
    path.write_text(plain + "rules:\n  HW702: {severity: off, reason: trust the pull request}\n")
    refused = _hwspec("generate", str(path), "-o", "out", cwd=tmp_path)
    assert refused.returncode == 2 and not (tmp_path / "out").exists()
    assert "error[E304]: rules: HW702 environment-policy cannot be set to off" in refused.stderr
    assert "error[HW702 environment-policy]: environment: NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX names a file" in refused.stderr
    assert "error[HW702 environment-policy]: environment: NCCL_PROXY_PROFILE names a file" in refused.stderr
    path.write_text(plain)
    granted = _hwspec("generate", str(path), "-o", "out", "--allow-env",
                      "NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX,NCCL_PROXY_PROFILE", cwd=tmp_path)
    assert granted.returncode == 0 and "HW702" not in granted.stderr, granted.stderr
    assert "NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX=/tmp/pr/uds\n" in (tmp_path / "out" / "environment-refused" / "nccl.conf").read_text()
