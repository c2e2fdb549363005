"""Validation reports as CI reads them: JUnit XML (a testsuite per dump folder, a testcase per
pass file) and SARIF 2.1.0 (a result per failing output or error, with rule id, file and region).

No torch here: reports are plain data (:mod:`.report`).
"""

from __future__ import annotations

import json
import math
import os
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..ir.diagnostics import printable
from ..validate.report import ERROR, FAIL, FAILING_FINDINGS, RAN, FileResult, Hazard, Report, hazards_of, related_lines, writes_for

Run = tuple[str, Report, dict[str, Any]]  # (the PATH validated, its report, what it was compared with)

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFO_URI = "https://github.com/hw-native-sys/pypto"


def suite_name(path: str | Path) -> str:
    """A dump folder's readable name: the folder holding ``passes_dump/`` (``qwen3_scope3_910b``), else the folder."""
    p = Path(path)
    if p.suffix == ".py":
        p = p.parent
    if p.name.startswith("passes_dump"):
        return p.parent.name or p.name
    if (p / "passes_dump").is_dir():
        return p.name
    return p.name


def case_labels(config_file: Path, cases: list[Any]) -> list[str]:
    """A readable, unique name per ``[[cases]]`` entry: its ``name`` key, else :func:`suite_name` of its folder."""
    import tomllib

    data = tomllib.loads(config_file.read_text(encoding="utf-8"))
    if config_file.name == "pyproject.toml":
        data = data.get("tool", {}).get("pypto-lsp", {})
    raw = data.get("cases", [])
    out: list[str] = []
    seen: dict[str, int] = {}
    for i, case in enumerate(cases):
        name = raw[i].get("name") if i < len(raw) and isinstance(raw[i], dict) else None
        label = name if isinstance(name, str) and name else suite_name(case.dumps or config_file.parent)
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label}#{seen[label]}")
    return out


def _g(x: float) -> str:
    return "nan" if math.isnan(x) else f"{x:.4g}"


def failure_line(report: Report, fr: FileResult, tensor: str) -> int | None:
    """The IR line a failing output points at: the first differing value on the first divergent
    pass when it was localised, else the first statement that wrote the output."""
    v = report.first_differing_value
    if v is not None and report.first_divergent is fr:
        return v.line
    w = writes_for(fr, tensor)
    return w[0][0] if w else None


def failures(report: Report, fr: FileResult, compared: str) -> list[tuple[str, str, int | None]]:
    """(tensor, message, IR line) for each output of ``fr`` off its expected values."""
    out = []
    for name, t in fr.tensors.items():
        if t.passed:
            continue
        line = failure_line(report, fr, name)
        at = f" at line {line}" if line else ""
        out.append(
            (
                name,
                f"'{name}': max |Δ| {_g(t.max_abs_diff)} (max rel {_g(t.max_rel_diff)}) exceeds the tolerance "
                f"rtol {fr.rtol:g}, atol {fr.atol:g}{at} (vs {compared})",
                line,
            )
        )
    return out


def error_message(fr: FileResult) -> str:
    assert fr.error is not None
    at = f"line {fr.error.line}: " if fr.error.line else ""
    return f"{at}[{fr.error.kind}] {fr.error.message}"


# ---------------------------------------------------------------------- JUnit


