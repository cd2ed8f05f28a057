"""memhealth: check and repair an AI agent's long-term memory store, from Python.

A thin layer over the compiled extension ``memhealth._memhealth`` (pybind11), which calls the
header-only C++20 library: the same detection pipeline, planner, write-ahead-logged executor,
rollback, recovery, retrieval monitor, drift test, migration gate and write-time gate as the
``memhealth`` command-line tool. C++ work runs with the GIL released.

Records are dicts with the JSONL field names of the library's io/ layer (docs/format.md): ``id``,
``content``, ``embedding``, ``embedding_version``, ``metadata``, ``created_at``, ``updated_at``,
``last_accessed_at``, ``source``, ``scope``, ``status``, ``kind``, ``claim``, ``duplicate_of``,
``related_ids``, ``related_notes``, ``supersedes``, ``confidence``, ``effective_weight``; other
keys are kept and written back. Embeddings may instead be one ``n x d`` float32 NumPy array (row
i = record i), read in place without a copy.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from . import _memhealth as _m
from ._memhealth import (  # noqa: F401  (re-exported)
    BusyError,
    Error,
    InvalidArgumentError,
    IoError,
    NotFoundError,
    ParseError,
    PreconditionError,
    SchemaError,
)

__version__: str = _m.__version__

#: The record fields of the JSONL format, in the library's order (io/record_keys.hpp).
RECORD_FIELDS = (
    "id", "content", "embedding", "embedding_version", "metadata", "created_at", "updated_at",
    "last_accessed_at", "source", "scope", "status", "kind", "claim", "duplicate_of",
    "related_ids", "related_notes", "supersedes", "confidence", "effective_weight",
)


def _default(o: Any) -> Any:
    """JSON for what json cannot write: datetimes (ISO-8601), NumPy values, tuples and sets."""
    if hasattr(o, "isoformat"):
        return o.isoformat()
    if hasattr(o, "tolist"):
        return o.tolist()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    raise TypeError(f"memhealth: cannot write a {type(o).__name__} into a record")


_encode = json.JSONEncoder(
    default=_default, ensure_ascii=False, separators=(",", ":"), check_circular=False
).encode


def _jsonl(records: Iterable[Mapping[str, Any]]) -> str:
    out = []
    for r in records:
        if not isinstance(r, Mapping):
            raise TypeError(f"memhealth: a record must be a dict, got {type(r).__name__}")
        out.append(_encode(r))
    return "\n".join(out)


class CallableEmbedder:
    """An embedder from a function: ``fn(texts: list[str]) -> array (len(texts) x dimension)``.

    Any object with ``dimension`` (int), ``version`` (str) and ``embed(texts)`` is an embedder
    (e.g. a wrapper around a sentence-transformers model); this is the shortest way to make one.
    """

    def __init__(self, fn: Callable[[List[str]], Any], dimension: int, version: str):
        self.fn = fn
        self.dimension = int(dimension)
        self.version = str(version)

    def embed(self, texts: List[str]) -> Any:
        return self.fn(texts)


class Records:
    """Records in memory: the store every function works on (repairs change it in place).

    ``Records(dicts)`` reads a list of dicts (embeddings, when given in the dicts, of the most
    common length, or ``dimension``). ``Records(dicts, embeddings)`` takes the vectors from one
    ``n x d`` array instead (row i = record i): C-contiguous float32 is read in place through the
    buffer protocol (no copy; keep the array unchanged while the records live); any other array
    is copied once, with a ``RuntimeWarning``. ``embedder`` (an object with ``dimension``,
    ``version`` and ``embed(texts)``) fills the embeddings of records without one.

    Raises ValueError for an array that is not 2-dimensional or has another row count.
    """

    def __init__(
        self,
        records: Iterable[Mapping[str, Any]] = (),
        embeddings: Any = None,
        *,
        dimension: int = 0,
        embedder: Any = None,
    ):
        self._h = _m._records_from_dicts(
            records, embeddings=embeddings, dimension=dimension, embedder=embedder,
            fallback=_default,
        )

    @classmethod
    def _wrap(cls, handle: Any) -> "Records":
        r = cls.__new__(cls)
        r._h = handle
        return r

    @classmethod
    def load(cls, path: Union[str, os.PathLike], *, dimension: int = 0) -> "Records":
        """Reads a JSONL store file (the tool's format). Bad lines become ``load_issues``."""
        return cls._wrap(_m._records_from_file(os.fspath(path), dimension=dimension))

    def __len__(self) -> int:
        return len(self._h)

    def __repr__(self) -> str:
        return f"<memhealth.Records {len(self)} records, dimension {self.dimension}>"

    @property
    def dimension(self) -> int:
        """Embedding dimension d of the store's block (0 = no embeddings)."""
        return self._h.dimension

    @property
    def borrows_embeddings(self) -> bool:
        """True while the embeddings are the caller's array, read in place."""
        return self._h.borrows_embeddings

    @property
    def load_issues(self) -> List[Dict[str, Any]]:
        """Problems met reading the records (file, line, field, reason, record_kept)."""
        return self._h.load_issues

    @property
    def ids(self) -> List[str]:
        """Record ids, in order."""
        return self._h.ids()

    def to_jsonl(self) -> str:
        """Every record as canonical JSONL (embeddings included)."""
        return self._h.to_jsonl()

    def to_dicts(self) -> List[Dict[str, Any]]:
        """Every record as a dict with the JSONL field names (embeddings included)."""
        return [json.loads(line) for line in self.to_jsonl().splitlines()]

    def __getitem__(self, i: Union[int, str]) -> Dict[str, Any]:
        """The record at position ``i``, or the record whose id is ``i`` (KeyError if none)."""
        if isinstance(i, str):
            try:
                i = self.ids.index(i)
            except ValueError:
                raise KeyError(i) from None
        if i < 0:
            i += len(self)
        return json.loads(self._h.record_json(i))

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Writes the records as JSONL."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_jsonl())

    def _block_address(self) -> int:
        """Debug: address of the embedding block the C++ side reads (zero-copy tests)."""
        return self._h._block_address()

    def _units_address(self) -> tuple:
        """Debug: (address of the unit embeddings detection reads, read in place?)."""
        return self._h._units_address()


def _records(records: Union[Records, Iterable[Mapping[str, Any]]]) -> Records:
    return records if isinstance(records, Records) else Records(records)


@dataclass(frozen=True)
class Finding:
    """One finding: ``kind``, ``severity`` (info, warning, error, critical), the ``detector``,
    the ``record_ids`` involved (a cluster lists its primary first), ``evidence`` (a dict; a key
    given more than once holds a list) and the ``suggested_repair``."""

    kind: str
    severity: str
    detector: str
    record_ids: List[str]
    evidence: Dict[str, Any]
    suggested_repair: str

    @classmethod
    def _from(cls, d: Mapping[str, Any]) -> "Finding":
        return cls(d["kind"], d["severity"], d["detector"], list(d["record_ids"]),
                   dict(d["evidence"]), d["suggested_repair"])


@dataclass
class Report:
    """The result of ``check``: ``findings``, the ``summary`` (counts by kind and severity),
    ``load_issues``; ``to_json()`` is the library's report JSON (``memhealth check --format
    json``)."""

    findings: List[Finding]
    summary: Dict[str, Any]
    load_issues: List[Dict[str, Any]]
    _json: str = field(repr=False)
    _handle: Any = field(repr=False, default=None)

    def to_json(self) -> str:
        return self._json

    def count(self, kind: str) -> int:
        """Number of findings of a kind."""
        return sum(1 for f in self.findings if f.kind == kind)

    def of_kind(self, kind: str) -> List[Finding]:
        return [f for f in self.findings if f.kind == kind]


def check(records: Union[Records, Iterable[Mapping[str, Any]]], **settings: Any) -> Report:
    """Runs the default detection pipeline (what ``memhealth check`` runs); never changes the
    records.

    Settings (all optional): ``near_duplicate_threshold`` (cosine, 0.92),
    ``near_duplicate_window`` (seconds or timedelta; None = any), ``conflict_candidate_threshold``
    (0.6), ``expect_unit_norm`` (True), ``stale_threshold`` (0.2), ``max_pairs_per_scope``,
    ``block_scopes_above`` (50000), ``threads`` (1), ``duplicate_guards`` (True), ``schema`` (path
    of a metadata schema JSON), ``now`` (ISO-8601 text or datetime; default now), ``dimension``,
    ``hygiene_off`` (names: secrets, mojibake, content_size, content_time), ``judge`` (a callable
    ``judge(a, b, rules) -> None | bool | dict`` asked about the text pairs the rules leave open;
    ``judge_all=True`` asks it about every candidate pair). An exception the judge raises is
    raised here. Unknown settings raise TypeError.
    """
    r = _records(records)
    h = _m._check(r._h, **settings)
    doc = json.loads(h.json)
    return Report([Finding._from(f) for f in doc["findings"]], doc["summary"],
                  doc["load_issues"], h.json, h)


def check_json(records: Union[Records, Iterable[Mapping[str, Any]]], **settings: Any) -> str:
    """``check`` as the library's report JSON text."""
    return check(records, **settings).to_json()


class Plan:
    """A repair plan (``memhealth plan``'s JSON); ``actions`` lists its actions as dicts."""

    def __init__(self, handle: Any):
        self._h = handle

    @classmethod
    def from_json(cls, text: str) -> "Plan":
        return cls(_m._Plan.from_json(text))

    def to_json(self) -> str:
        return self._h.to_json()

    def __len__(self) -> int:
        return len(self._h)

    @property
    def suspended(self) -> bool:
        return self._h.suspended

    @property
    def actions(self) -> List[Dict[str, Any]]:
        return json.loads(self.to_json())["actions"]


def plan(
    records: Records,
    report: Optional[Report] = None,
    *,
    max_records: int = 1000,
    blast_radius: int = 500,
    metadata_defaults: Optional[Mapping[str, str]] = None,
    **settings: Any,
) -> Plan:
    """Plans repairs for the findings of ``report`` (``check(records, **settings)`` when None)
    against the records (read only)."""
    records = _records(records)
    if report is None:
        report = check(records, **settings)
    elif settings:
        raise TypeError("plan: settings are for the check; pass them to check() instead")
    return Plan(_m._plan(records._h, report._handle, max_records, blast_radius,
                         dict(metadata_defaults or {})))


def apply(
    records: Records,
    plan: Plan,
    wal: Union[str, os.PathLike],
    *,
    approve: Sequence[str] = (),
    batch_size: int = 16,
    max_records: int = 1000,
    dry_run: bool = False,
    embedder: Any = None,
    embed_version: str = "",
) -> Dict[str, Any]:
    """Applies a plan to the records in place, through the write-ahead log at ``wal`` (created or
    appended to). ``approve``: "tier2", "tier3", "suspended". ``embedder`` re-embeds the records
    of ``reembed`` actions. Returns the outcome lists (idempotency keys) and per-action
    outcomes."""
    if isinstance(approve, str):
        approve = [approve]
    # an exception the embedder raises fails its action in C++ (the action is not applied); it is
    # raised here afterwards, as itself, so that it is not lost
    watched = _WatchedEmbedder(embedder) if embedder is not None else None
    result = _m._apply(records._h, plan._h, os.fspath(wal), list(approve), batch_size,
                       max_records, dry_run, watched, embed_version)
    if watched is not None and watched.error is not None:
        raise watched.error
    return result


class _WatchedEmbedder:
    """An embedder that remembers the first exception its ``embed`` raised."""

    def __init__(self, inner: Any):
        self._inner = inner
        self.error: Optional[BaseException] = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def embed(self, texts: Any) -> Any:
        try:
            return self._inner.embed(texts)
        except BaseException as e:
            if self.error is None:
                self.error = e
            raise


def rollback(records: Records, wal: Union[str, os.PathLike], *, force: bool = False) -> Dict[str, Any]:
    """Undoes every committed action of the log on the records (before-images written back);
    records changed since are conflicts, left alone unless ``force``."""
    return _m._rollback(records._h, os.fspath(wal), force)


def recover(records: Records, wal: Union[str, os.PathLike], *, policy: str = "undo",
            force: bool = False) -> Dict[str, Any]:
    """Brings the records to a consistent state after an interrupted apply: open actions undone
    (``policy="undo"``) or finished (``"redo"``)."""
    return _m._recover(records._h, os.fspath(wal), policy, force)


def _events_text(events: Any) -> str:
    if events is None:
        return ""
    if isinstance(events, (str, os.PathLike)):
        with open(events, encoding="utf-8") as f:
            return f.read()
    return _jsonl(events)


def _with_findings(doc: Dict[str, Any]) -> Dict[str, Any]:
    doc["findings"] = [Finding._from(f) for f in doc["findings"]]
    return doc


def monitor(records: Records, events: Any, *, baseline: Any = None, window: float = 3600.0,
            top_k: int = 10, min_retrievals: int = 10, threshold: float = 0.92) -> Dict[str, Any]:
    """Windowed retrieval-quality metrics and alerts (``memhealth monitor``). ``events``: a list
    of event dicts (docs/format.md: retrieval and feedback events) or a JSONL file path;
    ``baseline`` likewise (None = rolling). ``window`` in seconds."""
    return _with_findings(json.loads(_m._monitor(
        records._h, _events_text(events), _events_text(baseline), float(window), top_k,
        min_retrievals, threshold)))


def drift(reference: Any, current: Any, *, alpha: float = 0.01,
          noise_cosine: float = 0.999) -> Dict[str, Any]:
    """Embedding drift between two samples (``n x d`` and ``m x d2`` arrays): norms, an MMD
    test, centroid cosine and findings (``memhealth drift``)."""
    return _with_findings(json.loads(_m._drift(reference, current, alpha, noise_cosine)))


def gate(old: Any, new: Any, *, ids: Optional[Sequence[str]] = None, k: int = 10,
         min_overlap: float = 0.8, min_rank_correlation: float = 0.5) -> Dict[str, Any]:
    """The migration gate (``memhealth gate``): the same texts embedded by the old and the new
    model (row i of both), compared by neighbour overlap@k and rank correlation."""
    return _with_findings(json.loads(_m._gate(old, new, list(ids or []), k, min_overlap,
                                              min_rank_correlation)))


@dataclass
class Verdict:
    """The write gate's suggestion: ``decision`` (store, store_as_duplicate, supersede,
    hold_for_review, reject), ``target_id``, ``superseded_ids``, ``reason``, ``findings``."""

    decision: str
    target_id: str
    superseded_ids: List[str]
    reason: str
    findings: List[Finding]


class WriteGate:
    """The write-time gate (live/write_gate.hpp): a host's write path calls ``inspect(record)``
    before writing and ``observe(record)`` after; ``forget(id)`` after a delete."""

    def __init__(self, records: Optional[Records] = None, *,
                 near_duplicate_threshold: float = 0.92,
                 conflict_candidate_threshold: float = 0.6, max_judged: int = 32,
                 dimension: int = 0):
        self._g = _m._WriteGate(near_duplicate_threshold, conflict_candidate_threshold,
                                max_judged, dimension)
        if records is not None:
            self.observe_all(records)

    def observe_all(self, records: Union[Records, Iterable[Mapping[str, Any]]]) -> None:
        self._g.observe_records(_records(records)._h)

    def observe(self, record: Mapping[str, Any]) -> None:
        self._g.observe(_encode(record))

    def forget(self, id: str) -> bool:
        return self._g.forget(id)

    def __len__(self) -> int:
        return len(self._g)

    def inspect(self, record: Mapping[str, Any], kind: str = "upsert", now: Any = None) -> Verdict:
        d = json.loads(self._g.inspect(_encode(record), kind, now))
        return Verdict(d["decision"], d["target_id"], d["superseded_ids"], d["reason"],
                       [Finding._from(f) for f in d["findings"]])


__all__ = [
    "BusyError", "CallableEmbedder", "Error", "Finding", "InvalidArgumentError", "IoError",
    "NotFoundError", "ParseError", "Plan", "PreconditionError", "RECORD_FIELDS", "Records",
    "Report", "SchemaError", "Verdict", "WriteGate", "apply", "check", "check_json", "drift",
    "gate", "monitor", "plan", "recover", "rollback",
]
