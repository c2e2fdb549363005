"""A dump's code lenses as a pure function of its :class:`.documents.DocView`: the verdict, actions, each function's kind.

Lenses are built from state the server already holds (the last parse, the last
result), so the request never waits for a run: a run in flight shows ``… validating``,
and ``workspace/codeLens/refresh`` (when the client supports it) asks for new lenses
when a result lands. No ``codeLens/resolve``: there is nothing left to compute.

Line 0: per output tensor ``✓ out max|Δ| 9.77e-04 (atol 5e-2) · 41 ms`` /
``✗ out max|Δ| 2.39e-01 > atol 5e-2 · 40 ms``, or ``✗ error: <kind> (line N)``, then
``Validate this pass``, ``Validate all passes``, ``Compare with previous pass``, ``Debug this pass`` (the
last two are implemented by the VS Code extension); on each failing tensor ``Show error map of 'out'``
(the VS Code extension's webview, drawn from ``pypto-lsp/errorMap``). On the first divergent pass, once the
worker has localised it: ``⚑ first differing value: line N 'name'`` (revealed by the VS
Code extension) and, above that statement, what differs. Without goldens the folder's earliest
dump is the reference and the verdicts say so (``✓ out max|Δ| 0 vs 00_frontend (no goldens) …``). On each ``def``: ``<Kind> · called N×`` when the last run counted calls.
"""

from __future__ import annotations

from lsprotocol import types

from . import contract as C
from . import memory as M
from . import results as R
from .documents import DocView


def _lens(line: int, title: str, command: str, args: list[object] | None = None) -> types.CodeLens:
    return types.CodeLens(
        range=types.Range(types.Position(line, 0), types.Position(line, 0)),
        command=types.Command(title=title, command=command, arguments=args),
    )


def lenses_for(v: DocView) -> list[types.CodeLens]:
    if not v.is_open:
        return []
    uri = v.uri
    out: list[types.CodeLens] = []
    if v.validation:
        if v.config_error:
            out.append(_lens(0, f"✗ config: {v.config_error[:120]}", C.NO_ACTION))
        elif v.no_golden:
            out.append(_lens(0, "Configure golden tensors…", C.CONFIGURE_GOLDEN, [uri]))
        else:
            if v.pending:
                out.append(_lens(0, "… validating", C.NO_ACTION))
            elif v.result is not None:
                for title in R.verdict_titles(v.result, v.compared_label):
                    # clicking a verdict runs it again (a lens needs some command in most clients)
                    out.append(_lens(0, title + (" (before edits)" if v.stale else ""), C.VALIDATE_FILE, [uri]))
            # the actions right after the verdict: a lens row is one line, and what comes late in a
            # long row is cut off at the editor's edge (where-to-look lenses can be long)
            out.append(_lens(0, "Validate this pass", C.VALIDATE_FILE, [uri]))
            out.append(_lens(0, "Validate all passes", C.VALIDATE_FOLDER, [uri]))
            out.append(_lens(0, "Compare with previous pass", C.COMPARE_WITH_PREVIOUS, [uri]))
            if v.result is not None and not v.pending:
                for name, t in v.result.tensors.items():
                    if not t.passed:  # where in the tensor: the error map (a webview of the VS Code extension)
                        out.append(_lens(0, f"Show error map of '{name}'", C.SHOW_ERROR_MAP, [uri, name]))
            mem = M.lens_title(v.result) if not v.pending else None
            if mem is not None:
                out.append(_lens(0, mem[0], C.REVEAL_LINE, [uri, mem[1] - 1]))
                out.append(_lens(0, "Show memory map", C.SHOW_MEMORY_MAP, [uri]))  # a webview of the VS Code extension
            tasks = v.result.tasks if v.result is not None and not v.pending else None
            if tasks and tasks.get("races"):
                out.append(_lens(0, "Show task graph", C.SHOW_TASK_GRAPH, [uri]))  # a webview of the VS Code extension
            loc = v.divergence
            if loc is not None and loc.value is not None and loc.key[0] == v.result_hash and not v.pending:
                # the first differing value (see validation.Validator.localize_first_divergent): where to look
                val = loc.value
                out.append(_lens(0, f"⚑ first differing value: line {val.line} '{val.name}'", C.REVEAL_LINE, [uri, val.line - 1]))
                out.append(_lens(val.line - 1, f"⚑ first value that differs from {loc.previous.name} · {val.detail}", C.NO_ACTION))
            # last on the row: what a failing pass needs first (its maps, where to look) comes before
            out.append(_lens(0, "Debug this pass", C.DEBUG_PASS, [uri]))  # the VS Code extension's `pypto` debugger
            if v.path is not None and v.compared_label:
                out.append(_lens(0, "Configure golden tensors…", C.CONFIGURE_GOLDEN, [uri]))
    program = v.program
    if program is not None:
        counts = v.result.call_counts if v.result is not None else {}
        for fn in program.functions:
            n = counts.get(fn.name)
            title = f"{fn.kind} · called {n}×" if n is not None else fn.kind
            out.append(_lens(max(fn.name_span.line - 1, 0), title, C.NO_ACTION))
    return out
