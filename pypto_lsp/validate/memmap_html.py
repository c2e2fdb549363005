"""``pypto-lsp memmap FILE [--html out.html] [--run]``: the memory map of one dump.

The data is :func:`pypto_lsp.ir.memmap.memory_map` (static: the placement and the live
ranges); ``--run`` also runs the dump with its case's goldens (``pypto-lsp.toml``, as
``validate`` finds them) and adds the sanitizer's findings. The HTML file is self-contained
like ``validate --report``: Vega, Vega-Lite, vega-embed, ``render.js`` (the theme) and
``report_assets/memmap.js`` (the drawing, shared with the VS Code webview) are inlined.
"""

from __future__ import annotations

import html
import json
import sys
from pathlib import Path
from typing import Any

from ..ir.memmap import memory_map_text
from .html_report import standalone_page
from .report import Hazard, hazards_of

ASSETS = ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js", "render.js", "memmap.js")

_BOOT = """
(function () {
  var data = JSON.parse(document.getElementById('pypto-data').textContent);
  window.pyptoMemmap.renderAll(document.getElementById('memmap'), data, {});
})();
"""


def run_findings(path: Path, config: str | None = None) -> tuple[list[Hazard], str | None]:
    """The sanitizer's findings of one run of ``path`` with its case's goldens (torch)."""
    from .config import find_case
    from .engine import run_text
    from .golden import load_bundle

    case = find_case(path, config)
    if not case.has_goldens or case.inputs is None or case.expected is None:
        return [], f"no golden tensors for {path} (a pypto-lsp.toml case): static map only"
    fr = run_text(
        path.read_text(encoding="utf-8-sig"),
        load_bundle(case.inputs),
        load_bundle(case.expected),
        filename=str(path),
        rtol=case.rtol,
        atol=case.atol,
        entry=case.entry,
        timeout=case.timeout_s,
        memory=True,
        backend=case.backend,
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


def cmd_memmap(args: Any) -> int:
    """The ``memmap`` subcommand: 0 drawn (red or not), 2 a file that cannot be read or parsed."""
    path = Path(args.file)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"pypto-lsp memmap: {exc}", file=sys.stderr)
        return 2
    findings: list[Hazard] = []
    note = None
    if args.run:
        findings, note = run_findings(path, args.config)
    data = memory_map_text(text, findings, filename=str(path), backend=args.backend)
    if note:
        data["note"] = note
    if data.get("error"):
        print(f"pypto-lsp memmap: {path}: {data['error']}", file=sys.stderr)
        return 2
    if args.html:
        Path(args.html).write_text(render_html(data, path.name), encoding="utf-8")
    if args.json:
        print(json.dumps(data, indent=1))
    elif not args.html or args.verbose:
        c = data["counts"]
        print(f"{path}: {c['strips']} strip(s), {c['bars']} placed value(s), {c['overlaps']} overlap(s), {c['findings']} finding(s)")
        for st in data["strips"]:
            for o in st["overlaps"]:
                print(
                    f"  {st['function']} {st['space']}: '{o['name']}' (line {o['line']}) is still read at line {o['end']} but "
                    f"'{o['other_name']}' is written on its bytes [{o['start']}, {o['stop']}) at line {o['other_line']}"
                )
    if args.html:
        print(f"wrote {args.html}", file=sys.stderr)
    return 0


def add_parser(sub: Any) -> None:
    m = sub.add_parser("memmap", help="each core's memory over statement order (live ranges, overlaps in red)")
    m.add_argument("file", metavar="FILE", help="a pass dump (from InitMemRef on)")
    m.add_argument("--html", metavar="F", default=None, help="write a self-contained HTML picture")
    m.add_argument("--json", action="store_true", help="print the map's data")
    m.add_argument("--run", action="store_true", help="also run the dump with its case's goldens and add the sanitizer's findings")
    m.add_argument("--config", metavar="F", default=None, help="a pypto-lsp.toml (default: found by walking up from FILE)")
    m.add_argument("--backend", metavar="NAME", default=None, help="memory capacities of this PyPTO backend (910B, 950)")
    m.add_argument("-v", "--verbose", action="store_true", help="print the overlaps also with --html")
    m.set_defaults(func=cmd_memmap)
