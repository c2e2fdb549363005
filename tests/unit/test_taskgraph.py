"""The task graph's picture data (formats/taskgraph.py): layers by longest dependency chain, program
order inside a layer, race segments that never move a task; the report draws the files with races.
Real runs of the sanitizer on tests/unit/test_sanitizer.py's producer / consumer dump."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pypto_lsp.formats.html_report import render_html, report_data
from pypto_lsp.formats.taskgraph import report_graphs, task_graph_layout
from pypto_lsp.validate.report import FileResult, Report

from .test_sanitizer import PIPELINE, A, T, orch, run


def tasks(n: int, edges: list[tuple[int, int]], races: tuple[tuple[int, int, str], ...] = ()) -> dict[str, Any]:
    return {
        "nodes": [{"id": i, "line": 10 + i, "callee": f"k{i}"} for i in range(n)],
        "edges": [{"from": a, "to": b} for a, b in edges],
        "races": [{"from": a, "to": b, "kind": k} for a, b, k in races],
        "truncated": False,
    }


def test_layers_are_the_longest_dependency_chain_and_races_do_not_move_tasks() -> None:
    # 0 -> 1, 0 -> 2, 1 -> 3, 2 -> 3, 3 -> 5; 4 waits for nothing; 4 and 5 race
    g = task_graph_layout(tasks(6, [(0, 1), (0, 2), (1, 3), (2, 3), (3, 5)], ((4, 5, "WAW"),)), "f.py")
    pos = {n["id"]: (n["x"], n["y"]) for n in g["nodes"]}
    assert pos == {0: (-0.5, 0), 4: (0.5, 0), 1: (-0.5, 1), 2: (0.5, 1), 3: (0.0, 2), 5: (0.0, 3)}
    assert (g["layers"], g["width"], g["counts"]) == (4, 2, {"tasks": 6, "edges": 5, "races": 1})
    # every dependency points downwards: a segment from the waited-for task to the waiting one
    assert all(e["y2"] > e["y"] for e in g["edges"])
    assert {(e["from"], e["to"]): (e["x"], e["y"], e["x2"], e["y2"]) for e in g["edges"]}[(3, 5)] == (0.0, 2, 0.0, 3)
    (r,) = g["races"]
    assert (r["from"], r["to"], r["kind"], r["x"], r["y"], r["x2"], r["y2"]) == (4, 5, "WAW", 0.5, 0, 0.0, 3)
    assert [n["id"] for n in g["nodes"] if n["racing"]] == [4, 5]
    assert g["nodes"][0]["label"] == "k0 · L10" and g["file"] == "f.py"


def test_bad_parts_are_dropped_never_raised() -> None:
    bad = {
        "nodes": [{"id": 0, "line": 3, "callee": "a"}, {"id": "x"}, {"id": 0, "callee": "dup"}, {"id": 1, "line": None}, "junk"],
        "edges": [{"from": 0, "to": 7}, {"from": 0, "to": 1}, {"from": 0, "to": 1}, {"from": True, "to": 1}],
        "races": [{"from": 1, "to": 1, "kind": "RAW"}, {"to": 0}],
    }
    g = task_graph_layout(bad)
    assert [(n["id"], n["label"]) for n in g["nodes"]] == [(0, "a · L3"), (1, "?")]
    assert [(e["from"], e["to"]) for e in g["edges"]] == [(0, 1)] and g["races"] == []
    # a cycle (never from the sanitizer) falls back to program order
    cyc = task_graph_layout(tasks(2, [(0, 1), (1, 0)]))
    assert [n["y"] for n in cyc["nodes"]] == [0, 1]
    assert task_graph_layout(None)["nodes"] == [] and task_graph_layout({"nodes": 5})["counts"]["tasks"] == 0


def test_a_no_dep_read_of_a_real_run_is_a_red_pair_in_one_layer() -> None:
    r = run(orch(PIPELINE.format(T=T, tag="no_dep")), A)
    g = task_graph_layout(r.tasks)
    assert [(n["callee"], n["line"], n["y"]) for n in g["nodes"]] == [("k_scale", 21, 0), ("k_add1", 22, 0)]
    assert g["edges"] == [] and [(x["from"], x["to"], x["kind"]) for x in g["races"]] == [(0, 1, "RAW")]
    ok = task_graph_layout(run(orch(PIPELINE.format(T=T, tag="input")), A).tasks)
    assert [n["y"] for n in ok["nodes"]] == [0, 1] and ok["races"] == [] and len(ok["edges"]) == 1


def test_the_report_draws_each_distinct_graph_with_races_once() -> None:
    race = run(orch(PIPELINE.format(T=T, tag="no_dep")), A)
    ok = run(orch(PIPELINE.format(T=T, tag="input")), A)
    files = []
    for name, fr in (("37_a.py", ok), ("38_b.py", race), ("39_c.py", race), ("40_d.py", ok), ("41_e.py", race)):
        d = fr.to_json()
        d["file"] = f"/x/{name}"
        files.append(d)
    graphs = report_graphs(files)
    # 38 and 39 are one picture; 41 comes after a file without races: drawn again
    assert [(Path(g["file"]).name, [Path(f).name for f in g["same_in"]]) for g in graphs] == [("38_b.py", ["39_c.py"]), ("41_e.py", [])]
    assert len(report_graphs(files, limit=1)) == 1

    report = Report([FileResult.from_json(d) for d in files])
    data = report_data(report)
    assert len(data["task_graphs"]) == 2
    page = render_html(report, data, "t")
    assert "id='task-graph-0'" in page and "id='task-graph-1'" in page and "The same graph in 39_c.py" in page
    assert "root.pyptoTaskGraph = " in page and "pyptoTaskGraph.renderAll(document.getElementById('task-graph-'" in page  # inlined, drawn
