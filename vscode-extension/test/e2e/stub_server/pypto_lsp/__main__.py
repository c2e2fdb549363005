"""`python -m pypto_lsp serve` for the e2e stub (see __init__.py)."""

import os
import sys
import time
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.lsp.server import LanguageServer

BROKEN = "[b0__ssa_v0, 0]"
server = LanguageServer("pypto-lsp-e2e-stub", "0.0.0")
options = {"runOn": "onSave", "validation": True, "rtol": 0.05, "atol": 0.05}
results = {}


def path_of(uri):
    return unquote(urlparse(uri).path)


def is_dump(uri, text):
    p = path_of(uri)
    return p.endswith(".py") and ("/passes_dump" in p or text.startswith("# pypto.program:"))


def text_of(uri):
    doc = server.workspace.text_documents.get(uri)
    if doc is not None:
        return doc.source
    with open(path_of(uri), encoding="utf-8") as f:
        return f.read()


def validate(uri):
    t0 = time.perf_counter()
    text = text_of(uri)
    diags = []
    line = next((i for i, l in enumerate(text.splitlines()) if BROKEN in l), None)
    if line is None:
        tensors = {"out": {"max_abs_diff": 9.765625e-4, "max_rel_diff": 2.1e-3, "pass": True}}
        status, error = "pass", None
    else:
        tensors = {"out": {"max_abs_diff": 0.2393, "max_rel_diff": 1.7, "pass": False}}
        status = "fail"
        col = text.splitlines()[line].index(BROKEN)
        msg = "tensor 'out' mismatch: max |Δ| 2.393e-01 > atol 0.05 + rtol 0.05·|expected| (stub)"
        error = {"kind": "mismatch", "message": msg, "line": line + 1, "column": col + 1}
        rng = types.Range(types.Position(line, col), types.Position(line, col + len(BROKEN)))
        diags.append(types.Diagnostic(range=rng, message=msg, severity=types.DiagnosticSeverity.Error, source="pypto-lsp"))
    time.sleep(0.05)
    folder = uri.rsplit("/", 1)[0]
    fr = {
        "uri": uri,
        "file": uri.rsplit("/", 1)[1],
        "status": status,
        "tensors": tensors,
        "seconds": time.perf_counter() - t0,
        "error": error,
        "cached": False,
        "first_divergent": None,
    }
    results[uri] = fr
    failing = sorted(u for u, r in results.items() if u.rsplit("/", 1)[0] == folder and r["status"] == "fail")
    fr["first_divergent"] = failing[0] if failing else None
    server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diags))
    server.protocol.notify("pypto-lsp/fileResult", fr)
    server.workspace_code_lens_refresh(None)
    return fr


def maybe_validate(uri, event):
    if not is_dump(uri, text_of(uri)):
        return
    if options.get("validation") and (options.get("runOn") != "manual") and event in ("open", "save", options.get("runOn")):
        validate(uri)


@server.feature(types.INITIALIZE)
def on_initialize(params: types.InitializeParams):
    options.update(params.initialization_options or {})
    print(f"stub: initialize with {options}", file=sys.stderr, flush=True)


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def on_config(params: types.DidChangeConfigurationParams):
    options.update((params.settings or {}).get("pypto-lsp", {}))
    print(f"stub: settings now {options}", file=sys.stderr, flush=True)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def on_open(params: types.DidOpenTextDocumentParams):
    maybe_validate(params.text_document.uri, "open")


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def on_save(params: types.DidSaveTextDocumentParams):
    maybe_validate(params.text_document.uri, "save")


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def on_change(params: types.DidChangeTextDocumentParams):
    maybe_validate(params.text_document.uri, "onType")


@server.feature(types.TEXT_DOCUMENT_CODE_LENS)
def code_lens(params: types.CodeLensParams):
    uri = params.text_document.uri
    if not is_dump(uri, text_of(uri)):
        return []
    r = results.get(uri)
    top = types.Range(types.Position(0, 0), types.Position(0, 0))
    if r is None:
        verdict = "PyPTO: not validated"
    else:
        mark = "✓ PASS" if r["status"] == "pass" else "✗ FAIL"
        diffs = ", ".join(f"{k} max|Δ| {v['max_abs_diff']:.2e}" for k, v in r["tensors"].items())
        verdict = f"{mark} {diffs} · {r['seconds']:.2f} s"
    lens = [
        (verdict, ""),
        ("Validate this pass", "pypto-lsp.validateFile"),
        ("Validate all passes", "pypto-lsp.validateFolder"),
        ("Compare with previous pass", "pypto-lsp.compareWithPrevious"),
    ]
    return [types.CodeLens(range=top, command=types.Command(title=t, command=c, arguments=[uri] if c else None)) for t, c in lens]


@server.command("pypto-lsp.validateFile")
def cmd_validate_file(ls, uri):
    return validate(uri)


@server.command("pypto-lsp.validateFolder")
def cmd_validate_folder(ls, uri):
    p = path_of(uri)
    folder = p if os.path.isdir(p) else os.path.dirname(p)
    files = [validate("file://" + os.path.join(folder, n)) for n in sorted(os.listdir(folder)) if n.endswith(".py")]
    failing = [f["uri"] for f in files if f["status"] == "fail"]
    return {"files": files, "first_divergent": failing[0] if failing else None}


@server.command("pypto-lsp.firstDivergentPass")
def cmd_first_divergent(ls, uri):
    res = cmd_validate_folder(ls, uri)
    fd = res["first_divergent"]
    if fd is None:
        return None
    line = next(i for i, l in enumerate(text_of(fd).splitlines()) if BROKEN in l)
    return {"uri": fd, "range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}}}


@server.command("pypto-lsp.showGeneratedCode")
def cmd_codegen(ls, uri):
    return f"# generated by the e2e stub for {path_of(uri)}\nimport torch\n"


@server.command("pypto-lsp.showConfig")
def cmd_config(ls, uri=None):
    return {"server": "e2e stub", "options": options, "uri": uri}


if __name__ == "__main__":
    if sys.argv[1:] != ["serve"]:
        sys.exit("usage: python -m pypto_lsp serve")
    server.start_io()
