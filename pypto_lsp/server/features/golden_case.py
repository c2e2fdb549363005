"""``pypto-lsp.writeGoldenCase``: "Configure Golden Tensors" writes its ``[[cases]]`` entry here.

The client picks the files (two dialogs in VS Code); the core decides where the entry goes and
writes it through the one case writer (:mod:`pypto_lsp.validate.case_writer`, see
:meth:`..core.Core.write_golden_case`). Arguments ``[{"dumps": a dump folder or dump, "inputs":
file, "expected": file}]`` (file URIs or absolute paths); the answer ``{"config": path, "uri":
its URI, "written": "added" | "updated"}``; a file that is missing, a folder outside the workspace
or holding no dumps, an untrusted workspace, or a config that cannot take the entry is an
InvalidParams error whose message says why (nothing written).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from ...validate.config import ConfigError
from ..contract import WRITE_GOLDEN_CASE
from ..core import Core
from ..documents import path_to_uri, uri_to_path
from ..lsp import PyptoServer


def _path(args: dict[str, Any], key: str) -> Path:
    v = args.get(key)
    p = (uri_to_path(v) if "://" in v else Path(v)) if isinstance(v, str) and v else None
    if p is None or not p.is_absolute():
        raise JsonRpcInvalidParams(f"{WRITE_GOLDEN_CASE}: '{key}' must be a file URI or an absolute path, got {v!r}")
    return p


def register(ls: PyptoServer, core: Core) -> None:
    @ls.command(WRITE_GOLDEN_CASE)
    def write_golden_case(*args: Any) -> dict[str, Any]:
        a = args[0] if args and isinstance(args[0], dict) else None
        if a is None:
            raise JsonRpcInvalidParams(f'{WRITE_GOLDEN_CASE}: expected [{{"dumps": ..., "inputs": ..., "expected": ...}}]')
        try:
            config, written = core.write_golden_case(_path(a, "dumps"), _path(a, "inputs"), _path(a, "expected"))
        except (ValueError, ConfigError, OSError) as exc:
            raise JsonRpcInvalidParams(str(exc)) from exc
        return {"config": str(config), "uri": path_to_uri(config), "written": written}
