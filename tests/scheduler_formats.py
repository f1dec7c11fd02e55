"""Checkers for the scheduler formats hwspec writes, from the consumers' own definitions:

* Slurm topology.yaml(5) (SchedMD/slurm doc/man/man5/topology.yaml.5, May 2025): a YAML list
  of topologies; `topology` (a unique name) first; `cluster_default` bool; exactly one of
  `block` {block_sizes, blocks: [{block, nodes}]}, `tree` {switches: [{switch, children,
  nodes}]} (switch names at most 64 characters) or `flat: true`; "each block must have at
  least the planning base block size count of nodes"; "successive BlockSizes must be a power
  of two larger than the prior values".
* Kueue's v1beta2 API, the storage version from Kueue 0.16 (served from 0.15; v1beta1 carries
  `+kubebuilder:deprecatedversion:warning="This version is deprecated. Use v1beta2 instead."`,
  so kubectl warns on every v1beta1 apply). The schemas below are the CRD schemas controller-gen
  makes from the kubebuilder markers of kubernetes-sigs/kueue apis/kueue/v1beta2/topology_types.go
  (commit 046d2efa6fa34ff6f967530579f1883dddcc5407: levels 1-16 items, nodeLabel pattern and
  length) and resourceflavor_types.go (commit 2fff9dfc9f18c1512327980fcee5cf8524d2d72c:
  nodeLabels at most 8, TopologyReference a DNS subdomain of at most 253), as JSON Schema, plus
  their CEL rules (levels unique; kubernetes.io/hostname only as the lowest level; a
  ResourceFlavor with topologyName has at least one nodeLabel).
* Kubernetes label syntax (k8s.io/apimachinery validation: qualified names and label values).
"""

from __future__ import annotations

import re
import shlex

import jsonschema
import yaml

from hwspec.topology.hostlist import expand

DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
LABEL_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_KEY = re.compile(rf"^({DNS_SUBDOMAIN}/)?{LABEL_NAME}$")
LABEL_VALUE = re.compile(rf"^({LABEL_NAME})?$")

KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"
"""The storage version of current Kueue releases: the only one these checks accept."""
# From v1beta2 TopologySpec (spec.levels).
KUEUE_TOPOLOGY_SCHEMA = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"], "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": KUEUE_API_VERSION},
        "kind": {"const": "Topology"},
        "metadata": {"type": "object", "required": ["name"],
                     "properties": {"name": {"type": "string", "maxLength": 253, "pattern": f"^{DNS_SUBDOMAIN}$"}}},
        "spec": {
            "type": "object", "required": ["levels"], "additionalProperties": False,
            "properties": {"levels": {
                "type": "array", "minItems": 1, "maxItems": 16,
                "items": {"type": "object", "required": ["nodeLabel"], "additionalProperties": False,
                          "properties": {"nodeLabel": {
                              "type": "string", "minLength": 1, "maxLength": 316,
                              "pattern": r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                                         r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"}}}}},
        },
    },
}
# From v1beta2 ResourceFlavorSpec (nodeLabels: at most 8; TopologyReference: DNS subdomain, <= 253).
KUEUE_FLAVOR_SCHEMA = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"], "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": KUEUE_API_VERSION},
        "kind": {"const": "ResourceFlavor"},
        "metadata": {"type": "object", "required": ["name"],
                     "properties": {"name": {"type": "string", "maxLength": 253, "pattern": f"^{DNS_SUBDOMAIN}$"}}},
        "spec": {"type": "object", "additionalProperties": False, "properties": {
            "nodeLabels": {"type": "object", "maxProperties": 8, "additionalProperties": {"type": "string"}},
            "nodeTaints": {"type": "array", "maxItems": 8},
            "tolerations": {"type": "array", "maxItems": 8},
            "topologyName": {"type": "string", "maxLength": 253, "pattern": f"^{DNS_SUBDOMAIN}$"},
            "resourceWeights": {"type": "object", "maxProperties": 16},
        }},
    },
}


def check_slurm_topology_yaml(text: str) -> list[dict]:
    """Parse and check a topology.yaml as topology.yaml(5) defines it; returns the topologies."""
    data = yaml.safe_load(text)
    assert isinstance(data, list) and data, "topology.yaml is a non-empty list of topologies"
    names = [entry.get("topology") for entry in data]
    assert all(isinstance(n, str) and n for n in names) and len(set(names)) == len(names), names
    defaults = 0
    for entry in data:
        assert next(iter(entry)) == "topology", f"'topology' must be the first attribute: {list(entry)}"
        kinds = [k for k in ("block", "tree", "flat") if k in entry]
        assert len(kinds) == 1, f"{entry['topology']}: exactly one of block, tree, flat; got {kinds}"
        assert set(entry) <= {"topology", "cluster_default", "block", "tree", "flat"}, set(entry)
        assert isinstance(entry.get("cluster_default", False), bool)
        defaults += entry.get("cluster_default", False)
        if "block" in entry:
            block = entry["block"]
            assert set(block) <= {"block_sizes", "blocks"}
            sizes = block["block_sizes"]
            assert all(isinstance(s, int) and s > 0 for s in sizes)
            for before, after in zip(sizes, sizes[1:]):
                ratio = after // before
                assert after == before * ratio and ratio >= 2 and ratio & (ratio - 1) == 0, sizes
            blocks = block["blocks"]
            assert len({b["block"] for b in blocks}) == len(blocks)
            for b in blocks:
                assert set(b) <= {"block", "nodes"} and b["block"]
                assert len(expand(b["nodes"])) >= sizes[0], f"{b['block']} has fewer nodes than the base block size"
        elif "tree" in entry:
            switches = entry["tree"]["switches"]
            assert len({s["switch"] for s in switches}) == len(switches)
            known = {s["switch"] for s in switches}
            for s in switches:
                assert set(s) <= {"switch", "children", "nodes"} and 0 < len(s["switch"]) <= 64
                assert ("children" in s) != ("nodes" in s), s
                if "children" in s:
                    assert set(expand(s["children"])) <= known, s
        else:
            assert entry["flat"] is True
    # Slurm uses "the first topology defined with cluster_default: true"; hwspec marks exactly one
    assert defaults == 1, f"{defaults} topologies have cluster_default: true"
    return data


def check_kueue_manifests(text: str) -> dict[str, dict]:
    """Validate the Topology and ResourceFlavor documents against Kueue's CRD schemas and CEL
    rules; returns them by kind."""
    docs = [d for d in yaml.safe_load_all(text) if d is not None]
    by_kind = {d["kind"]: d for d in docs}
    assert sorted(by_kind) == ["ResourceFlavor", "Topology"] and len(docs) == 2
    topology, flavor = by_kind["Topology"], by_kind["ResourceFlavor"]
    jsonschema.validate(topology, KUEUE_TOPOLOGY_SCHEMA)
    jsonschema.validate(flavor, KUEUE_FLAVOR_SCHEMA)
    levels = [level["nodeLabel"] for level in topology["spec"]["levels"]]
    assert len(set(levels)) == len(levels), "must be unique"
    assert "kubernetes.io/hostname" not in levels or levels[-1] == "kubernetes.io/hostname", \
        "the kubernetes.io/hostname label can only be used at the lowest level of topology"
    spec = flavor["spec"]
    assert "topologyName" not in spec or len(spec.get("nodeLabels", {})) >= 1, \
        "at least one nodeLabel is required when topology is set"
    assert spec["topologyName"] == topology["metadata"]["name"]
    for key, value in spec["nodeLabels"].items():
        assert LABEL_KEY.match(key) and LABEL_VALUE.match(value) and len(value) <= 63, (key, value)
    return by_kind


def parse_label_script(text: str) -> list[tuple[str, dict[str, str]]]:
    """The (node, labels) of every node of each `label NODE... key=value...` line of label-nodes.sh,
    parsed the way sh splits words and kubectl tells names from labels (an argument with '=' is a
    label); each key and value checked against Kubernetes' label syntax."""
    rows = []
    for line in text.splitlines():
        if not line.startswith("label "):
            continue
        _, *words = shlex.split(line)
        nodes = [word for word in words if "=" not in word]
        pairs = words[len(nodes):]
        assert nodes and pairs and all("=" in pair for pair in pairs), line
        labels = {}
        for pair in pairs:
            key, sep, value = pair.partition("=")
            assert sep and LABEL_KEY.match(key), pair
            prefix, _, name = key.rpartition("/")
            assert len(name) <= 63 and len(prefix) <= 253, key
            assert LABEL_VALUE.match(value) and len(value) <= 63, pair
            labels[key] = value
        rows.extend((node, labels) for node in nodes)
    return rows


# ---------------------------------------------------------------- Kubeflow MPI Operator's MPIJob

MPIJOB_API_VERSION = "kubeflow.org/v2beta1"
QUANTITY = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
"""A resource quantity, as the CRDs' int-or-string fields give its pattern."""


def _closed(properties: dict, required: tuple[str, ...] = ()) -> dict:
    """An object schema of `properties` that refuses any other field: the API server prunes a
    field its structural schema does not name, so a manifest relying on one loses it silently."""
    schema: dict = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


_STRINGS = {"type": "array", "items": {"type": "string"}}
_QUANTITIES = {"type": "object", "additionalProperties": {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": QUANTITY}]}}
_CONTAINER = _closed({
    "name": {"type": "string"}, "image": {"type": "string"}, "command": _STRINGS, "args": _STRINGS,
    "env": {"type": "array", "items": _closed({
        "name": {"type": "string"}, "value": {"type": "string"},
        "valueFrom": _closed({"fieldRef": _closed({"apiVersion": {"type": "string"}, "fieldPath": {"type": "string"}},
                                                  ("fieldPath",))})}, ("name",))},
    "resources": _closed({"limits": _QUANTITIES, "requests": _QUANTITIES}),
    "securityContext": _closed({"capabilities": _closed({"add": _STRINGS, "drop": _STRINGS}),
                                "privileged": {"type": "boolean"}}),
    "volumeMounts": {"type": "array", "items": _closed({"name": {"type": "string"}, "mountPath": {"type": "string"},
                                                        "readOnly": {"type": "boolean"}}, ("mountPath", "name"))},
}, ("name",))
_POD_TEMPLATE = _closed({
    "metadata": _closed({"labels": {"type": "object", "additionalProperties": {"type": "string"}},
                         "annotations": {"type": "object", "additionalProperties": {"type": "string"}}}),
    "spec": _closed({
        "containers": {"type": "array", "items": _CONTAINER},
        "nodeSelector": {"type": "object", "additionalProperties": {"type": "string"}},
        "volumes": {"type": "array", "items": _closed({
            "name": {"type": "string"},
            "hostPath": _closed({"path": {"type": "string"}, "type": {"type": "string"}}, ("path",)),
            "emptyDir": _closed({"medium": {"type": "string"},
                                 "sizeLimit": {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": QUANTITY}]}}),
        }, ("name",))},
    }, ("containers",)),
})
MPIJOB_SCHEMA = {
    "type": "object", "required": ["apiVersion", "kind", "metadata", "spec"], "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": MPIJOB_API_VERSION},
        "kind": {"const": "MPIJob"},
        "metadata": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"}, "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
        "spec": _closed({
            "mpiImplementation": {"type": "string", "enum": ["OpenMPI", "Intel"]},
            "mpiReplicaSpecs": {"type": "object", "additionalProperties": _closed({
                "replicas": {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1},
                "restartPolicy": {"type": "string"},
                "template": _POD_TEMPLATE})},
            "runPolicy": _closed({
                "activeDeadlineSeconds": {"type": "integer"}, "backoffLimit": {"type": "integer"},
                "cleanPodPolicy": {"type": "string"}, "suspend": {"type": "boolean"},
                "ttlSecondsAfterFinished": {"type": "integer"},
                "schedulingPolicy": _closed({"minAvailable": {"type": "integer"}, "queue": {"type": "string"},
                                             "minResources": _QUANTITIES, "priorityClass": {"type": "string"},
                                             "scheduleTimeoutSeconds": {"type": "integer"}})}),
            "slotsPerWorker": {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1},
            "sshAuthMountPath": {"type": "string"},
        }, ("mpiReplicaSpecs",)),
    },
}
"""The MPIJob v2beta1 CRD's openAPIV3Schema (kubeflow/mpi-operator manifests/base/kubeflow.org_mpijobs.yaml,
commit b302019be7af803ab4aa15e99d4e5c5b4550e357, controller-gen v0.11.1) as JSON Schema, for the
fields hwspec's mpijob.yaml uses: spec (mpiReplicaSpecs required; mpiImplementation OpenMPI or
Intel; runPolicy; slotsPerWorker int32; sshAuthMountPath), a replica's replicas (int32),
restartPolicy and pod template, and of the pod template (core/v1 PodTemplateSpec as the CRD
embeds it) containers (name required; env entries name required, valueFrom.fieldRef.fieldPath
required; resources' limits and requests quantities; volumeMounts mountPath and name required),
nodeSelector and volumes (name required; hostPath.path required). Every object is closed
(`_closed`), which the CRD is not: the API server would prune an unknown field instead."""

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
"""RFC 1123 label (Kubernetes' IsDNS1123Label), at most 63 characters."""
C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_mpijob(text: str) -> dict:
    """Parse `text` (one YAML document) and check it as an MPIJob: against MPIJOB_SCHEMA, and
    Kubernetes' own object rules it can be held to without a cluster: the name and every pod
    host name the operator derives from it (`<name>-worker-<i>`, `<name>-launcher`) and the
    workers' Service (`<name>-worker`) are DNS labels of at most 63 characters; label keys and
    values, container and volume names (DNS labels), environment names (C identifiers),
    absolute mount and host paths, every mount naming a volume of its pod; no `$(` in a
    command (Kubernetes would expand it as a variable reference)."""
    (document,) = [d for d in yaml.safe_load_all(text) if d is not None]
    jsonschema.validate(document, MPIJOB_SCHEMA)
    name = document["metadata"]["name"]
    workers = document["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]
    for derived in (name, f"{name}-worker", f"{name}-launcher", f"{name}-worker-{workers - 1}"):
        assert DNS_LABEL.match(derived) and len(derived) <= 63, derived
    for key, value in document["metadata"].get("labels", {}).items():
        assert LABEL_KEY.match(key) and LABEL_VALUE.match(value) and len(value) <= 63, (key, value)
    for replica in document["spec"]["mpiReplicaSpecs"].values():
        template = replica["template"]
        for key, value in {**template.get("metadata", {}).get("labels", {}), **template["spec"].get("nodeSelector", {})}.items():
            assert LABEL_KEY.match(key) and LABEL_VALUE.match(value) and len(value) <= 63, (key, value)
        volumes = {v["name"] for v in template["spec"].get("volumes", [])}
        assert all(DNS_LABEL.match(v) and len(v) <= 63 for v in volumes), volumes
        assert all(v["hostPath"]["path"].startswith("/") for v in template["spec"].get("volumes", []) if "hostPath" in v)
        for container in template["spec"]["containers"]:
            assert DNS_LABEL.match(container["name"]) and len(container["name"]) <= 63, container["name"]
            assert all(C_IDENTIFIER.match(e["name"]) for e in container.get("env", [])), container.get("env")
            for mount in container.get("volumeMounts", []):
                assert mount["mountPath"].startswith("/") and mount["name"] in volumes, mount
            assert not any("$(" in word for word in (*container.get("command", []), *container.get("args", [])))
    return document
