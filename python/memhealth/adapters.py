"""Adapters between memhealth records and two agent memory systems, in pure Python.

- **mem0** (``Memory.get_all()`` / ``MemoryClient.get_all()``): a list of memories, or
  ``{"results": [...], ...}``; each memory has ``id``, ``memory`` (the text), ``hash``,
  ``metadata``, ``created_at``, ``updated_at`` and ``user_id`` / ``agent_id`` / ``run_id``.
  ``from_mem0`` reads it through the library's importer (io/import_mem0.hpp: the same mapping as
  ``memhealth import --from mem0``: scope ``user:<u>/agent:<a>/run:<r>``, hash in metadata
  ``mem0_hash``, every record ``active``, ``model_extracted``, ``fact``). mem0 has no status or
  link fields: ``to_mem0`` writes them into the memory's metadata under ``memhealth_status``,
  ``memhealth_duplicate_of``, ``memhealth_supersedes``, ``memhealth_related_ids`` and
  ``memhealth_effective_weight`` (filter searches with ``filters={"memhealth_status":
  "active"}``), and ``from_mem0`` reads them back. Nothing is deleted: an archived memory stays
  in mem0 with its status in metadata.
- **LangGraph** stores (``BaseStore.search`` / ``list`` results): ``Item`` objects (or dicts) with
  ``namespace`` (a tuple of strings), ``key``, ``value`` (a dict), ``created_at`` and
  ``updated_at`` (datetimes). A record's id is the namespace and key joined by "/", its scope
  the namespace joined by "/", its content ``value["content"]`` (or ``"text"``, ``"memory"``,
  ``"data"``; LangMem's ``{"content": {"content": ...}}`` too; else the value as JSON). Value keys
  named like record fields (status, source, kind, duplicate_of, supersedes, related_ids,
  confidence, effective_weight, ...) are taken as those fields. The original value, namespace
  and key are kept in metadata (``langgraph_value``, ``langgraph_namespace``, ``langgraph_key``)
  so that ``to_langgraph`` gives back ``(namespace, key, value)`` with the value as it was plus
  ``status``, ``duplicate_of``, ``supersedes``, ``related_ids`` and ``effective_weight`` set by the
  repairs: ``store.put(namespace, key, value)`` writes them (``put_langgraph`` does).

LangGraph Items and mem0 results carry no vectors: pass ``embeddings`` (one row per memory, in
order) or an ``embedder``.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from . import Records, _default, _m

_LINK_FIELDS = ("duplicate_of", "supersedes", "related_ids")
_MEM0_KEYS = {
    "status": "memhealth_status",
    "duplicate_of": "memhealth_duplicate_of",
    "supersedes": "memhealth_supersedes",
    "related_ids": "memhealth_related_ids",
    "effective_weight": "memhealth_effective_weight",
}

# ------------------------------------------------------------------ mem0


def _mem0_list(result: Any) -> List[Mapping[str, Any]]:
    if isinstance(result, Mapping):
        if "results" not in result:
            raise ValueError("from_mem0: expected a list of memories or {'results': [...]}")
        memories = list(result["results"])
    else:
        memories = list(result)
    # mem0 gives updated_at None for a memory never updated: its last update is its creation
    # (otherwise every such record is an error-severity timestamp_inconsistent finding)
    out = []
    for m in memories:
        if isinstance(m, Mapping) and m.get("updated_at") is None and m.get("created_at"):
            m = dict(m)
            m["updated_at"] = m["created_at"]
        out.append(m)
    return out


def from_mem0(result: Any, embeddings: Any = None, *, embedder: Any = None) -> Records:
    """Records from a mem0 ``get_all()`` result (see the module comment)."""
    memories = _mem0_list(result)
    text = json.dumps(memories, default=_default, ensure_ascii=False)
    recs = Records._wrap(_m._records_from_mem0(text, embeddings=embeddings, embedder=embedder))
    if not any(isinstance(m.get("metadata"), Mapping) and
               any(k in m["metadata"] for k in _MEM0_KEYS.values()) for m in memories):
        return recs
    # status and links that to_mem0 wrote: back into their fields
    dicts = recs.to_dicts()
    for d in dicts:
        md = d.get("metadata") or {}
        for field, key in _MEM0_KEYS.items():
            if key in md:
                d[field] = md.pop(key)
        d["metadata"] = md
    return Records(dicts, dimension=recs.dimension)


def to_mem0(records: Records) -> List[Dict[str, Any]]:
    """For each record, the arguments of mem0's ``update``: ``{"memory_id", "text", "metadata"}``
    with the record's status and links in metadata (see the module comment)."""
    out = []
    for d in records.to_dicts():
        md = dict(d.get("metadata") or {})
        md.pop("mem0_hash", None)  # mem0 computes its own hash
        md["memhealth_status"] = d.get("status", "active")
        for field in _LINK_FIELDS:
            if d.get(field):
                md[_MEM0_KEYS[field]] = d[field]
            else:
                md.pop(_MEM0_KEYS[field], None)
        if d.get("effective_weight") is not None:
            md["memhealth_effective_weight"] = d["effective_weight"]
        out.append({"memory_id": d["id"], "text": d.get("content", ""), "metadata": md})
    return out


