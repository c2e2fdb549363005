"""Pure conversions between IR positions (1-based lines, code-point columns) and LSP ones,
and the parameters of the custom requests (``{"uri": ...}`` objects or ``[uri]`` lists)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from ..ir.model import Span
from .documents import from_client_col, path_to_uri, to_client_col, uri_to_path


def request_param(params: Any, key: str, default: Any = None) -> Any:
    """``key`` of a custom request's params (a dict, an object, or a list whose first item is the uri)."""
    if isinstance(params, dict):
        return params.get(key, default)
    if isinstance(params, list | tuple) and not hasattr(params, "_fields"):
        return params[0] if key == "uri" and params else default
    return getattr(params, key, default)


def request_uri(params: Any) -> tuple[str, Path]:
    """The file a custom request is about (a file URI or an absolute path), as URI and path."""
    uri = request_param(params, "uri")
    if not isinstance(uri, str) or not uri:
        raise JsonRpcInvalidParams(f"expected {{'uri': ...}}, got {params!r}")
    if "://" not in uri and uri.startswith("/"):
        uri = path_to_uri(uri)
    path = uri_to_path(uri)
    if path is None:
        raise JsonRpcInvalidParams(f"not a file URI: {uri}")
    return uri, path


def span_to_range(lines: list[str], s: Span, encoding: str) -> types.Range:
    def line(i: int) -> str:
        return lines[i] if 0 <= i < len(lines) else ""

    l0, e0 = max(s.line - 1, 0), max(s.end_line - 1, 0)
    return types.Range(
        types.Position(l0, to_client_col(line(l0), s.col, encoding)),
        types.Position(e0, to_client_col(line(e0), s.end_col, encoding)),
    )


def server_position(lines: list[str], pos: types.Position, encoding: str) -> tuple[int, int]:
    """An LSP position as (0-based line, code-point column) in ``lines``."""
    line = lines[pos.line] if 0 <= pos.line < len(lines) else ""
    return pos.line, from_client_col(line, pos.character, encoding)
