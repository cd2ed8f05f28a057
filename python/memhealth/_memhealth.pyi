# Type stubs of the compiled extension memhealth._memhealth (python/src/module.cpp). The public
# API is the `memhealth` package (memhealth/__init__.py), which is typed inline.
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import numpy.typing as npt

__version__: str
library_version: int

class Error(RuntimeError):
    """memhealth's error: `code` is the library's stable error code, `code_name` its name."""

    code: int
    code_name: str

class IoError(Error, OSError):
    """error_code::io (1): a file could not be opened, read, written or renamed."""

class ParseError(Error, ValueError):
    """error_code::parse (2): input is not in the expected format at all."""

class PreconditionError(Error):
    """error_code::precondition (3): an API was called against its preconditions."""

class NotFoundError(Error, LookupError):
    """error_code::not_found (4): an id or key that must exist does not."""

class InvalidArgumentError(Error, ValueError):
    """error_code::invalid_argument (5): an argument value is out of its range."""

class SchemaError(Error):
    """error_code::schema (6): a database or file has a foreign or incompatible schema."""

class BusyError(Error):
    """error_code::busy (7): another process holds the lock on a file."""

class _Records:
    def __len__(self) -> int: ...
    @property
    def dimension(self) -> int: ...
    @property
    def borrows_embeddings(self) -> bool: ...
    @property
    def load_issues(self) -> List[Dict[str, Any]]: ...
    def ids(self) -> List[str]: ...
    def to_jsonl(self) -> str: ...
    def record_json(self, i: int) -> str: ...
    def embeddings(self) -> npt.NDArray[np.float32]: ...
    def _block_address(self) -> int: ...
    def _units_address(self) -> Tuple[int, bool]: ...

def _records_from_jsonl_text(
    text: str, embeddings: Any = ..., dimension: int = ..., embedder: Any = ...
) -> _Records: ...
def _records_from_dicts(
    records: Any, embeddings: Any = ..., dimension: int = ..., embedder: Any = ...,
    fallback: Any = ...
) -> _Records: ...
def _records_from_mem0(text: str, embeddings: Any = ..., embedder: Any = ...) -> _Records: ...
def _records_from_file(path: str, dimension: int = ...) -> _Records: ...

class _CheckResult:
    @property
    def json(self) -> str: ...
    @property
    def findings(self) -> int: ...

def _check(records: _Records, **settings: Any) -> _CheckResult: ...

class _Plan:
    def __len__(self) -> int: ...
    def to_json(self) -> str: ...
    @property
    def suspended(self) -> bool: ...
    @staticmethod
    def from_json(text: str) -> "_Plan": ...

def _plan(
    records: _Records,
    report: _CheckResult,
    max_records: int,
    blast_radius: int,
    metadata_defaults: Dict[str, str],
) -> _Plan: ...
def _apply(
    records: _Records,
    plan: _Plan,
    wal: str,
    approve: List[str],
    batch_size: int,
    max_records: int,
    dry_run: bool,
    embedder: Any,
    embed_version: str,
) -> Dict[str, Any]: ...
def _rollback(records: _Records, wal: str, force: bool) -> Dict[str, Any]: ...
def _recover(records: _Records, wal: str, policy: str, force: bool) -> Dict[str, Any]: ...
def _monitor(
    records: _Records,
    events: str,
    baseline: str,
    window: float,
    top_k: int,
    min_retrievals: int,
    threshold: float,
) -> str: ...
def _drift(reference: Any, current: Any, alpha: float, noise_cosine: float) -> str: ...
def _gate(
    old: Any,
    new: Any,
    ids: Sequence[str],
    k: int,
    min_overlap: float,
    min_rank_correlation: float,
) -> str: ...

class _WriteGate:
    def __init__(
        self,
        near_duplicate_threshold: float,
        conflict_candidate_threshold: float,
        max_judged: int,
        dimension: int,
    ) -> None: ...
    def observe_records(self, records: _Records) -> None: ...
    def observe(self, record_json: str) -> None: ...
    def forget(self, id: str) -> bool: ...
    def __len__(self) -> int: ...
    @property
    def dimension(self) -> int: ...
    def inspect(self, record_json: str, kind: str, now: Optional[Any]) -> str: ...
