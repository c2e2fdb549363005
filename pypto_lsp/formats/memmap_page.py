"""``pypto-lsp memmap FILE [--html out.html] [--run]``: the memory map of one dump.

The data is :func:`pypto_lsp.ir.memmap.memory_map` (static: the placement and the live
ranges); ``--run`` also runs the dump with its case's goldens (``pypto-lsp.toml``, as
``validate`` finds them) and adds the sanitizer's findings. The HTML file is self-contained
like ``validate --report``: Vega, Vega-Lite, vega-embed, ``render.js`` (the theme) and
``report_assets/memmap.js`` (the drawing, shared with the VS Code webview) are inlined.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from ..validate.report import Hazard, hazards_of
from .html_report import standalone_page

ASSETS = ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js", "render.js", "memmap.js")

_BOOT = """
(function () {
  var data = JSON.parse(document.getElementById('pypto-data').textContent);
  window.pyptoMemmap.renderAll(document.getElementById('memmap'), data, {});
})();
"""


def run_findings(path: Path, config: str | None = None) -> tuple[list[Hazard], str | None]:
    """The sanitizer's findings of one run of ``path`` with its case's goldens (torch)."""
    from ..validate.config import find_case
    from ..validate.engine import run_text
    from ..validate.golden import load_bundle

    case = find_case(path, config)
    if not case.has_goldens or case.inputs is None or case.expected is None:
        return [], f"no golden tensors for {path} (a pypto-lsp.toml case): static map only"
    fr = run_text(
        path.read_text(encoding="utf-8-sig"),
        load_bundle(case.inputs),
        load_bundle(case.expected),
        filename=str(path),
        rtol=case.settings.rtol,
        atol=case.settings.atol,
        entry=case.settings.entry,
        timeout=case.settings.timeout_s,
        memory=True,
        backend=case.settings.backend,
    )
    return list(hazards_of(fr)), None


def render_html(data: dict[str, Any], title: str) -> str:
    c = data["counts"]
    lead = f"{c['strips']} strip(s), {c['bars']} placed value(s), {c['overlaps']} overlap(s) in red, {c['findings']} finding(s) · " + (
        "byte addresses" if data.get("addressed") else "before AllocateMemoryAddr: one region per buffer"
    )
    if data.get("note"):
        lead += f" · {data['note']}"
    body = f"<h1>pypto-lsp · memory map · {html.escape(title)}</h1><p class='muted'>{html.escape(lead)}</p><div id='memmap'></div>"
    return standalone_page(title, body, data, ASSETS, _BOOT)
