"""Source maps: where the entries of a resolved model are written in their YAML file.

The model (`hwspec.model.node`) and the cluster model hold a source map instead of the YAML
layer's documents, so they do not import `hwspec.source.loader`/`hwspec.source.expand`. A source map turns
an entity id and field names into a `Location` (file, line, column; 1-based), following
repeat-expanded entries back to their template line.
"""

from __future__ import annotations

from collections.abc import Mapping

from hwspec.diagnostics import Location
from hwspec.source.expand import Expanded, Provenance
from hwspec.source.loader import Path_, SourceDoc


class DocumentSourceMap:
    """Positions in one expanded document. `entity_paths` maps ids to their data path
    (`gpu0` -> `("gpus", 0)`); an id not in it is read as a top-level key."""

    def __init__(self, doc: SourceDoc, expanded: Expanded, entity_paths: Mapping[str, Path_] | None = None,
                 inherited: Mapping[str, tuple[Path_, frozenset[str]]] | None = None):
        self.doc = doc
        self.expanded = expanded
        self.entity_paths = dict(entity_paths or {})
        self.inherited = dict(inherited or {})
        """Entity -> (its owner's path, the fields it has of its own): a NIC card's port, whose
        part, link and role are written on the card."""

    @property
    def file(self) -> str:
        return self.doc.file

    def path_of(self, entity: str | None, *fields: str | int) -> Path_:
        """The data path of `entity` (None: the file top) and `fields`."""
        if entity is None:
            return tuple(fields)
        if fields and entity in self.inherited and fields[0] not in self.inherited[entity][1]:
            return tuple(self.inherited[entity][0]) + tuple(fields)
        return tuple(self.entity_paths.get(entity, (entity,))) + tuple(fields)

    def at(self, path: Path_) -> Location:
        """Where the data path `path` is written."""
        return self.doc.locate(self.expanded.written_path(tuple(path)))

    def locate(self, entity: str | None = None, *fields: str | int) -> Location:
        return self.at(self.path_of(entity, *fields))

    def locate_key(self, entity: str | None = None, *fields: str | int) -> Location:
        """Where the key of `entity`'s `fields` is written (the key's line, not its value's), as
        `locate` when there is no key."""
        return self.doc.locate_key(self.expanded.written_path(self.path_of(entity, *fields)))

    def provenance(self, entity: str, *fields: str | int) -> Provenance | None:
        if entity in self.inherited and (not fields or fields[0] not in self.inherited[entity][1]):
            own = self.expanded.provenance.get(tuple(self.entity_paths.get(entity, ())) + tuple(fields))
            return own or self.expanded.provenance.get(tuple(self.inherited[entity][0]) + tuple(fields))
        return self.expanded.provenance.get(tuple(self.entity_paths.get(entity, ())) + tuple(fields))
