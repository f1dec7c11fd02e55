"""Every loader, engine and generation code hwspec reports, in one registry.

Rule findings carry the rule's id (`HW201`); everything else carries one of these codes.
`hwspec explain E105` prints an entry, the README lists them all, and a test checks that every
code the source reports is here (and every code here is in the README).

Exit status by code: E100-E108 mean the file could not be read or parsed (exit 2, as do E301
and E302 and the generation codes E901-E902); the others are error findings (exit 1).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Code:
    """One code: `title` (a few words, as listed) and `doc` (what it means and what to do)."""

    code: str
    title: str
    doc: str


_ENTRIES = [
    # reading and YAML (hwspec/source.py)
    ("E100", "cannot read the file",
     "The path does not exist, is not readable, holds a NUL character, or is not a regular file "
     "(a directory, FIFO, socket or device is refused before it is read: reading one would block or never end)."),
    ("E101", "file too large", "A platform or parts file is larger than 4 MiB."),
    ("E102", "not UTF-8 text", "The file is not valid UTF-8, or holds a character YAML does not allow (NUL, other controls)."),
    ("E103", "invalid YAML", "A YAML syntax error, a tag (`!!python/...`, `!custom`), a merge key misused, or a "
     "scalar that cannot be read as its tagged type. Platform files are plain data."),
    ("E104", "non-string key", "A mapping key that is not a string (`1:`, `true:`, `[a, b]:`)."),
    ("E105", "alias expansion too large", "Anchors and aliases expand to more than 100,000 nodes (a 'billion laughs' file)."),
    ("E106", "nesting too deep", "Collections nested deeper than 64 levels."),
    ("E107", "duplicate key", "A key appears twice in one mapping (YAML would silently keep the last)."),
    ("E108", "not a platform document", "The file is empty, or its top level is not a mapping. The file's text is "
     "never shown (a cluster's `platform:` may name any file)."),
    ("E109", "string not encodable", "A string holds a lone surrogate (a `\"\\ud800\"` escape): no generated file, "
     "terminal or JSON reader can carry it. Write the character itself."),
    # shape and types (hwspec/errors.py, spec.py)
    ("E110", "wrong value", "A value has the wrong type, unit, range or form; the message says what was expected."),
    ("E111", "missing key", "A required key is missing."),
    ("E112", "unknown key", "A key the spec language does not have; the hint lists the allowed keys and the nearest one."),
    ("E113", "unknown kind", "`kind:` is not `node` or `cluster` (or a node platform was expected)."),
    ("E120", "repeat block", "A `repeat:` block or `${...}` expression cannot be expanded (bad range, unknown "
     "variable, not integer arithmetic, too many copies)."),
    # references (hwspec/load.py, cluster.py)
    ("E201", "bad reference", "A reference names no entry, or an entry of the wrong kind."),
    ("E202", "duplicate id", "Two entries share an id (ids are one namespace per file)."),
    ("E203", "unknown part", "A `part:` not in the catalogue (built-in, `parts/` beside the file, or `--parts DIR`)."),
    ("E204", "GPU without slot", "An NVLink topology placed by baseboard slot, but a GPU has no `slot:`."),
    ("E205", "cluster cannot be derived", "A cluster's host name or address pattern cannot be expanded (bad "
     "expression, a rendered name longer than 63 characters), or its fabric would be too large."),
    ("E206", "node platform unusable", "A cluster's node platform file is missing or has errors (reported with it)."),
    ("E207", "node platform outside", "A cluster's node platform is outside the cluster file's directory tree "
     "(symlinks resolved). Move it below, or allow its directory with `--platform-root DIR`."),
    ("E208", "GPU part has no C2C", "A GPU is attached over NVLink-C2C (`c2c: {socket: ..}`), but its part lists no "
     "C2C links: add `c2c: {links: .., link_bandwidth: ..}` to the part (what NVML reports), or drop the GPU's `c2c:`."),
    # rules (hwspec/rules.py)
    ("E301", "cannot load rules", "A `--rules DIR` is not a directory, or a rule module failed to import (an "
     "exception, sys.exit, an interrupt, or running past the time limit at import)."),
    ("E302", "rule clash", "Two rules share an id or a name."),
    ("E303", "unknown rule", "A platform's `rules:` names a rule that does not exist."),
    ("E304", "rule cannot be changed", "A platform's `rules:` switches off or lowers a rule that reports what "
     "generation cannot write (the generation rules HW901-HW903 and HW911, and HW101, HW206, HW805 that report such "
     "limits too): generate would refuse the platform anyway."),
    # estimates (hwspec/estimate.py)
    ("E401", "tables do not fit", "`hwspec estimate`/`compare`: a workload's embedding tables need more per GPU than HBM "
     "(the workload's share of it), host DDR and SSD hold."),
    ("E402", "no peak for the dtype", "`hwspec estimate`/`compare`: the workload's compute_dtype has no peak on the "
     "platform's GPUs."),
    # engine and generation
    ("E900", "rule failed", "A rule raised, called sys.exit, was interrupted, ran past its time limit "
     "(`--rule-time-limit`, default 10 s) or yielded something that is not a finding. The message names the "
     "rule; what it printed went to stderr. A bug in the rule's file."),
    ("E901", "generation failed", "A generator refused a platform that validated clean (a limit no generation rule "
     "reports yet): a bug in hwspec. Nothing was written."),
    ("E902", "output not written", "The output cannot be written: two platforms of one run have the same name (their "
     "files would share a directory), a refused path, text that is not UTF-8, or an operating-system error "
     "(permissions, disk full). Nothing of the platform's new set was put in place."),
]

CODES: dict[str, Code] = {code: Code(code, title, doc) for code, title, doc in _ENTRIES}
"""Every code, by code."""


def lookup(text: str) -> Code | None:
    """The entry for `text` (any case), or None."""
    return CODES.get(text.strip().upper())
