"""Diagnostics as values: what the checker, the executor and the server exchange."""

from __future__ import annotations

from dataclasses import dataclass, field

from .model import NOWHERE, Span

ERROR = "error"
WARNING = "warning"
INFORMATION = "information"
HINT = "hint"


@dataclass(slots=True)
class Related:
    message: str
    file: str | None
    span: Span


@dataclass(slots=True)
class Diagnostic:
    span: Span
    severity: str
    code: str
    message: str
    hint: str | None = None
    related: list[Related] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        """The CLI's JSON form: 1-based lines and columns."""
        message = self.message if not self.hint else f"{self.message} ({self.hint})"
        return {
            "line": self.span.line,
            "column": self.span.col + 1,
            "end_line": self.span.end_line,
            "end_column": self.span.end_col + 1,
            "severity": self.severity,
            "code": self.code,
            "message": message,
        }

    def format(self, filename: str) -> str:
        message = self.message if not self.hint else f"{self.message} ({self.hint})"
        return f"{filename}:{self.span.line}:{self.span.col + 1}: {self.severity}: {message} [{self.code}]"


class IRError(Exception):
    """An IR that cannot be used as written; carries the diagnostic with its span."""

    def __init__(self, diagnostic: Diagnostic, filename: str | None = None) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic
        self.filename = filename

    @property
    def line(self) -> int:
        return self.diagnostic.span.line

    @property
    def column(self) -> int:
        return self.diagnostic.span.col + 1

    @property
    def hint(self) -> str | None:
        return self.diagnostic.hint

    def __str__(self) -> str:
        where = f"{self.filename or '<dump>'}:{self.line}:{self.column}"
        return f"{where}: {self.diagnostic.message}"


class IRSyntaxError(IRError):
    """The text is not valid Python / not inside the dump grammar."""


def error(span: Span | None, code: str, message: str, hint: str | None = None) -> Diagnostic:
    return Diagnostic(span or NOWHERE, ERROR, code, message, hint)


def warning(span: Span | None, code: str, message: str, hint: str | None = None) -> Diagnostic:
    return Diagnostic(span or NOWHERE, WARNING, code, message, hint)


def info(span: Span | None, code: str, message: str, hint: str | None = None) -> Diagnostic:
    return Diagnostic(span or NOWHERE, INFORMATION, code, message, hint)
