"""Every loader, engine and generation code hwspec reports, in one registry: the `Code` enum.

Rule findings carry the rule's id (`HW201`); everything else carries one of these codes. Code
that reports one names the member (`Code.DUPLICATE_KEY`), never the text (`"E107"`): a member is
a `str` whose value is the code text, so `Diagnostic.code` holds either and every report prints
the text. `hwspec explain E105` prints an entry, the documentation site's code reference
(`hwspec.cli.docsgen.code_reference()`) renders every entry, and tests check both, and that no
code text is written anywhere else.

Exit status by code: E100-E108 mean the file could not be read or parsed, E114 that an output
could not be written (exit 2, as do the usage errors E301 and E302, the generation codes E901-E902
and E904-E906, and an internal error, E903); the others, E900 among them, are error findings (exit 1).

The live checks' codes are members too: D101-D114, a live machine (or a fleet) that differs from
its platform file (drift, exit 1), and I100-I104, problems in the inputs `import` and `diff`
read (I100 and I101 make an input unusable, exit 2), and A101-A105, benchmark runs against what
their platform should deliver (A101, A103 and A105 are drift, exit 1). Their summary is the short
name a report prints beside the code, as it prints a rule's name (`error[D105 pcie-link]`): `printed_name`.
"""

from __future__ import annotations

import enum


