"""The wire protocol between the language server and its validation worker.

Torch-free: both sides import it. One JSON object per line, UTF-8:

* server -> worker, a request: ``{"id": 7, "method": "validate", "params": {...}}``.
  ``cancel`` (``{"id": null, "method": "cancel", "params": {"id": 7}}``) has no answer:
  a request not started yet is answered with an error of kind ``cancelled``, a folder
  run stops before its next file, a single run already going finishes (the server
  drops its result).
* worker -> server, the answer: ``{"id": 7, "result": {...}}`` or
  ``{"id": 7, "error": {"kind": "...", "message": "..."}}``.
* worker -> server, notifications (no ``id``): ``ready`` once torch is imported,
  ``started`` when a request begins (the server's timeout clock starts there), and
  ``fileResult`` for every file of a ``validateFolder`` run.

Requests are handled one at a time, in order, except that single-file ``validate``
requests overtake the remaining files of a running ``validateFolder`` (a save in the
editor is not stuck behind a 50-file run).
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

PROTOCOL_VERSION = 1

# methods
PING = "ping"
VALIDATE = "validate"
VALIDATE_FOLDER = "validateFolder"
CODEGEN = "codegen"
LOCALIZE = "localize"
ERROR_MAP = "errorMap"
SHUTDOWN = "shutdown"
CANCEL = "cancel"
METHODS = (PING, VALIDATE, VALIDATE_FOLDER, CODEGEN, LOCALIZE, ERROR_MAP, SHUTDOWN, CANCEL)

# notifications (worker -> server)
READY = "ready"
STARTED = "started"
FILE_RESULT = "fileResult"

# error kinds of a failed request (FileResult errors are results, not these)
E_TIMEOUT = "timeout"
E_CRASH = "crash"
E_CANCELLED = "cancelled"
E_BAD_REQUEST = "bad-request"
E_INTERNAL = "internal"
E_UNAVAILABLE = "worker-unavailable"


@dataclass(slots=True)
class Golden:
    """Where the golden bundles are (absolute paths); loaded once per content by the worker."""

    inputs: str
    expected: str
    # no goldens: the dump folder whose earliest dump, on synthesized inputs, is the reference
    differential: str | None = None

    @staticmethod
    def from_json(d: dict[str, Any]) -> Golden:
        diff = d.get("differential")
        return Golden(str(d["inputs"]), str(d["expected"]), str(diff) if diff else None)


@dataclass(slots=True)
class ValidateParams:
    """Validate one dump text. ``file`` names it in the result (an absolute path)."""

    file: str
    text: str
    golden: Golden
    rtol: float
    atol: float
    entry: str | None = None
    timeout_s: float = 30.0
    use_cache: bool = True
    collect_stats: bool = True
    memory: bool = True  # run tiles where the IR places them (pypto_lsp.exec.memory)
    backend: str | None = None  # memory capacities of this backend; None: the largest
    max_alloc: int | None = None  # bytes one allocation may take (exec.alloc_budget); None: the default
    exact: bool = False  # every loop tile by tile (no batched loops, pypto_lsp.exec.batching)

    @staticmethod
    def from_json(d: dict[str, Any]) -> ValidateParams:
        return ValidateParams(
            file=str(d["file"]),
            text=str(d["text"]),
            golden=Golden.from_json(d["golden"]),
            rtol=float(d["rtol"]),
            atol=float(d["atol"]),
            entry=d.get("entry"),
            timeout_s=float(d.get("timeout_s", 30.0)),
            use_cache=bool(d.get("use_cache", True)),
            collect_stats=bool(d.get("collect_stats", True)),
            memory=bool(d.get("memory", True)),
            backend=d.get("backend"),
            max_alloc=int(d["max_alloc"]) if d.get("max_alloc") is not None else None,
            exact=bool(d.get("exact", False)),
        )


@dataclass(slots=True)
class ValidateFolderParams:
    """Validate ``files`` in order, streaming one ``fileResult`` per file.

    ``texts`` overrides the disk content of some files (documents open in the editor).
    """

    files: list[str]
    golden: Golden
    rtol: float
    atol: float
    entry: str | None = None
    timeout_s: float = 30.0
    use_cache: bool = True
    collect_stats: bool = False
    texts: dict[str, str] = field(default_factory=dict)
    memory: bool = True
    backend: str | None = None
    max_alloc: int | None = None
    exact: bool = False

    @staticmethod
    def from_json(d: dict[str, Any]) -> ValidateFolderParams:
        return ValidateFolderParams(
            files=[str(f) for f in d["files"]],
            golden=Golden.from_json(d["golden"]),
            rtol=float(d["rtol"]),
            atol=float(d["atol"]),
            entry=d.get("entry"),
            timeout_s=float(d.get("timeout_s", 30.0)),
            use_cache=bool(d.get("use_cache", True)),
            collect_stats=bool(d.get("collect_stats", False)),
            texts={str(k): str(v) for k, v in (d.get("texts") or {}).items()},
            memory=bool(d.get("memory", True)),
            backend=d.get("backend"),
            max_alloc=int(d["max_alloc"]) if d.get("max_alloc") is not None else None,
            exact=bool(d.get("exact", False)),
        )


@dataclass(slots=True)
class LocalizeParams:
    """Run a failing pass and the passing pass before it traced; answer the first value that differs.

    The answer is ``{"divergence": ValueDivergence JSON | null}`` (see ``validate.localize``).
    """

    previous_file: str
    previous_text: str
    file: str
    text: str
    golden: Golden
    rtol: float
    atol: float
    entry: str | None = None
    timeout_s: float = 30.0

    @staticmethod
    def from_json(d: dict[str, Any]) -> LocalizeParams:
        return LocalizeParams(
            previous_file=str(d["previous_file"]),
            previous_text=str(d["previous_text"]),
            file=str(d["file"]),
            text=str(d["text"]),
            golden=Golden.from_json(d["golden"]),
            rtol=float(d["rtol"]),
            atol=float(d["atol"]),
            entry=d.get("entry"),
            timeout_s=float(d.get("timeout_s", 30.0)),
        )


@dataclass(slots=True)
class ErrorMapParams:
    """Run one dump with its writes recorded; answer the error map of its outputs.

    The answer is ``validate.errormap.error_maps``'s: ``{"file", "error", "maps": [...],
    "run_seconds", "seconds"}``. ``tensors``: only these outputs; ``only_failing``: only
    the outputs over the tolerance.
    """

    file: str
    text: str
    golden: Golden
    rtol: float
    atol: float
    entry: str | None = None
    timeout_s: float = 30.0
    tensors: list[str] | None = None
    only_failing: bool = False

    @staticmethod
    def from_json(d: dict[str, Any]) -> ErrorMapParams:
        t = d.get("tensors")
        return ErrorMapParams(
            file=str(d["file"]),
            text=str(d["text"]),
            golden=Golden.from_json(d["golden"]),
            rtol=float(d["rtol"]),
            atol=float(d["atol"]),
            entry=d.get("entry"),
            timeout_s=float(d.get("timeout_s", 30.0)),
            tensors=[str(x) for x in t] if isinstance(t, list) else None,
            only_failing=bool(d.get("only_failing", False)),
        )


@dataclass(slots=True)
class CodegenParams:
    text: str
    file: str = "<dump>"
    entry: str | None = None
    check_shapes: bool = True

    @staticmethod
    def from_json(d: dict[str, Any]) -> CodegenParams:
        return CodegenParams(str(d["text"]), str(d.get("file", "<dump>")), d.get("entry"), bool(d.get("check_shapes", True)))


@dataclass(slots=True)
class PingResult:
    pid: int
    python: str
    torch: str
    pypto_lsp: str
    protocol: int = PROTOCOL_VERSION


@dataclass(slots=True)
class CodegenResult:
    """``source`` is the script; on failure it is None and ``error`` says why (with a 1-based line)."""

    source: str | None
    error: str | None = None
    line: int | None = None


@dataclass(slots=True)
class FolderResult:
    """The answer to ``validateFolder``: how many files were done (the results were streamed)."""

    done: int
    total: int
    cancelled: bool = False


@dataclass(slots=True)
class FileResultNote:
    """``fileResult`` notification: result ``index`` (0-based) of ``total`` for request ``id``.

    ``result`` is :meth:`FileResult.to_json` plus ``stats`` when collected.
    """

    id: int
    index: int
    total: int
    result: dict[str, Any]


@dataclass(slots=True)
class WorkerError(Exception):
    """A request that produced no result (timeout, crash, cancelled, bad request)."""

    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message}


def to_wire(obj: Any) -> Any:
    """Dataclasses to plain JSON values."""
    if hasattr(obj, "__dataclass_fields__"):
        return asdict(obj)
    return obj


def _finite(v: Any) -> Any:
    """JSON has no NaN/Inf: NaN becomes null, infinities the largest float."""
    if isinstance(v, float):
        if math.isnan(v):
            return None
        if math.isinf(v):
            return math.copysign(sys.float_info.max, v)
        return v
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_finite(x) for x in v]
    return v


def encode(msg: dict[str, Any]) -> bytes:
    """One line of JSON. ``ensure_ascii`` keeps the line free of raw separators (U+2028 ...)."""
    try:
        text = json.dumps(msg, ensure_ascii=True, separators=(",", ":"), allow_nan=False, default=to_wire)
    except ValueError:  # a NaN/Inf somewhere (value stats of a broken run)
        text = json.dumps(_finite(json.loads(json.dumps(msg, default=to_wire))), ensure_ascii=True, separators=(",", ":"))
    return (text + "\n").encode("ascii")


def decode(line: bytes | str) -> dict[str, Any]:
    msg = json.loads(line)
    if not isinstance(msg, dict):
        raise ValueError("a protocol message is a JSON object")
    return msg


def request(id: int | None, method: str, params: Any) -> dict[str, Any]:
    return {"id": id, "method": method, "params": to_wire(params)}


def response(id: int | None, result: Any) -> dict[str, Any]:
    return {"id": id, "result": to_wire(result)}


def error_response(id: int | None, kind: str, message: str) -> dict[str, Any]:
    return {"id": id, "error": {"kind": kind, "message": message}}


def notification(method: str, params: Any) -> dict[str, Any]:
    return {"method": method, "params": to_wire(params)}
