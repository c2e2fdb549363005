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
from dataclasses import dataclass, field
from typing import Any, TypeVar

import cattrs

from ..validate.config import RunSettings

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


@dataclass(frozen=True, slots=True)
class Golden:
    """Where the golden bundles are (absolute paths); loaded once per content by the worker."""

    inputs: str
    expected: str
    # no goldens: the dump folder whose earliest dump, on synthesized inputs, is the reference
    differential: str | None = None


# Every run request carries the same two parts: what to compare with (``golden``) and how to
# run and compare (``settings``: tolerances, entry, timeout, memory model; see RunSettings).


@dataclass(slots=True)
class ValidateParams:
    """Validate one dump text. ``file`` names it in the result (an absolute path)."""

    file: str
    text: str
    golden: Golden
    settings: RunSettings
    use_cache: bool = True
    collect_stats: bool = True


@dataclass(slots=True)
class ValidateFolderParams:
    """Validate ``files`` in order, streaming one ``fileResult`` per file.

    ``texts`` overrides the disk content of some files (documents open in the editor).
    """

    files: list[str]
    golden: Golden
    settings: RunSettings
    use_cache: bool = True
    collect_stats: bool = False
    texts: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class LocalizeParams:
    """Run a failing pass and the passing pass before it traced; answer the first value that differs.

    The answer is ``{"divergence": ValueDivergence JSON | null}`` (see ``validate.localize``).
    Traced runs compare values only: ``settings.memory``/``backend`` do not apply.
    """

    previous_file: str
    previous_text: str
    file: str
    text: str
    golden: Golden
    settings: RunSettings


@dataclass(slots=True)
class ErrorMapParams:
    """Run one dump with its writes recorded; answer the error map of its outputs.

    The answer is ``validate.errormap.error_maps``'s: ``{"file", "error", "maps": [...],
    "run_seconds", "seconds"}``. ``tensors``: only these outputs; ``only_failing``: only
    the outputs over the tolerance. Values only: ``settings.memory``/``backend`` do not apply.
    """

    file: str
    text: str
    golden: Golden
    settings: RunSettings
    tensors: list[str] | None = None
    only_failing: bool = False


@dataclass(slots=True)
class CodegenParams:
    text: str
    file: str = "<dump>"
    entry: str | None = None
    check_shapes: bool = True


_Params = TypeVar("_Params")
# JSON <-> the dataclasses above, by their field types (cattrs): missing or mistyped fields
# fail with every problem and its path (``required field missing @ $.golden.inputs``)
_CONVERTER = cattrs.Converter()


def _bool_or_str(v: Any, _t: Any) -> bool | str:
    """RunSettings.sanitize: true, false or "strict" (cattrs has no rule of its own for the union)."""
    if isinstance(v, bool | str):
        return v
    raise ValueError(f"expected a bool or a string, got {v!r}")


_CONVERTER.register_structure_hook(bool | str, _bool_or_str)


def from_wire(cls: type[_Params], params: Any) -> _Params:
    """A request's ``params`` as ``cls``; a ValueError naming each bad field when they do not fit."""
    try:
        return _CONVERTER.structure(params, cls)
    except cattrs.BaseValidationError as exc:
        raise ValueError(f"bad {cls.__name__}: " + "; ".join(cattrs.transform_error(exc))) from None


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
        return _CONVERTER.unstructure(obj)
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
