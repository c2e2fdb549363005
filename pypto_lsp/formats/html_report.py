"""``pypto-lsp validate --report report.html``: one self-contained HTML file.

The pass chart, the summary table, the error map of each failing tensor of the first
divergent pass and the task graph of each file with a race (:mod:`.taskgraph`; a file whose
graph is the same as the file before's is named under that picture, not drawn again). Vega, Vega-Lite, vega-embed (pinned in ``report_assets/package.json``, shipped
minified as package data) and the drawing code (``report_assets/render.js``, shared with the
VS Code webviews) are inlined, as is the data: the file needs no network and no server, so a
CI job can keep it as an artifact.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from ..validate.report import Report
from .irdiff import CSS as IRDIFF_CSS
from .irdiff import ir_diff_section
from .passchart import pass_chart
from .taskgraph import report_graphs

ASSETS = ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js", "render.js", "taskgraph.js")


def asset_text(name: str) -> str:
    return resources.files("pypto_lsp.report_assets").joinpath(name).read_text(encoding="utf-8")


def result_json(fr: Any) -> dict[str, Any]:
    """A file result as JSON, with its ``memory`` findings when the result has them."""
    d = fr.to_json()
    mem = getattr(fr, "memory", None)
    if "memory" not in d and mem is not None:
        d["memory"] = mem.to_json() if hasattr(mem, "to_json") else mem
    return d


def report_data(
    report: Report,
    inputs: Mapping[str, Any] | None = None,
    expected: Mapping[str, Any] | None = None,
    *,
    entry: str | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    """The chart of every file and, with goldens, the error maps of the first divergent pass's failing tensors."""
    fd = report.first_divergent
    rows = [result_json(f) for f in report.files]
    chart = pass_chart(rows, fd.file if fd is not None else None)
    maps: list[dict[str, Any]] = []
    map_error = None
    if fd is not None and fd.status == "fail" and inputs is not None and expected is not None:
        from ..validate.errormap import error_maps

        try:
            from ..ir.parser import read_dump  # never more than the size limit

            text = read_dump(fd.file).decode("utf-8-sig")
            res = error_maps(
                text, inputs, expected, filename=fd.file, rtol=fd.rtol, atol=fd.atol, entry=entry, timeout=timeout, only_failing=True
            )
            maps = res["maps"]
            map_error = res["error"]
        except Exception as exc:  # the report still has the chart and the table
            map_error = f"{type(exc).__name__}: {exc}"
    return {"chart": chart, "maps": maps, "map_error": map_error, "task_graphs": report_graphs(rows)}


def _json_script(data: Any) -> str:
    # inside <script>, '<' must not start '</script>' or '<!--': JSON allows it escaped
    return json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3e}"


