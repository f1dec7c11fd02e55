"""Health checks on the engines fleets already run, per node platform (`health/`): each runs
`hwspec diff SPEC --live` on the node and acts on its exit status (0 matches, 1 differs, 2 could
not check).

- `slurm-healthcheck.sh`: Slurm's HealthCheckProgram; drains the node with the first difference
  as the reason (`hwspec: ...`), resumes only a node it drained itself.
- `npd-plugin.sh`, `npd-config.json`, `npd-daemonset.yaml`: a Kubernetes Node Problem Detector
  custom plugin (the node condition `HwspecDrift`) and a DaemonSet running NPD with it.

The NPD config follows NPD's Go types (kubernetes/node-problem-detector
pkg/custompluginmonitor/types/config.go `CustomPluginConfig`, types.go `CustomRule`,
pkg/types/types.go `Condition`): `Validate()` there wants `plugin` "custom", each rule's timeout
within the global one and each permanent rule's condition among `conditions`.

- `parts/platform-parts.yaml`: every catalogue part the platform names (built-in or a site's),
  with its figures' sources, as a parts file. Installed with the rest of the directory it is the
  `parts/` beside `<install dir>/platform.yaml`, which hwspec reads with the platform file: the
  check validates with the parts the platform was generated with, without the site's parts
  directory, and with an hwspec on the node whose own catalogue lacks or differs from them.

Every path written into the scripts is the install dir (checked by `install_root`) and the
platform name (an id), written through `shell_word`, which refuses anything it would have to quote;
nothing else from the platform file reaches them. The spec is expected at
`<install dir>/platform.yaml` (HWSPEC_SPEC overrides it). hwspec's command line is built one
quoted word per argument (templates/health/diff-args.sh.j2): HWSPEC_SYSFS_ROOT reads a captured
sysfs tree, HWSPEC_INPUT compares a captured dump instead of the machine (tests, replays).
"""

from __future__ import annotations

import json
from typing import Any

from hwspec.formats.limits import k8s_name
from hwspec.generate.domains import YAML_DUMPER
from hwspec.generate.engine import GenContext, Plan, generator

NPD_IMAGE = "registry.k8s.io/node-problem-detector/node-problem-detector:v0.8.19"
"""The NPD release the DaemonSet runs (its image has sh, sed and chroot, which the plugin uses)."""
NPD_CONDITION = "HwspecDrift"
"""The node condition the NPD plugin sets: True when the node differs from its spec."""
NPD_SOURCE = "hwspec-custom-plugin-monitor"
LABEL_PLATFORM = "topology.hwspec.io/platform"
"""The node label the DaemonSet selects a platform's nodes by (`kubectl label node N ...`)."""
HOST_ROOT = "/host"
"""Where the DaemonSet mounts the host's root; the plugin runs hwspec there with chroot."""
INVOKE_INTERVAL, TIMEOUT = "300s", "60s"


def spec_path(install_dir: str) -> str:
    """Where the scripts expect the platform file on the node."""
    return f"{install_dir}/platform.yaml"


PARTS_FILE = "parts/platform-parts.yaml"
"""The bundled parts, relative to the install dir: the `parts/` beside its platform.yaml."""


def parts_bundle(ctx: GenContext) -> str | None:
    """The parts file of every catalogue part the platform names, or None when it names none."""
    import yaml

    parts = ctx.platform.catalogue_parts
    if not parts:
        return None
    document: dict[str, Any] = {"hwspec": 1, "kind": "parts"}
    for part in parts:
        document.setdefault(part.kind, {})[part.name] = part.entry
    about = (f"# The catalogue parts {ctx.platform.name} names, as this hwspec defined them when it generated this\n"
             "# directory. Installed with it, this is the parts/ beside the installed platform.yaml, which hwspec\n"
             "# reads with the platform file: the health checks validate with these parts, without the site's\n"
             "# parts directory and whatever the node's hwspec has in its own catalogue.\n")
    return ctx.header("hash") + about + yaml.dump(document, Dumper=YAML_DUMPER, sort_keys=False,
                                                  default_flow_style=False, width=1000)


