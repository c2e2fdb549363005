"""Diagnostics as values: what the checker, the executor and the server exchange."""

from __future__ import annotations

import re
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
        return printable(f"{filename}:{self.span.line}:{self.span.col + 1}: {self.severity}: {message} [{self.code}]")


# C0 controls but tab and newline, DEL, C1 controls, lone surrogates, the two non-characters XML forbids
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def printable(text: str) -> str:
    """``text`` with every control character (ESC, NUL, CR ...; tab and newline kept) written as a
    visible escape (``\\x1b``): what a terminal or an XML report may carry from a file name or a
    golden key. The same text, unchanged, when it has none."""
    return _UNPRINTABLE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text)


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
