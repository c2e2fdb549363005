"""The pictures' data for any LSP client: ``pypto-lsp/passChart`` and ``pypto-lsp/errorMap``.

* ``pypto-lsp/passChart`` ``{"uri": dump or folder}`` -> the pass chart's data
  (:func:`pypto_lsp.formats.passchart.pass_chart`) from the results the server already
  has for that folder (nothing runs; a pass never validated has status ``"unknown"``),
  each pass with its ``uri``.
* ``pypto-lsp/errorMap`` ``{"uri": dump, "tensor"?: name, "run"?: bool}`` -> the error
  maps of the dump's outputs (:func:`pypto_lsp.validate.errormap.error_maps`), made by the
  worker (the dump runs once more with its writes recorded; the server never imports
  torch). The answer is kept per dump text and goldens; with ``"run": false``, or when
  validation is off (an untrusted workspace), only a kept answer is given, else
  ``{"maps": [], "unavailable": why}``.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from ...formats.passchart import pass_chart
from ...worker import protocol as P
from ..contract import ERROR_MAP, PASS_CHART
from ..convert import request_param, request_uri
from ..core import Core
from ..documents import path_to_uri
from ..lsp import PyptoServer
from ..validation import NotADump, folder_files

_KEPT_MAPS = 16


def chart_for(core: Core, path: Path) -> dict[str, Any]:
    """The pass chart of ``path``'s folder from the server's known results."""
    t0 = time.perf_counter()
    try:
        files = folder_files(path)
    except (FileNotFoundError, ValueError, OSError) as exc:
        raise JsonRpcInvalidParams(f"no pass dumps at {path}: {exc}") from exc
    rows: list[dict[str, Any]] = []
    texts: dict[str, str] = {}
    for f in files:
        st = core.docs.get(path_to_uri(f))
        if st is not None and st.result is not None:
            d = st.result.to_json()  # with its "memory" findings
            d["file"] = str(f)
            if st.result_lines:
                texts[str(f)] = "\n".join(st.result_lines)
        else:
            d = {"file": str(f), "status": "unknown", "tensors": {}}
        rows.append(d)
    fd = core.validator.first_divergent(files[0].parent) if files else None
    chart = pass_chart(rows, str(fd.path) if fd is not None and fd.path is not None else None, texts, folder=str(files[0].parent))
    for p in chart["passes"]:
        p["uri"] = path_to_uri(p["file"])
    chart["known"] = sum(1 for r in rows if r["status"] != "unknown")
    chart["seconds"] = time.perf_counter() - t0
    return chart


async def maps_for(
    core: Core, kept: OrderedDict[tuple[Any, ...], dict[str, Any]], uri: str, tensor: str | None, run: bool
) -> dict[str, Any]:
    """``kept``: the last answers, by dump text, goldens and tolerances."""
    try:
        snap = core.validator.snapshot(uri)
    except NotADump as exc:
        raise JsonRpcInvalidParams(str(exc)) from exc
    r = snap.resolved
    key = (uri, snap.hash, str(r.inputs), str(r.expected), r.settings.rtol, r.settings.atol, r.settings.entry, tensor)
    hit = kept.get(key)
    if hit is not None:
        kept.move_to_end(key)
        return {**hit, "kept": True}
    why = None
    if not run:
        why = "not computed yet (the client asked for kept results only)"
    elif not r.validation:
        why = "validation is off here (an untrusted workspace?): the error map needs a run of the dump"
    elif r.error:
        why = f"configuration: {r.error}"
    elif not r.has_goldens or r.inputs is None or r.expected is None:
        why = f"no golden tensors for {snap.path}"
    if why is not None:
        return {"file": str(snap.path), "uri": uri, "maps": [], "unavailable": why}
    params = P.ErrorMapParams(
        file=str(snap.path),
        text=snap.text,
        golden=P.Golden(str(r.inputs), str(r.expected)),
        settings=r.run_settings(),
        tensors=[tensor] if tensor else None,
    )
    try:
        res = await core.worker.request(P.ERROR_MAP, params, r.settings.timeout_s + 10.0)
    except P.WorkerError as exc:
        return {"file": str(snap.path), "uri": uri, "maps": [], "unavailable": str(exc)}
    res = {**res, "uri": uri}
    kept[key] = res
    while len(kept) > _KEPT_MAPS:
        kept.popitem(last=False)
    return res


def register(ls: PyptoServer, core: Core) -> None:
    kept: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()

    @ls.feature(PASS_CHART)
    def pass_chart_request(params: Any) -> dict[str, Any]:
        _, path = request_uri(params)
        return chart_for(core, path)

    @ls.feature(ERROR_MAP)
    async def error_map_request(params: Any) -> dict[str, Any]:
        uri, _ = request_uri(params)
        tensor = request_param(params, "tensor")
        run = request_param(params, "run", True)
        return await maps_for(core, kept, uri, tensor if isinstance(tensor, str) and tensor else None, run is not False)