def npd_config(plugin: str, platform_name: str) -> dict[str, Any]:
    """NPD's custom-plugin-monitor config running `plugin` every INVOKE_INTERVAL."""
    return {
        "plugin": "custom",
        "pluginConfig": {"invoke_interval": INVOKE_INTERVAL, "timeout": TIMEOUT, "max_output_length": 200,
                         "concurrency": 1},
        "source": NPD_SOURCE,
        "metricsReporting": True,
        "conditions": [{"type": NPD_CONDITION, "reason": "HwspecMatches",
                        "message": f"the node matches its hwspec platform {platform_name}"}],
        "rules": [{"type": "permanent", "condition": NPD_CONDITION, "reason": "HwspecDrifted", "path": plugin,
                   "timeout": TIMEOUT}],
    }


def npd_daemonset(platform_name: str, config: str) -> list[dict[str, Any]]:
    """A ServiceAccount with NPD's built-in ClusterRole and a DaemonSet running NPD with only the
    hwspec plugin on the nodes labelled LABEL_PLATFORM=<platform>. Privileged with the host's
    root at HOST_ROOT, as NPD's own DaemonSet is privileged: hwspec reads sysfs and NVML there."""
    name = k8s_name(f"hwspec-npd-{platform_name}")
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "hwspec-npd", "namespace": "kube-system"}}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "hwspec-npd"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "system:node-problem-detector"},
               "subjects": [{"kind": "ServiceAccount", "name": "hwspec-npd", "namespace": "kube-system"}]}
    labels = {"app": name}
    container = {
        "name": "node-problem-detector", "image": NPD_IMAGE,
        "command": ["/node-problem-detector", "--logtostderr", f"--config.custom-plugin-monitor={HOST_ROOT}{config}",
                    "--port=0", "--prometheus-port=0"],
        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                {"name": "HWSPEC_HOST_ROOT", "value": HOST_ROOT}],
        "securityContext": {"privileged": True},
        "resources": {"requests": {"cpu": "10m", "memory": "150Mi"}, "limits": {"memory": "300Mi"}},
        "volumeMounts": [{"name": "host", "mountPath": HOST_ROOT, "readOnly": True, "mountPropagation": "HostToContainer"}],
    }
    daemonset = {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "kube-system", "labels": dict(labels)},
        "spec": {"selector": {"matchLabels": dict(labels)}, "template": {
            "metadata": {"labels": dict(labels)},
            "spec": {"serviceAccountName": "hwspec-npd", "nodeSelector": {LABEL_PLATFORM: k8s_name(platform_name)},
                     "containers": [container],
                     "volumes": [{"name": "host", "hostPath": {"path": "/", "type": "Directory"}}],
                     "tolerations": [{"operator": "Exists", "effect": "NoSchedule"},
                                     {"operator": "Exists", "effect": "NoExecute"}]}}},
    }
    return [account, binding, daemonset]


@generator("health")
def health(ctx: GenContext) -> Plan:
    """`health/slurm-healthcheck.sh`, `health/npd-plugin.sh`, `health/npd-config.json`,
    `health/npd-daemonset.yaml` and `parts/platform-parts.yaml` (see the module's docstring)."""
    import yaml

    install_dir = ctx.install_dir
    plugin = f"{install_dir}/health/npd-plugin.sh"
    values = {"header": ctx.header("hash"), "install_dir": install_dir, "spec": spec_path(install_dir)}
    # the NPD config names paths inside NPD's container, where the host's root is HOST_ROOT
    config = npd_config(HOST_ROOT + plugin, ctx.platform.name)
    manifest = (ctx.header("hash")
                + f"# Node Problem Detector with the hwspec plugin on nodes labelled {LABEL_PLATFORM}="
                  f"{k8s_name(ctx.platform.name)}:\n#   kubectl apply -f npd-daemonset.yaml\n"
                + yaml.dump_all(npd_daemonset(ctx.platform.name, f"{install_dir}/health/npd-config.json"),
                                Dumper=YAML_DUMPER, sort_keys=False, default_flow_style=False, width=1000))
    files = {
        # rendered without the automatic header: the shebang must stay on the first line
        "health/slurm-healthcheck.sh": ctx.render("health/slurm-healthcheck.sh.j2", None, **values),
        "health/npd-plugin.sh": ctx.render("health/npd-plugin.sh.j2", None, **values),
        "health/npd-config.json": json.dumps(config, indent=2) + "\n",
        "health/npd-daemonset.yaml": manifest,
    }
    # the bundle reads no deployment value: made once per run (a cluster's render of the node reuses it)
    bundle = ctx.once(PARTS_FILE, lambda: parts_bundle(ctx) or "")
    if bundle:
        files[PARTS_FILE] = bundle
    return files