class Code(enum.StrEnum):
    """One code. Its value (and `str()`) is the code text (`"E105"`); `summary` is a few words
    (as `hwspec explain` heads it), `doc` what it means and what to do."""

    summary: str
    doc: str

    def __new__(cls, code: str, summary: str, doc: str) -> Code:
        member = str.__new__(cls, code)
        member._value_ = code
        member.summary = summary
        member.doc = doc
        return member

    @property
    def is_drift(self) -> bool:
        """Whether the code says a machine differs from its spec (the D codes, A101, A103, A105):
        always an error, exit 1."""
        return self.value[0] == "D" or self in _DRIFT

    @property
    def printed_name(self) -> str:
        """What a report prints beside the code text: a live check's summary, its short name
        (`error[D105 pcie-link]`, `error[I101 input-syntax]`); nothing for the others (`error[E107]`)."""
        return self.summary if self.value[0] in LIVE_CODE_LETTERS else ""

    # reading and YAML (hwspec.source.loader)
    CANNOT_READ_FILE = ("E100", "cannot read the file",
        "The path does not exist, is not readable, holds a NUL character, or is not a regular file "
        "(a directory, FIFO, socket or device is refused before it is read: reading one would block or never end).")
    FILE_TOO_LARGE = ("E101", "file too large", "A platform or parts file is larger than 4 MiB.")
    NOT_UTF8 = ("E102", "not UTF-8 text", "The file is not valid UTF-8, or holds a character YAML does not allow (NUL, other controls).")
    INVALID_YAML = ("E103", "invalid YAML", "A YAML syntax error, a tag (`!!python/...`, `!custom`), a merge key misused, or a "
        "scalar that cannot be read as its tagged type. Platform files are plain data.")
    NON_STRING_KEY = ("E104", "non-string key", "A mapping key that is not a string (`1:`, `true:`, `[a, b]:`).")
    EXPANSION_TOO_LARGE = ("E105", "alias expansion too large", "Anchors and aliases expand to more than 100,000 nodes (a 'billion laughs' file).")
    NESTING_TOO_DEEP = ("E106", "nesting too deep", "Collections nested deeper than 64 levels.")
    DUPLICATE_KEY = ("E107", "duplicate key", "A key appears twice in one mapping (YAML would silently keep the last).")
    NOT_A_PLATFORM_DOCUMENT = ("E108", "not a platform document", "The file is empty, or its top level is not a mapping. The file's text is "
        "never shown (a cluster's `platform:` may name any file).")
    STRING_NOT_ENCODABLE = ("E109", "string not encodable", "A string holds a lone surrogate (a `\"\\ud800\"` escape): no generated file, "
        "terminal or JSON reader can carry it. Write the character itself.")
    # shape and types (hwspec.spec.translate, hwspec.source.expand, hwspec.model.load)
    WRONG_VALUE = ("E110", "wrong value", "A value has the wrong type, unit, range or form; the message says what was expected.")
    MISSING_KEY = ("E111", "missing key", "A required key is missing.")
    UNKNOWN_KEY = ("E112", "unknown key", "A key the spec language does not have; the hint lists the allowed keys and the nearest one.")
    UNKNOWN_KIND = ("E113", "unknown kind", "`kind:` is not `node` or `cluster` (or a node platform was expected).")
    CANNOT_WRITE_FILE = ("E114", "cannot write the file", "An output a command was asked to write (`generate -o DIR`, "
        "`schema -o`, `import -o`, `--plot`) cannot be written: the operating system refused (permission denied, no space "
        "left, a name too long, a directory or a file in the way). The message names the path and the reason; nothing "
        "was put in place, and the old file, if any, is intact (exit 2).")
    BAD_REPEAT_BLOCK = ("E120", "repeat block", "A `repeat:` block or `${...}` expression cannot be expanded (bad range, unknown "
        "variable, not integer arithmetic, too many copies).")
    # references (hwspec.spec.references, hwspec.spec.validate, hwspec.model.load, hwspec.model.resolve_cluster)
    BAD_REFERENCE = ("E201", "bad reference", "A reference names no entry, or an entry of the wrong kind.")
    DUPLICATE_ID = ("E202", "duplicate id", "Two entries share an id (ids are one namespace per file).")
    UNKNOWN_PART = ("E203", "unknown part", "A `part:` not in the catalogue (built-in, `parts/` beside the file, or `--parts DIR`).")
    GPU_WITHOUT_SLOT = ("E204", "GPU without slot", "An NVLink topology placed by baseboard slot, but a GPU has no `slot:`.")
    CLUSTER_NOT_DERIVABLE = ("E205", "cluster cannot be derived", "A cluster's host name or address pattern cannot be expanded (bad "
        "expression, a rendered name longer than 63 characters), or its fabric would be too large.")
    NODE_PLATFORM_UNUSABLE = ("E206", "node platform unusable", "A cluster's node platform file is missing or has errors (reported with it).")
    NODE_PLATFORM_OUTSIDE = ("E207", "node platform outside", "A cluster's node platform is outside the cluster file's directory tree "
        "(symlinks resolved). Move it below, or allow its directory with `--platform-root DIR`.")
    GPU_PART_WITHOUT_C2C = ("E208", "GPU part has no C2C", "A GPU is attached over NVLink-C2C (`c2c: {socket: ..}`), but its part lists no "
        "C2C links: add `c2c: {links: .., link_bandwidth: ..}` to the part (what NVML reports), or drop the GPU's `c2c:`.")
    # rules (hwspec.rules.engine)
    CANNOT_LOAD_RULES = ("E301", "cannot load rules", "A `--rules DIR` is not a directory: a usage error (exit 2). A rule "
        "module in it that fails to import is E900.")
    RULE_CLASH = ("E302", "rule clash", "Two rules share an id or a name.")
    UNKNOWN_RULE = ("E303", "unknown rule", "A platform's `rules:` names a rule that does not exist.")
    RULE_CANNOT_BE_CHANGED = ("E304", "rule cannot be changed", "A platform's `rules:` switches off or lowers a rule that reports what "
        "generation cannot write (the generation rules HW901-HW904 and HW911, and HW101, HW206, HW805, HW810 that report such "
        "limits too): generate would refuse the platform anyway.")
    # estimates (hwspec.perf.estimate)
    TABLES_DO_NOT_FIT = ("E401", "tables do not fit", "`hwspec estimate`/`compare`: a workload's embedding tables need more per GPU than HBM "
        "(the workload's share of it), host DDR and SSD hold.")
    NO_PEAK_FOR_DTYPE = ("E402", "no peak for the dtype", "`hwspec estimate`/`compare`: the workload's compute_dtype has no peak on the "
        "platform's GPUs.")
    UNKNOWN_FIGURES = ("E403", "unknown figures", "`hwspec estimate`/`compare`: the platform says a figure the estimate needs is "
        "unknown (`part: unknown`, a NIC without a speed, a socket's `capacity: unknown`): name the part or give the figure (rule HW603 says where).")
    TOP_MLP_INPUT_MISMATCH = ("E404", "top MLP input is not the interaction's output", "a workload's `top_mlp` starts "
        "with a width other than the interaction's output width (`cat` and `dcnv2`: the bottom MLP's output plus every "
        "table's dim; `dot`: the bottom MLP's output plus F(F-1)/2 pairwise dots of F = tables + 1 features): the MLP FLOPs and the "
        "dense AllReduce would be those of another model.")
    CANNOT_SCALE = ("E405", "cannot scale", "`hwspec estimate --nodes`/`compare`: a cluster cannot be re-sized to the node "
        "count asked (more nodes than its backend's switches have ports for; several node groups, where 'N nodes' does not "
        "say how many of each), or a global batch does not divide into a whole per-GPU batch to hold constant.")
    # fleet reports (hwspec.live.fleet)
    NODE_REPORT_UNREADABLE = ("E601", "node report unreadable", "`hwspec fleet-report`: a node report cannot be read: "
        "no such file (or a directory or pattern with no `*.json` report), not a regular file, larger than 16 MiB, not UTF-8, "
        "or not JSON (located at the syntax error). The node it came from is not counted: look at how its check ran.")
    NOT_A_NODE_REPORT = ("E602", "not a node report", "`hwspec fleet-report`: JSON that is not a version-1 node report "
        "(what `hwspec diff --format json` prints): a key missing or of the wrong type, a status other than clean, drift "
        "or unchecked, an exit code that disagrees with the status, a node name that is not a host name, a newer "
        "`hwspec_report` version, an `acceptance` list that is not one or holds more than 4,096 records. Located at the key; "
        "the report is not counted. A record of `acceptance` of the wrong type or past a bound is one too, at its key (the "
        "first of its report): its run is not counted, the report's other runs are.")
    NODE_REPORTED_TWICE = ("E603", "node reported twice", "`hwspec fleet-report`: a node's report read again, saying the "
        "same (a file named twice, a copy in another directory). The first one read is counted, the later one is not: a warning.")
    REPORT_OF_ANOTHER_NODE = ("E604", "report of another node", "`hwspec fleet-report`: a node report in a file named for "
        "another node. A node's report counts only from its own file, `NODE.json` (`srun --output=reports/%N.json`, the "
        "DaemonSet's `$NODE_NAME.json`), so that no file can speak for other nodes; this one is not counted (exit 1). A file "
        "of several nodes' reports that you collected (`kubectl logs`) is read with `--collected FILE`.")
    REPORTS_DISAGREE = ("E605", "reports disagree", "`hwspec fleet-report`: two reports of one node, or two acceptance "
        "reports of one run (same run, collective, hosts and devices), say different things: which is true cannot be "
        "told. The first one read is counted, the other is not, and the fleet needs a look (exit 1): give only the latest "
        "report of each node and the latest results of each run.")
    # engine and generation (hwspec.rules.engine, hwspec.generate.registry, hwspec.cli.commands)
    RULE_FAILED = ("E900", "rule failed", "A rule raised, called sys.exit, was interrupted, ran past its time limit "
        "(`--rule-time-limit`, default 10 s), changed the working directory (put back) or yielded something that is "
        "not a finding; the message names the rule. Or a rule module failed to import in one of those ways: located "
        "at the failing line, its rules did not run, the other modules' did. What it printed went to stderr. An error "
        "finding (exit 1, 0 with `--exit-zero`): a bug in the rule's file.")
    GENERATION_FAILED = ("E901", "generation failed", "A generator refused a platform that validated clean (a limit no generation rule "
        "reports yet): a bug in hwspec. Nothing was written.")
    OUTPUT_NOT_WRITTEN = ("E902", "output not written", "The output cannot be written: two platforms of one run have the same name (their "
        "files would share a directory), a refused path, or text that is not UTF-8 (an operating-system error is E114). "
        "Nothing of the platform's new set was put in place.")
    INTERNAL_ERROR = ("E903", "internal error", "hwspec itself failed: an unexpected exception ended the command. It "
        "could not check (exit 2, never a finding: a health check does not drain the node on it), `diff`'s json and "
        "prometheus reports say `unchecked`, and one line names the command and the exception. Run it again with "
        "HWSPEC_DEBUG=1 for the traceback, and report it.")
    GENERATOR_FAILED = ("E904", "generator failed", "A site's generator (`--generators DIR`, or an installed package's "
        "entry point in the `hwspec.generators` group) raised, called sys.exit, was interrupted, ran past its time limit "
        "(`--rule-time-limit`, default 10 s, as a rule), changed the working directory (put back) or returned something "
        "that is not a plan (a dict of relative paths the writer accepts to text); or its module failed to import in one "
        "of those ways, located at the failing line. The message names the generator and its file; what it printed went "
        "to stderr. Nothing was written (exit 2): a bug in the generator's file.")
    CANNOT_LOAD_GENERATORS = ("E905", "cannot load generators", "A `--generators DIR` is not a directory, or an entry "
        "point of the `hwspec.generators` group names something other than a module, or a module without generators: "
        "a usage error (exit 2), nothing is generated.")
    GENERATOR_CLASH = ("E906", "generator clash", "Two generators share a name (a site's cannot take a built-in one's): "
        "a usage error (exit 2), nothing is generated.")
    # a live machine against its platform file (hwspec.live.diff), a fleet against its cluster (hwspec.live.cliques)
    MISSING_DEVICE = ("D101", "missing-device", "A socket, GPU or NIC of the spec is not in the machine.")
    EXTRA_DEVICE = ("D102", "extra-device", "The machine has a NUMA node, GPU or NIC the spec does not describe.")
    DEVICE_PLACEMENT = ("D103", "device-placement", "A device sits under another chain of PCIe bridges (or socket) than the spec says.")
    NUMA_NODE = ("D104", "numa-node", "A device is on a different NUMA node than the spec says.")
    PCIE_LINK = ("D105", "pcie-link", "A PCIe link trained slower or narrower than the spec's link.")
    NVLINK_COUNT = ("D106", "nvlink-count", "Fewer NVLinks between two GPUs (or to the NVSwitches) than the spec says, or "
                    "another number from a GPU to its CPU (POWER8/POWER9).")
    NIC_GPU_SWITCH = ("D107", "nic-gpu-switch", "A backend NIC is not under its GPU's PCIe switch.")
    CPU_LIST = ("D108", "cpu-list", "A NUMA node's CPU list differs from the spec.")
    GPUDIRECT = ("D109", "gpudirect", "The spec declares GPUDirect RDMA but the machine cannot do it.")
    NIC_IDENTITY = ("D110", "nic-identity", "A NIC's name or speed differs from the spec.")
    DEVICE_MODEL = ("D111", "device-model", "A device's PCI vendor/device id is not its part's.")
    NIC_PORT = ("D112", "nic-port", "A NIC's port is missing or not up (the inputs list every port: sysfs).")
    NVLINK_CLIQUE = ("D113", "nvlink-clique", "A GPU is in another NVLink domain or clique than the node's other GPUs, its fabric "
        "registration is not Completed, or a multi-node NVLink tray shows no NVLink domain at all.")
    NVLINK_DOMAIN_CLIQUE = ("D114", "nvlink-domain-clique", "`hwspec fleet-report --cluster`: the nodes of one NVLink domain of "
        "the cluster file are in more than one NVLink clique, or one clique holds nodes of two domains (reported at the "
        "cluster's `nvlink_domain`, with each clique's hostlist).")
    # the inputs of `hwspec import` and `hwspec diff` (hwspec.live)
    INPUT_UNREADABLE = ("I100", "input-unreadable", "An input cannot be read: no such file, not readable, larger than "
        "32 MiB, a capture too large or that cannot be written. The input is unusable (exit 2).")
    INPUT_SYNTAX = ("I101", "input-syntax", "An input is not in its format: not well-formed XML (entity declarations are "
        "refused), not `nvidia-smi topo -m` or `nvidia-smi nvlink` output, not NVML's answers as `hwspec capture` saves them, a "
        "sysfs tree that leaves its root, or more GPUs or NICs than one node has. The input is unusable (exit 2).")
    INPUT_IGNORED = ("I102", "input-ignored", "What an input states that hwspec does not describe is ignored (a warning): "
        "an unknown element of an NCCL topology dump, a second NVLink matrix in an hwloc file.")
    INPUT_VALUE = ("I103", "input-value", "A value in an input cannot be read (a CPU list, a bus id, a path type, a link "
        "number) and is left out (a warning).")
    INPUT_CONTRADICTION = ("I104", "input-contradiction", "Two inputs (or two places of one) say different things of one "
        "device: a bus id or NUMA node listed twice, NVLink counts that differ; the first is kept (a warning).")
    # a benchmark run against what its platform should deliver (hwspec.acceptance)
    BELOW_BAND = ("A101", "below-band", "A run of nccl-tests, rccl-tests or nvbandwidth fell below the band hwspec expects of "
        "its platform at a size where the band is judged (bandwidth-bound sizes): drift (exit 1). Located at the platform's "
        "part whose link limits the figure; the message names the run, the size, the measured and expected figures and the "
        "first suspects (`hwspec explain A101`; docs/acceptance.md says how to read one).")
    ABOVE_BOUND = ("A102", "above-bound", "A run measured more than the platform's links can carry at their datasheet rates "
        "(a warning): the platform file understates the machine (more NICs, a faster link) or the run is not what it says "
        "(other nodes, other GPUs).")
    WRONG_RESULTS = ("A103", "wrong-results", "nccl-tests or rccl-tests counted wrong results (`#wrong` above 0): the "
        "collective corrupted data. Drift (exit 1), whatever the bandwidth: look at the GPUs' memory (ECC, Xid errors) "
        "and the links the run crossed.")
    RUN_UNCHECKED = ("A104", "run-unchecked", "A run, or a size of it, that cannot be compared with the platform (a "
        "warning): which collective it is is not said, its ranks do not fit the platform (give `--nodes`, "
        "`--gpus-per-node`), its hosts are not the cluster's, or a figure it needs has no cited measurement. When no "
        "size of any run could be judged, diff could not check (exit 2).")
    SLOW_IN_EVERY_RUN = ("A105", "slow-in-every-run", "`hwspec fleet-report`: a node, NIC or leaf that was below its band "
        "in every acceptance run it joined, two runs or more that do not come down to one other party (a node or NIC with "
        "two partners or more, a leaf none of whose nodes joined all its runs): the first place to look (drift, exit 1). "
        "Located at the first size below the band of its first slow run; docs/fleet.md says how to read it.")


_DRIFT = frozenset({Code.BELOW_BAND, Code.WRONG_RESULTS, Code.SLOW_IN_EVERY_RUN})
"""The acceptance codes that are drift (`Code.is_drift`); every D code is."""

LIVE_CODE_LETTERS = "DIA"
"""The first letter of the live checks' codes, whose summary a report prints beside them."""

_BY_TEXT = {code.value: code for code in Code}


def lookup(text: str) -> Code | None:
    """The code `text` names (any case, surrounding blanks ignored), or None."""
    return _BY_TEXT.get(text.strip().upper())