def junit_tree(runs: Iterable[Run]) -> ET.ElementTree:
    root = ET.Element("testsuites", name="pypto-lsp")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    seconds = 0.0
    for path, report, compared in runs:
        label = compared.get("label", "goldens")
        suite = ET.SubElement(root, "testsuite", name=suite_name(path))
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="compared_with", value=str(label))
        ET.SubElement(props, "property", name="path", value=str(path))
        fd = report.first_divergent
        ET.SubElement(props, "property", name="first_divergent", value=Path(fd.file).name if fd else "none")
        counts = {"tests": 0, "failures": 0, "errors": 0}
        for fr in report.files:
            counts["tests"] += 1
            case = ET.SubElement(
                suite, "testcase", name=Path(fr.file).stem, classname=suite_name(path), file=str(fr.file), time=f"{fr.seconds:.3f}"
            )
            if fr.status == FAIL:
                counts["failures"] += 1
                fails = failures(report, fr, label)
                found = findings(fr)
                fails += [(str(h["kind"]), f"{h['kind']}: {h['message']}", h.get("line")) for h in found]
                first = fails[0] if fails else ("", "an output is off", None)
                if first[2]:
                    case.set("line", str(first[2]))
                kind = "numeric-mismatch" if fails and fails[0][0] not in {str(h["kind"]) for h in found} else finding_rule(first[0])
                el = ET.SubElement(case, "failure", message=first[1], type=kind)
                el.text = "\n".join(f"{Path(fr.file).name}:{line or 1}: {msg}" for _, msg, line in fails)
                if fr is fd and report.first_differing_value is not None and fd is not None:
                    i = report.files.index(fd)
                    prev = Path(report.files[i - 1].file).name if i > 0 else "?"
                    el.text += f"\n{Path(fr.file).name}:{report.first_differing_value.line}: {report.first_differing_value.describe(prev)}"
            elif fr.status == ERROR:
                counts["errors"] += 1
                assert fr.error is not None
                if fr.error.line:
                    case.set("line", str(fr.error.line))
                el = ET.SubElement(case, "error", message=error_message(fr), type=fr.error.kind)
                el.text = str(fr.error.detail.get("traceback") or fr.error.message)
            elif fr.status == RAN:
                ET.SubElement(case, "system-out").text = "ran: no expected tensors to compare"
        t = report.seconds or sum(f.seconds for f in report.files)
        seconds += t
        suite.set("tests", str(counts["tests"]))
        suite.set("failures", str(counts["failures"]))
        suite.set("errors", str(counts["errors"]))
        suite.set("skipped", "0")
        suite.set("time", f"{t:.3f}")
        for k in totals:
            totals[k] += counts[k]
    for k, v in totals.items():
        root.set(k, str(v))
    root.set("time", f"{seconds:.3f}")
    for el in root.iter():  # XML 1.0 cannot carry control characters (ESC, NUL from a key or a file name)
        el.attrib.update({k: printable(v) for k, v in el.attrib.items()})
        if el.text:
            el.text = printable(el.text)
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(path: str | Path, runs: Iterable[Run]) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    junit_tree(runs).write(p, encoding="utf-8", xml_declaration=True)


# ---------------------------------------------------------------------- SARIF

RULES: dict[str, tuple[str, str]] = {
    # id: (short description, full description)
    "numeric-mismatch": (
        "An output of the pass is off its expected values",
        "Re-executed with PyTorch, the pass dump computes an output tensor that is not allclose to the expected values "
        "(goldens, or the frontend's outputs without goldens). The location is the statement that wrote it, or on the "
        "first divergent pass the first value computed unlike the pass before.",
    ),
    "first-divergent-pass": (
        "The first pass whose results differ",
        "Every pass before this one reproduces the expected values; this pass is where to look first.",
    ),
    "static-error": ("The dump does not parse or check", "Parse or static check error in the dump (undefined name, bad arity, ...)."),
    "runtime-error": ("The dump raises when run", "An op raised while the dump ran (shapes, dtypes, an invalid IR construct)."),
    "cross-core-error": ("A cross-core pipe deadlocked or misbehaved", "A tpop/tpush between the AIC and AIV kernels blocked."),
    "golden-error": ("The goldens do not fit the entry", "The golden tensors do not match the entry's parameters."),
    "timeout": ("The run did not finish in time", "The dump did not finish within the timeout (an endless loop in the IR?)."),
    "memory/overwrite": (
        "A tile is read after another value overwrote its bytes",
        "The memory model: two live values placed on the same bytes.",
    ),
    "memory/pipe-slot": ("A tile lives inside a reserved pipe buffer", "A pushed tile lands on its bytes."),
    "sanitizer/race": (
        "Two tasks the runtime may reorder touch the same elements",
        "Overlapping global reads and writes with no dependency between the tasks (arg_directions, deps): RAW, WAR or WAW.",
    ),
    "sanitizer/uninitialised": ("Memory read before anything wrote it", "tile.create, or tensor.create without init_value, read first."),
    "sanitizer/out-of-bounds": ("A window reaches past its tensor or tile", "On the NPU it reads or writes neighbouring memory."),
    "sanitizer/fence": (
        "A remote write is not fenced before the notify that releases it",
        "Multi-rank: a put or remote store with no pl.system.fence() before the rank's next notify; the peer may see the "
        "signal before the data (what InsertCommFence inserts).",
    ),
}


def finding_rule(kind: str) -> str:
    """The SARIF rule of a memory or sanitizer finding (``memory.hazards``)."""
    # every kind that fails a file has its rule (test_ci_formats checks FAILING_FINDINGS against RULES)
    return f"sanitizer/{kind}" if kind in ("race", "uninitialised", "out-of-bounds", "fence") else f"memory/{kind}"


def findings(fr: FileResult) -> list[Hazard]:
    """The file's memory and sanitizer findings that fail it (what ``engine`` counts)."""
    return [h for h in hazards_of(fr) if h.get("kind") in FAILING_FINDINGS]