def _table(report: Report, chart: dict[str, Any]) -> str:
    tensors = chart["tensors"]
    head = "".join(f"<th>{html.escape(t)} max |Δ|</th>" for t in tensors)
    rows = []
    for fr, p in zip(report.files, chart["passes"], strict=True):
        cells = "".join(f"<td class='num'>{_fmt(fr.tensors[t].max_abs_diff) if t in fr.tensors else ''}</td>" for t in tensors)
        err = ""
        if fr.error is not None:
            where = f"line {fr.error.line}: " if fr.error.line else ""
            err = html.escape(f"{fr.error.kind}: {where}{fr.error.message}"[:400])
        mem = p.get("memory")
        if mem and mem.get("hazards"):
            err = (err + " · " if err else "") + html.escape(
                f"{mem['hazards']} memory or sanitizer finding(s): {mem.get('first') or ''}"[:400]
            )
        cls: list[str] = [fr.status]
        if p["first_divergent"]:
            cls.append("first")
        if p["unchanged"]:
            cls.append("unchanged")
        note = " <span class='tag'>first divergent</span>" if p["first_divergent"] else ""
        note += " <span class='tag muted'>IR unchanged</span>" if p["unchanged"] else ""
        rows.append(
            f"<tr id='pass-{p['index']}' class='{' '.join(cls)}'><td><a href='{html.escape(Path(fr.file).resolve().as_uri())}'>"
            f"{html.escape(Path(fr.file).name)}</a>{note}</td><td class='status'>{fr.status}</td>{cells}"
            f"<td class='num'>{fr.seconds:.3f}</td><td class='err'>{err}</td></tr>"
        )
    return (
        "<table class='summary'><thead><tr><th>pass</th><th>status</th>"
        f"{head}<th>seconds</th><th>error / memory</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


_CSS = """
:root { --fg: #1f2328; --bg: #ffffff; --muted: #6e7781; --line: #d0d7de; --bad: #cf222e; --ok: #1a7f37; }
@media (prefers-color-scheme: dark) { :root { --fg: #d4d4d4; --bg: #1e1e1e; --muted: #8b8b8b; --line: #3c3c3c; --bad: #f48771; --ok: #89d185; } }
body { font: 14px system-ui, sans-serif; color: var(--fg); background: var(--bg); margin: 24px; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 28px 0 8px; }
.muted, .tag.muted { color: var(--muted); }
table.summary { border-collapse: collapse; margin-top: 8px; }
table.summary th, table.summary td { border-bottom: 1px solid var(--line); padding: 3px 10px; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; font-family: ui-monospace, monospace; }
tr.fail td.status, tr.error td.status { color: var(--bad); font-weight: 600; } tr.pass td.status { color: var(--ok); }
tr.unchanged { opacity: 0.6; } tr.first { outline: 2px solid var(--bad); } tr.picked { background: rgba(127,127,127,0.2); }
.tag { font-size: 11px; border: 1px solid currentColor; border-radius: 8px; padding: 0 6px; margin-left: 6px; color: var(--bad); }
td.err { max-width: 560px; font-size: 12px; } a { color: inherit; }
.error-map { margin: 12px 0 24px; }
"""

_BOOT = """
(function () {
  var data = JSON.parse(document.getElementById('pypto-data').textContent);
  var host = document.getElementById('pictures');
  // maxWidth: the page's width, so the chart (its last passes, their labels) fits the window
  window.pyptoPictures.renderAll(host, data, { maxWidth: host.clientWidth, onPassClick: function (d) {
    var row = document.getElementById('pass-' + d.index);
    if (!row) { return; }
    document.querySelectorAll('tr.picked').forEach(function (r) { r.classList.remove('picked'); });
    row.classList.add('picked'); row.scrollIntoView({ block: 'center' });
  } });
  (data.task_graphs || []).forEach(function (g, i) {
    window.pyptoTaskGraph.renderAll(document.getElementById('task-graph-' + i), g, {});
  });
})();
"""


def _task_graphs(graphs: list[dict[str, Any]]) -> str:
    if not graphs:
        return ""
    parts = [
        "<h2>Task order · races</h2><p class='muted'>The runtime's tasks of each file with a race: a task one layer "
        "below the deepest task it waits for, grey arrows the dependencies, red dashed lines the racing pairs.</p>"
    ]
    for i, g in enumerate(graphs):
        same = g.get("same_in") or []
        note = ""
        if same:
            names = ", ".join(html.escape(Path(f).name) for f in same[:6]) + (f" and {len(same) - 6} more" if len(same) > 6 else "")
            note = f"<p class='muted'>The same graph in {names}.</p>"
        parts.append(f"<div id='task-graph-{i}' class='task-graph-host'></div>{note}")
    return "".join(parts)


def render_html(report: Report, data: dict[str, Any], title: str) -> str:
    chart = data["chart"]
    fd = report.first_divergent
    s = report.summary()
    # "ran": a returned value run with nothing to compare it with; said only when there is one
    ran = f", {s['ran']} ran" if s["ran"] else ""
    lead = f"{s['pass']} pass, {s['fail']} fail, {s['error']} error{ran} in {s['seconds']:.2f} s · first divergent pass: " + (
        html.escape(Path(fd.file).name) if fd is not None else "none"
    )
    maps_note = ""
    if fd is not None and fd.status == "fail" and not data["maps"]:
        maps_note = f"<p class='muted'>No error map: {html.escape(str(data.get('map_error') or 'no golden to compare'))}</p>"
    elif fd is not None and fd.status == "error":
        maps_note = "<p class='muted'>The first divergent pass raised an error: it has no output to map.</p>"
    body = (
        f"<h1>pypto-lsp · {html.escape(title)}</h1><p class='muted'>{lead}</p>"
        "<div id='pictures'><h2>Where in the pipeline</h2><div class='pass-chart'></div>"
        f"<h2>Summary</h2>{_table(report, chart)}"
        f"<h2>Where in the tensor{' · ' + html.escape(Path(fd.file).name) if fd is not None else ''}</h2>{maps_note}</div>"
        f"{_task_graphs(data.get('task_graphs') or [])}"
        f"{ir_diff_section(report)}"
    )
    return standalone_page(title, body, data, ASSETS, _BOOT)


def standalone_page(title: str, body: str, data: Any, assets: tuple[str, ...], boot: str) -> str:
    """One self-contained HTML file: ``body``, ``data`` as JSON (``#pypto-data``), the ``assets``
    inlined and the ``boot`` script that draws; nothing from the network."""
    scripts = "\n".join(f"<script>/* {name} */\n{asset_text(name)}\n</script>" for name in assets)
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
        "style-src 'unsafe-inline'; img-src data:\">"
        f"<title>{html.escape(title)}</title><style>{_CSS}{IRDIFF_CSS}</style></head><body>{body}"
        f"<script type='application/json' id='pypto-data'>{_json_script(data)}</script>"
        f"{scripts}\n<script>{boot}</script></body></html>\n"
    )


def write_report(
    path: str | Path,
    report: Report,
    inputs: Mapping[str, Any] | None = None,
    expected: Mapping[str, Any] | None = None,
    *,
    title: str | None = None,
    entry: str | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    """Write the HTML report; returns the data drawn in it."""
    data = report_data(report, inputs, expected, entry=entry, timeout=timeout)
    name = title
    if name is None and report.files:
        folder = Path(report.files[0].file).parent.resolve()
        try:
            name = str(folder.relative_to(Path.cwd()))
        except ValueError:
            name = str(folder)
    Path(path).parent.mkdir(parents=True, exist_ok=True)  # as --junit and --sarif do
    Path(path).write_text(render_html(report, data, name or "validation report"), encoding="utf-8")
    return data
