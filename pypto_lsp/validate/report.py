"""Validation results as plain data (the CLI prints them, the worker ships them as JSON)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, TypedDict

from ..ir.memory import Hazard

if TYPE_CHECKING:
    from ..ir.diagnostics import Diagnostic
    from ..ir.model import Span

Status = Literal["pass", "fail", "error", "ran"]  # a file's verdict (``ran``: nothing to compare)
PASS: Final = "pass"
FAIL: Final = "fail"
ERROR: Final = "error"
RAN: Final = "ran"
STATUSES: tuple[Status, ...] = (PASS, FAIL, ERROR, RAN)


class MemoryResult(TypedDict):
    """``FileResult.memory``: whether the memory model placed tiles, and every finding (sanitizer's included)."""

    checked: bool
    hazards: list[Hazard]


def hazards_of(fr: FileResult | None) -> list[Hazard]:
    """The file's memory and sanitizer findings (none without a result)."""
    return list(fr.memory["hazards"]) if fr is not None and fr.memory else []


_SSA = re.compile(r"__ssa_v\d+$")  # the SSA suffix of an IR name


def json_number(x: float | None) -> float | None:
    """JSON has no NaN/Inf: NaN becomes null, infinities the largest float."""
    if x is None or math.isnan(x):
        return None
    if math.isinf(x):
        return math.copysign(1.7976931348623157e308, x)
    return x


# memory and sanitizer findings that fail a file even when the numbers agree: what the NPU would do differently
FAILING_FINDINGS = frozenset({"overwrite", "pipe-slot", "race", "uninitialised", "out-of-bounds", "fence"})  # fence: exec.rank_hazards


@dataclass(slots=True)
class TensorResult:
    max_abs_diff: float
    max_rel_diff: float
    passed: bool
    nan_count: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "max_abs_diff": json_number(self.max_abs_diff),
            "max_rel_diff": json_number(self.max_rel_diff),
            "pass": self.passed,
            "nan_count": self.nan_count,
        }


@dataclass(slots=True)
class ErrorInfo:
    kind: str
    message: str
    line: int | None = None
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def at(kind: str, message: str, span: Span | None, **detail: Any) -> ErrorInfo:
        """An error at an IR span (0-based columns there, 1-based here); no span: no position."""
        if span is None:
            return ErrorInfo(kind, message, detail=detail)
        return ErrorInfo(kind, message, span.line, span.col + 1, span.end_line, span.end_col + 1, detail=detail)

    @staticmethod
    def from_diagnostic(d: Diagnostic) -> ErrorInfo:
        """A static (parse/check) error as a result's error: kind ``static:<code>``."""
        return ErrorInfo.at(f"static:{d.code}", d.message, d.span)

    @staticmethod
    def from_json(err: dict[str, Any]) -> ErrorInfo:
        return ErrorInfo(
            err["kind"],
            err["message"],
            err.get("line"),
            err.get("column"),
            err.get("end_line"),
            err.get("end_column"),
            err.get("detail", {}),
        )

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "message": self.message, "line": self.line, "column": self.column}
        if self.end_line is not None:
            d["end_line"] = self.end_line
            d["end_column"] = self.end_column
        if self.detail:
            d["detail"] = self.detail
        return d


@dataclass(slots=True)
class FileResult:
    file: str
    status: Status
    tensors: dict[str, TensorResult] = field(default_factory=dict)
    error: ErrorInfo | None = None
    seconds: float = 0.0
    cached: bool = False
    rtol: float = 5e-2
    atol: float = 5e-2
    # 1-based IR lines of the statements that wrote each output (for diagnostics)
    writes: dict[str, list[list[int]]] = field(default_factory=dict)
    call_counts: dict[str, int] = field(default_factory=dict)
    stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    # {"checked": bool, "hazards": [{"kind", "line", "name", "other_line", "other_name", "space", "core", "range", "message"}]}
    # (an uninitialised value's path: "related", the lines it flowed through)
    memory: MemoryResult | None = None
    # the runtime's tasks (exec.sanitizer.Sanitizer.graph): {"nodes", "edges", "races", "truncated"}; None: no tasks
    tasks: dict[str, Any] | None = None
    worker: str | None = None  # the Dask worker's address that ran it (validate --cluster); None: this machine

    @property
    def name(self) -> str:
        return Path(self.file).stem

    def max_abs_diff(self) -> float | None:
        vals = [t.max_abs_diff for t in self.tensors.values()]
        return max(vals) if vals else None

    def to_json(self) -> dict[str, Any]:
        d = self._json()
        if self.worker is not None:
            d["worker"] = self.worker
        return d

    def _json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "status": self.status,
            "tensors": {k: v.to_json() for k, v in self.tensors.items()},
            "error": self.error.to_json() if self.error else None,
            "seconds": round(self.seconds, 6),
            "cached": self.cached,
            "rtol": self.rtol,
            "atol": self.atol,
            "writes": self.writes,
            "call_counts": self.call_counts,
            "memory": self.memory if self.memory is not None else {"checked": False, "hazards": []},
            "tasks": self.tasks,
        }

    @staticmethod
    def from_json(d: dict[str, Any]) -> FileResult:
        err = d.get("error")
        return FileResult(
            file=d["file"],
            status=d["status"],
            tensors={
                k: TensorResult(
                    v["max_abs_diff"] if v["max_abs_diff"] is not None else float("nan"),
                    v["max_rel_diff"] if v["max_rel_diff"] is not None else float("nan"),
                    v["pass"],
                    v.get("nan_count", 0),
                )
                for k, v in d.get("tensors", {}).items()
            },
            error=ErrorInfo.from_json(err) if err else None,
            seconds=d.get("seconds", 0.0),
            cached=d.get("cached", False),
            rtol=d.get("rtol", 5e-2),
            atol=d.get("atol", 5e-2),
            writes=d.get("writes", {}),
            call_counts=d.get("call_counts", {}),
            stats=d.get("stats", {}),
            memory=d.get("memory"),
            tasks=d.get("tasks"),
            worker=d.get("worker"),
        )