def rule_for(kind: str) -> str:
    if kind.startswith("static:") or kind in ("codegen", "no-entry", "parse"):
        return "static-error"
    if kind.startswith("cross-core"):
        return "cross-core-error"
    if kind == "golden":
        return "golden-error"
    if kind == "TimeoutError":
        return "timeout"
    return "runtime-error"


def _artifact(file: str, root: Path) -> dict[str, Any]:
    p = Path(file).resolve()
    try:
        return {"uri": p.relative_to(root).as_posix(), "uriBaseId": "SRCROOT"}
    except ValueError:
        return {"uri": p.as_uri()}


def _region(line: int | None, column: int | None = None, end_line: int | None = None, end_column: int | None = None) -> dict[str, Any]:
    r: dict[str, Any] = {"startLine": max(1, line or 1)}
    if column:
        r["startColumn"] = max(1, column)
    if end_line and end_line >= r["startLine"]:
        r["endLine"] = end_line
        if end_column and (end_line > r["startLine"] or end_column > r.get("startColumn", 1)):
            r["endColumn"] = end_column
    return r


def sarif_log(runs: Iterable[Run], root: str | Path | None = None) -> dict[str, Any]:
    from .. import __version__

    base = Path(root or os.getcwd()).resolve()
    results: list[dict[str, Any]] = []
    used: list[str] = []

    def add(rule: str, level: str, text: str, file: str, region: dict[str, Any], **extra: Any) -> None:
        if rule not in used:
            used.append(rule)
        results.append(
            {
                "ruleId": rule,
                "ruleIndex": used.index(rule),
                "level": level,
                "message": {"text": text},
                "locations": [{"physicalLocation": {"artifactLocation": _artifact(file, base), "region": region}}],
                **extra,
            }
        )

    compared_all = []
    for _path, report, compared in runs:
        label = str(compared.get("label", "goldens"))
        compared_all.append(compared)
        fd = report.first_divergent
        for fr in report.files:
            if fr.status == FAIL:
                for tensor, msg, line in failures(report, fr, label):
                    add("numeric-mismatch", "error", msg, fr.file, _region(line), properties={"tensor": tensor, "comparedWith": label})
                for h in findings(fr):
                    rel: dict[str, Any] = {}
                    lines = related_lines(h)
                    if lines:
                        rel["relatedLocations"] = [
                            {
                                "id": i,
                                "physicalLocation": {"artifactLocation": _artifact(fr.file, base), "region": _region(ln)},
                                "message": {
                                    "text": f"'{h.get('other_name')}'" if ln == h.get("other_line") else "the value flows through here"
                                },
                            }
                            for i, ln in enumerate(lines)
                        ]
                    add(finding_rule(str(h["kind"])), "error", str(h["message"]), fr.file, _region(h.get("line")), **rel)
            elif fr.status == ERROR and fr.error is not None:
                e = fr.error
                add(rule_for(e.kind), "error", error_message(fr), fr.file, _region(e.line, e.column, e.end_line, e.end_column))
        if fd is not None:
            i = report.files.index(fd)
            v = report.first_differing_value
            line = v.line if v is not None else (fd.error.line if fd.error else None)
            prev = Path(report.files[i - 1].file).name if i > 0 else None
            text = f"first divergent pass: {Path(fd.file).name} ({fd.status}, vs {label})"
            if v is not None and prev:
                text += f"; {v.describe(prev)}"
            related = []
            if v is not None and prev:
                related.append(
                    {
                        "id": 0,
                        "physicalLocation": {
                            "artifactLocation": _artifact(report.files[i - 1].file, base),
                            "region": _region(v.previous_line),
                        },
                        "message": {"text": f"the same value in {prev}"},
                    }
                )
            extra: dict[str, Any] = {"relatedLocations": related} if related else {}
            add("first-divergent-pass", "warning", text, fd.file, _region(line), **extra)
    rules = [
        {
            "id": rid,
            "name": "".join(w.capitalize() for w in rid.split("-")),
            "shortDescription": {"text": RULES[rid][0]},
            "fullDescription": {"text": RULES[rid][1]},
            "defaultConfiguration": {"level": "warning" if rid == "first-divergent-pass" else "error"},
        }
        for rid in used
    ]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "pypto-lsp", "version": __version__, "informationUri": INFO_URI, "rules": rules}},
                "originalUriBaseIds": {"SRCROOT": {"uri": base.as_uri() + "/"}},
                "results": results,
                "properties": {"comparedWith": compared_all},
            }
        ],
    }


def write_sarif(path: str | Path, runs: Iterable[Run], root: str | Path | None = None) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(sarif_log(runs, root), indent=1), encoding="utf-8")