# ------------------------------------------------------------------ LangGraph

_CONTENT_KEYS = ("content", "text", "memory", "data")
_RECORD_VALUE_KEYS = ("embedding_version", "source", "status", "kind", "duplicate_of",
                      "related_ids", "related_notes", "supersedes", "confidence",
                      "effective_weight", "last_accessed_at", "claim")


def _item_fields(item: Any) -> Tuple[Tuple[str, ...], str, Dict[str, Any], Any, Any]:
    get = item.get if isinstance(item, Mapping) else (lambda k, d=None: getattr(item, k, d))
    ns = tuple(get("namespace") or ())
    key = get("key")
    value = get("value") or {}
    if key is None or not isinstance(value, Mapping):
        raise ValueError("from_langgraph: an item needs a key and a dict value")
    return ns, str(key), dict(value), get("created_at"), get("updated_at")


def _content_of(value: Mapping[str, Any]) -> str:
    for k in _CONTENT_KEYS:
        v = value.get(k)
        if isinstance(v, str):
            return v
        if isinstance(v, Mapping) and isinstance(v.get("content"), str):  # LangMem
            return v["content"]
    return json.dumps(value, default=_default, ensure_ascii=False, sort_keys=True)


def langgraph_record(item: Any) -> Dict[str, Any]:
    """One LangGraph ``Item`` (or dict of its fields) as a record dict."""
    ns, key, value, created, updated = _item_fields(item)
    r: Dict[str, Any] = {
        "id": "/".join(ns + (key,)),
        "content": _content_of(value),
        "scope": "/".join(ns),
        "metadata": {"langgraph_namespace": list(ns), "langgraph_key": key,
                     "langgraph_value": json.loads(json.dumps(value, default=_default))},
    }
    for k in _RECORD_VALUE_KEYS:
        if k in value:
            r[k] = value[k]
    r.setdefault("status", "active")
    if created is not None:
        r["created_at"] = created
    if updated is not None:
        r["updated_at"] = updated
    return r


def from_langgraph(items: Iterable[Any], embeddings: Any = None, *, embedder: Any = None,
                   dimension: int = 0) -> Records:
    """Records from LangGraph store items (``store.search(...)`` / ``list`` results)."""
    return Records([langgraph_record(i) for i in items], embeddings, dimension=dimension,
                   embedder=embedder)


def to_langgraph(records: Records) -> List[Tuple[Tuple[str, ...], str, Dict[str, Any]]]:
    """``(namespace, key, value)`` per record, for ``store.put``: the original value with the
    record's ``status``, ``duplicate_of``, ``supersedes``, ``related_ids`` and
    ``effective_weight`` written into it (empty links removed)."""
    out = []
    for d in records.to_dicts():
        md = d.get("metadata") or {}
        if "langgraph_key" in md:
            ns = tuple(md.get("langgraph_namespace") or ())
            key = md["langgraph_key"]
            value = copy.deepcopy(md.get("langgraph_value") or {})
        else:  # a record that did not come from LangGraph: its scope is the namespace
            ns = tuple(p for p in d.get("scope", "").split("/") if p)
            key = d["id"]
            value = {"content": d.get("content", "")}
        value["status"] = d.get("status", "active")
        for field in _LINK_FIELDS:
            if d.get(field):
                value[field] = d[field]
            else:
                value.pop(field, None)
        if d.get("effective_weight") is not None:
            value["effective_weight"] = d["effective_weight"]
        out.append((ns, key, value))
    return out


def put_langgraph(store: Any, records: Records, only: Optional[Sequence[str]] = None) -> int:
    """Writes ``to_langgraph(records)`` with ``store.put(namespace, key, value)``; ``only``
    limits it to these record ids (e.g. those a repair changed). Returns the number written."""
    keep = set(only) if only is not None else None
    n = 0
    for ns, key, value in to_langgraph(records):
        if keep is not None and "/".join(ns + (key,)) not in keep:
            continue
        store.put(ns, key, value)
        n += 1
    return n


__all__ = ["from_langgraph", "from_mem0", "langgraph_record", "put_langgraph", "to_langgraph",
           "to_mem0"]
