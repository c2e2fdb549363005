"""``textDocument/codeLens``: the verdict at the top of a dump, actions, and each function's kind.

Lenses are built from state the server already holds (the last parse, the last
result), so the request never waits for a run: a run in flight shows ``… validating``,
and ``workspace/codeLens/refresh`` (when the client supports it) asks for new lenses
when a result lands. No ``codeLens/resolve``: there is nothing left to compute.

Line 0: per output tensor ``✓ out max|Δ| 9.77e-04 (atol 5e-2) · 41 ms`` /
``✗ out max|Δ| 2.39e-01 > atol 5e-2 · 40 ms``, or ``✗ error: <kind> (line N)``, then
``Validate this pass``, ``Validate all passes``, ``Compare with previous pass`` (the
last one is implemented by the VS Code extension); on each failing tensor ``Show error map of 'out'``
(the VS Code extension's webview, drawn from ``pypto-lsp/errorMap``). On the first divergent pass, once the
worker has localised it: ``⚑ first differing value: line N 'name'`` (revealed by the VS
Code extension) and, above that statement, what differs. Without goldens the folder's earliest
dump is the reference and the verdicts say so (``✓ out max|Δ| 0 vs 00_frontend (no goldens) …``). On each ``def``: ``<Kind> · called N×`` when the last run counted calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from . import memmap
from . import memory as M
from . import results as R
from .documents import text_hash
from .parse_diagnostics import ensure_parsed

if TYPE_CHECKING:
    from .app import PyptoServer

VALIDATE_FILE = "pypto-lsp.validateFile"
VALIDATE_FOLDER = "pypto-lsp.validateFolder"
COMPARE_WITH_PREVIOUS = "pypto-lsp.compareWithPrevious"  # client-side (VS Code extension)
CONFIGURE_GOLDEN = "pypto-lsp.configureGolden"  # client-side (VS Code extension)
REVEAL_LINE = "pypto-lsp.revealLine"  # client-side (VS Code extension): [uri, 0-based line]
SHOW_ERROR_MAP = "pypto-lsp.showErrorMap"  # client-side (VS Code extension): [uri, tensor]; data: pypto-lsp/errorMap
NO_ACTION = ""  # a lens that only shows text


def _lens(line: int, title: str, command: str, args: list[object] | None = None) -> types.CodeLens:
    return types.CodeLens(
        range=types.Range(types.Position(line, 0), types.Position(line, 0)),
        command=types.Command(title=title, command=command, arguments=args),
    )


def lenses_for(ls: PyptoServer, uri: str) -> list[types.CodeLens]:
    st = ls.docs.get(uri)
    if st is None or not st.is_open:
        return []
    out: list[types.CodeLens] = []
    if ls.config.settings.validation:
        if st.config_error:
            out.append(_lens(0, f"✗ config: {st.config_error[:120]}", NO_ACTION))
        elif st.no_golden:
            out.append(_lens(0, "Configure golden tensors…", CONFIGURE_GOLDEN, [uri]))
        else:
            if st.pending:
                out.append(_lens(0, "… validating", NO_ACTION))
            elif st.result is not None:
                stale = st.result_hash != text_hash(ls.workspace.get_text_document(uri).source)
                vs = ls.config.get(st.path).compared_label if st.path is not None else None
                for title in R.verdict_titles(st.result, vs):
                    # clicking a verdict runs it again (a lens needs some command in most clients)
                    out.append(_lens(0, title + (" (before edits)" if stale else ""), VALIDATE_FILE, [uri]))
            # the actions right after the verdict: a lens row is one line, and what comes late in a
            # long row is cut off at the editor's edge (where-to-look lenses can be long)
            out.append(_lens(0, "Validate this pass", VALIDATE_FILE, [uri]))
            out.append(_lens(0, "Validate all passes", VALIDATE_FOLDER, [uri]))
            out.append(_lens(0, "Compare with previous pass", COMPARE_WITH_PREVIOUS, [uri]))
            if st.result is not None and not st.pending:
                for name, t in st.result.tensors.items():
                    if not t.passed:  # where in the tensor: the error map (a webview of the VS Code extension)
                        out.append(_lens(0, f"Show error map of '{name}'", SHOW_ERROR_MAP, [uri, name]))
            mem = M.lens_title(st.result) if not st.pending else None
            if mem is not None:
                out.append(_lens(0, mem[0], REVEAL_LINE, [uri, mem[1] - 1]))
                out.append(memmap.lens(uri))
            loc = st.divergence
            if loc is not None and loc.value is not None and loc.key[0] == st.result_hash and not st.pending:
                # the first differing value (see validation.localize_first_divergent): where to look
                v = loc.value
                out.append(_lens(0, f"⚑ first differing value: line {v.line} '{v.name}'", REVEAL_LINE, [uri, v.line - 1]))
                out.append(_lens(v.line - 1, f"⚑ first value that differs from {loc.previous.name} · {v.detail}", NO_ACTION))
            if st.path is not None and ls.config.get(st.path).compared_label:
                out.append(_lens(0, "Configure golden tensors…", CONFIGURE_GOLDEN, [uri]))
    program = st.program
    if program is not None:
        counts = st.result.call_counts if st.result is not None else {}
        for fn in program.functions:
            n = counts.get(fn.name)
            title = f"{fn.kind} · called {n}×" if n is not None else fn.kind
            out.append(_lens(max(fn.name_span.line - 1, 0), title, NO_ACTION))
    return out


def register(ls: PyptoServer) -> None:
    @ls.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
    async def code_lens(params: types.CodeLensParams) -> list[types.CodeLens] | None:
        await ensure_parsed(ls, params.text_document.uri)
        return lenses_for(ls, params.text_document.uri)
