"""The task graph's picture data: the runtime's tasks of one run laid out in layers. No torch.

Input: a file result's ``tasks`` (``FileResult.tasks``, from :meth:`pypto_lsp.exec.sanitizer.Sanitizer.graph`,
as JSON: ``{"nodes": [{"id", "line", "callee"[, "rank"]}], "edges": [{"from", "to"}], "races": [{"from", "to",
"kind"}], "truncated"}``). A task's layer is its longest chain of dependencies (networkx's topological
generations: a task with no dependency is in layer 0, a task is one layer below the deepest task it
waits for); inside a layer the tasks keep program order. So every dependency points downwards and
two tasks in one layer never wait for each other. Racing pairs are not dependencies (that is the
point): they do not move a task, they are drawn as red dashed segments.

Coordinates: ``x`` the position in the layer (centred on 0, one unit apart), ``y`` the layer
(0 at the top). The same data feeds ``validate --report`` and the editor's webview
(``report_assets/taskgraph.js`` draws it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# the sanitizer keeps at most 500 tasks (``truncated``); so does the layout
MAX_NODES = 500


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _rows(v: Any) -> list[Mapping[str, Any]]:
    if not isinstance(v, Sequence) or isinstance(v, str | bytes):
        return []
    return [r for r in v if isinstance(r, Mapping)]


def _layers(ids: list[int], deps: list[tuple[int, int]]) -> dict[int, int]:
    """Layer of each task: its topological generation, or its program order if the edges are not a DAG."""
    import networkx as nx  # pure Python; imported on first use (the server starts without it)

    g = nx.DiGraph()
    g.add_nodes_from(ids)
    g.add_edges_from(deps)
    try:
        gens = list(nx.topological_generations(g))
    except nx.NetworkXUnfeasible:  # a cycle: not from the sanitizer, but drawn anyway
        return {n: i for i, n in enumerate(ids)}
    layer: dict[int, int] = {}
    for i, gen in enumerate(gens):
        for n in gen:
            layer[n] = i
    return layer


def task_graph_layout(tasks: Mapping[str, Any] | None, file: str | None = None) -> dict[str, Any]:
    """The picture's data: nodes with ``x``/``y``, dependency and race segments, counts.

    Malformed parts (an edge to an unknown task, a non-integer id) are dropped, never raised."""
    t = tasks if isinstance(tasks, Mapping) else {}
    nodes_in: list[dict[str, Any]] = []
    seen: set[int] = set()
    for r in _rows(t.get("nodes"))[:MAX_NODES]:
        i = _int(r.get("id"))
        if i is None or i in seen:
            continue
        seen.add(i)
        line = _int(r.get("line"))
        callee = str(r.get("callee") or "?")[:80]
        rank = _int(r.get("rank"))  # a multi-rank program: the rank whose runtime runs the task
        nodes_in.append({"id": i, "line": line, "callee": callee, **({"rank": rank} if rank is not None else {})})
    nodes_in.sort(key=lambda n: n["id"])  # program order

    def pairs(key: str) -> list[tuple[int, int, Mapping[str, Any]]]:
        out = []
        for r in _rows(t.get(key)):
            a, b = _int(r.get("from")), _int(r.get("to"))
            if a is not None and b is not None and a in seen and b in seen and a != b:
                out.append((a, b, r))
        return out

    deps = [(a, b) for a, b, _ in pairs("edges")]
    deps = list(dict.fromkeys(deps))
    layer = _layers([n["id"] for n in nodes_in], deps)
    by_layer: dict[int, list[int]] = {}
    for n in nodes_in:
        by_layer.setdefault(layer[n["id"]], []).append(n["id"])
    pos: dict[int, tuple[float, int]] = {}
    for ly, members in by_layer.items():
        k = len(members)
        for j, i in enumerate(members):
            pos[i] = (j - (k - 1) / 2, ly)
    racing: set[int] = set()
    races: list[dict[str, Any]] = []
    for a, b, r in pairs("races"):
        kind = str(r.get("kind") or "race")[:8]
        racing.update((a, b))
        races.append({"from": a, "to": b, "kind": kind, "x": pos[a][0], "y": pos[a][1], "x2": pos[b][0], "y2": pos[b][1]})
    nodes = []
    for n in nodes_in:
        x, y = pos[n["id"]]
        label = (f"r{n['rank']} " if "rank" in n else "") + n["callee"] + (f" · L{n['line']}" if n["line"] is not None else "")
        nodes.append({**n, "x": x, "y": y, "layer": y, "label": label, "racing": n["id"] in racing})
    edges = [{"from": a, "to": b, "x": pos[a][0], "y": pos[a][1], "x2": pos[b][0], "y2": pos[b][1]} for a, b in deps]
    return {
        "file": file,
        "nodes": nodes,
        "edges": edges,
        "races": races,
        "layers": len(by_layer),
        "width": max((len(m) for m in by_layer.values()), default=0),
        "truncated": bool(t.get("truncated")) or len(_rows(t.get("nodes"))) > MAX_NODES,
        "counts": {"tasks": len(nodes), "edges": len(edges), "races": len(races)},
    }


def report_graphs(files: Sequence[Mapping[str, Any]], limit: int = 4) -> list[dict[str, Any]]:
    """The task graphs worth a picture in a report: each file with races, a graph the file before
    already showed counted there (``same_in``) instead of drawn again; at most ``limit``."""
    out: list[dict[str, Any]] = []
    last: tuple[str, dict[str, Any]] | None = None  # the graph drawn for the file before
    for d in files:
        t = d.get("tasks")
        if not isinstance(t, Mapping) or not _rows(t.get("races")):
            last = None
            continue
        key = repr((t.get("nodes"), t.get("edges"), t.get("races")))
        if last is not None and last[0] == key:
            last[1]["same_in"].append(str(d.get("file", "")))
            continue
        last = None
        if len(out) >= limit:
            continue
        g = task_graph_layout(t, str(d.get("file", "")))
        g["same_in"] = []
        out.append(g)
        last = (key, g)
    return out