def writes_for(fr: FileResult, tensor: str) -> list[list[int]]:
    """The IR statements (1-based line ranges) that wrote the output behind golden key ``tensor``."""
    if tensor in fr.writes:
        return fr.writes[tensor]
    for param, spans in fr.writes.items():
        if tensor in (_SSA.sub("", param), param.split("__")[0] if "__" in param.strip("_") else param):
            return spans
    return []


@dataclass(slots=True)
class ValueDivergence:
    """Where the divergent pass first computes a value unlike the previous pass's."""

    line: int  # 1-based line of the assignment in the divergent pass
    name: str
    occurrence: int  # 0-based: how many earlier assignments of this name (same lane and block)
    lane: int
    lanes: int  # AIV lanes running that code (0 outside cross-core groups and split regions)
    block: int
    previous_line: int  # where the partner value was assigned in the previous pass
    max_abs_diff: float
    detail: str  # "max |Δ| ..." or what differs (shape, dtype, kind)
    compared: int  # values compared before (and including) this one
    truncated: bool
    # "value" (numbers differ), "dtype" (the dtype differs), "valid" (the valid region differs),
    # "count" (a loop ran a different number of times, a branch went the other way: line and
    # name are the loop's or the if's)
    kind: str = "value"
    cause: bool = False  # every operand agreed with the previous pass: this statement made the difference
    related: list[ValueDivergence] = field(default_factory=list)  # the next candidates
    rank: int | None = None  # the rank computing it (multi-rank programs), else None

    def describe(self, previous_file: str) -> str:
        where = []
        if self.occurrence:
            where.append(f"{'run' if self.kind == 'count' else 'assignment'} {self.occurrence + 1}")
        if self.lanes:
            where.append(f"AIV lane {self.lane}")
        if self.rank is not None:
            where.append(f"rank {self.rank}")
        if self.block:
            where.append(f"SPMD block {self.block}")
        at = f" ({', '.join(where)})" if where else ""
        if self.kind == "count":
            return f"ran differently from {previous_file}: '{self.name}'{at} {self.detail} (line {self.previous_line} there)"
        return (
            f"first value that differs from {previous_file}: '{self.name}'{at}, {self.detail} "
            f"against line {self.previous_line} there ({self.compared} values compared)"
        )

    def to_json(self) -> dict[str, Any]:
        d = {
            k: getattr(self, k) for k in ValueDivergence.__dataclass_fields__ if k != "related" and not (k == "rank" and self.rank is None)
        }
        return {**d, "max_abs_diff": json_number(self.max_abs_diff), "related": [r.to_json() for r in self.related]}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> ValueDivergence:
        diff = d.get("max_abs_diff")
        fields = {k: d[k] for k in ValueDivergence.__dataclass_fields__ if k not in ("max_abs_diff", "related") and k in d}
        related = [ValueDivergence.from_json(r) for r in d.get("related") or []]
        return ValueDivergence(**fields, max_abs_diff=float("nan") if diff is None else float(diff), related=related)


@dataclass(slots=True)
class Report:
    files: list[FileResult]
    seconds: float = 0.0
    # on a first divergent pass that fails after a passing one: see validate.localize
    first_differing_value: ValueDivergence | None = None
    # where the files ran: "in-process", "processes:N" (the local pool), "dask:ADDRESS" (validate --cluster)
    executor: str = "in-process"

    @property
    def first_divergent(self) -> FileResult | None:
        for f in self.files:
            if f.status in (FAIL, ERROR):
                return f
        return None

    def summary(self) -> dict[str, Any]:
        counts = {PASS: 0, FAIL: 0, ERROR: 0, RAN: 0}
        for f in self.files:
            counts[f.status] = counts.get(f.status, 0) + 1
        return {**counts, "seconds": round(self.seconds, 6), "executor": self.executor}

    @property
    def ok(self) -> bool:
        return all(f.status in (PASS, RAN) for f in self.files)

    def to_json(self) -> dict[str, Any]:
        fd = self.first_divergent
        files = [f.to_json() for f in self.files]
        if fd is not None and self.first_differing_value is not None:
            # with the first divergent file's entry: the top-level keys stay the documented three
            files[self.files.index(fd)]["first_differing_value"] = self.first_differing_value.to_json()
        return {"files": files, "first_divergent": fd.file if fd else None, "summary": self.summary()}


__all__ = [
    "PASS",
    "FAIL",
    "ERROR",
    "RAN",
    "TensorResult",
    "ErrorInfo",
    "FileResult",
    "ValueDivergence",
    "Report",
    "asdict",
    "related_lines",
]


def related_lines(h: Any) -> list[int]:
    """The lines a finding points at besides its own: ``other_line`` then the path (``related``), once each."""
    out: list[int] = []
    for x in [h.get("other_line"), *(h.get("related") or [])]:
        if isinstance(x, int) and not isinstance(x, bool) and x > 0 and x != h.get("line") and x not in out:
            out.append(x)
    return out
