"""Edited, unchanged and removed files: what one ``index`` run adds, replaces and prunes.

A document is a version of its **key**: the absolute path of the file it was read from
(every record of a ``.json``/``.jsonl`` corpus shares its file's key) or the ``--id`` given.
Re-indexing a key whose content changed replaces the documents stored under it: the old
version is marked deleted and the new one stored in one SQLite transaction
(:meth:`paretorag.storage.store.Store.replace_documents`), and the next commit serves only the new
version. Until that commit the index serves the old one, so a run killed anywhere leaves
exactly one version answering. With ``prune``, documents whose file under one of the given
folders is gone are removed in the same commit.

Documents stored before keys existed (``doc_key`` NULL) are matched by their ``source``.
Two files with the same name and text are one document (its id is a content hash); it keeps
the key of the file that stored it first. The id changes with every edit; the key does not,
so ``delete`` takes either (:func:`ids_named`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..storage.store import Store
from ..types import Document
from .files import document_key


@dataclass
class UpdatePlan:
    """What a run stores, replaces and prunes, and how it counts documents.

    ``added``: new keys (or new records of a corpus file); ``updated``: new versions of stored
    keys; ``unchanged``: documents already committed; ``removed``: documents of a key that
    are not in its new version any more, and pruned ones. Counts compare with the last commit,
    so a run that finishes one that was killed counts what that one stored.
    """

    docs: list[Document] = field(default_factory=list)
    replaces: dict[str, list[str]] = field(default_factory=dict)  # key -> live ids its new version replaces
    prune: list[str] = field(default_factory=list)  # live ids whose files are gone
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0

    @property
    def deletes(self) -> bool:
        return any(self.replaces.values()) or bool(self.prune)


def stored_key(key: str | None, source: str, presplit: bool, seen: dict[str, str] | None = None) -> str:
    """The key of a stored document: its own, or for one stored before keys existed, the
    absolute path of its ``source`` (without a corpus record's ``#n``; ``seen`` caches the
    paths already resolved, as the records of a corpus file share one)."""
    if key is not None:
        return key
    if presplit and "#" in source:
        source = source.rpartition("#")[0]
    if seen is not None and source in seen:
        return seen[source]
    try:
        found = str(Path(source).resolve())
    except (OSError, ValueError):
        found = source
    if seen is not None:
        seen[source] = found
    return found


def ids_named(store: Store, name: str) -> list[str]:
    """The stored documents ``name`` names, as ``delete`` reads it (empty when none).

    In order, the first that matches: a document id; a key (an ``--id``, or a file's path
    resolved as ``index`` resolves it, :func:`paretorag.ingest.files.document_key`); the file the
    documents were read from (documents indexed with ``--id``, or before keys existed).
    Live documents are preferred; those of an unfinished delete match when no live one does,
    so that the delete can be run again.
    """
    rows = store.keyed_documents()
    if any(doc_id == name for doc_id, *_ in rows):
        return [name]
    if not name.strip():
        return []
    path = document_key(name)
    resolved: dict[str, str] = {}
    tiers = (
        [r for r in rows if r[1] == name],
        [r for r in rows if stored_key(r[1], r[2], r[3], resolved) == path],
        [r for r in rows if r[1] is not None and stored_key(None, r[2], r[3], resolved) == path],
    )
    for tier in tiers:
        live = [doc_id for doc_id, _, _, _, deleted in tier if not deleted]
        if live or tier:
            return live or [doc_id for doc_id, *_ in tier]
    return []


def plan_updates(
    store: Store, committed: set[str], docs: Sequence[Document], prune: Iterable[str | Path] = ()
) -> UpdatePlan:
    """The plan of one run over ``docs`` (as read), against the stored and ``committed`` ids."""
    plan = UpdatePlan()
    seen: set[str] = set()
    groups: dict[str, list[str]] = {}
    for d in docs:
        if d.doc_id not in seen:  # a file named twice, or two files with the same name and text
            seen.add(d.doc_id)
            plan.docs.append(d)
            groups.setdefault(d.key, []).append(d.doc_id)
    live_by_key: dict[str, list[str]] = {}
    committed_by_key: dict[str, set[str]] = {}
    folders = [str(Path(p).resolve()) for p in prune]
    # documents given without a key (RAG.index(documents)) and no prune: no stored key matters
    rows = store.keyed_documents() if folders or any(groups) else []
    resolved: dict[str, str] = {}
    for doc_id, key, source, presplit, deleted in rows:
        k = stored_key(key, source, presplit, resolved)
        if not deleted:
            live_by_key.setdefault(k, []).append(doc_id)
        if doc_id in committed:
            committed_by_key.setdefault(k, set()).add(doc_id)
    for key, ids in groups.items():
        before = committed_by_key.get(key, set()) if key else set()
        fresh = [i for i in ids if i not in committed]
        gone = before - seen  # a document moved to another file of this run is not gone
        updated = min(len(fresh), len(gone))
        plan.updated += updated
        plan.added += len(fresh) - updated
        plan.removed += len(gone) - updated
        plan.unchanged += len(ids) - len(fresh)
        old = [i for i in live_by_key.get(key, []) if i not in seen] if key else []
        if old:
            plan.replaces[key] = old
    for key, ids in live_by_key.items():
        if key in groups or not any(key.startswith(f + os.sep) for f in folders):
            continue
        if not os.path.exists(key):
            gone_ids = [i for i in ids if i not in seen]
            plan.prune.extend(gone_ids)
            plan.removed += len([i for i in gone_ids if i in committed])
    return plan
