"""Hover text: Markdown for the thing under an LSP position (a variable with its type and last-run
statistics, a function's signature and callers, an op's catalogue entry, a dtype, an enum member,
a DSL construct).

Pure functions over the IR and its :class:`~pypto_lsp.ir.symbols.SymbolIndex`; no JSON-RPC, no LSP
types, no torch. Positions are LSP style (0-based line and character).
"""

from __future__ import annotations

from ..ir.catalogue import RESULT_RULES, lookup
from ..ir.model import For, Name, OpCall, Param, Program, ScalarType, TensorType, TileType, Type, While
from ..ir.name_docs import CONSTRUCT_DOCS, DTYPE_DOCS, ENUM_DOCS, dtype_doc, enum_doc
from ..ir.names import DTYPES, ENUMS
from ..ir.printer import dims_str, expr_str, param_str, type_str
from ..ir.symbols import DTYPE, ENUM, FUNC_DEF, FUNC_REF, IDENT_CHARS, OP, VAR_DEF, VAR_USE, SymbolIndex, index_for

__all__ = ["hover_text", "op_signature"]

_STATUS_TEXT = {"supported": "supported", "noop": "no-op", "unsupported": "not supported by pypto-lsp yet"}

_DEF_ROLE = {
    "assign": "variable",
    "unpack": "variable (unpacked)",
    "loop_var": "loop variable",
    "iter_arg": "iter_arg (loop-carried)",
    "yield": "result of a loop/if (`pl.yield_` target)",
    "scope_as": "scope handle",
    "dynamic": "dynamic dimension (`pl.dynamic`)",
}


def op_signature(name: str) -> str | None:
    spec = lookup(name)
    if spec is None:
        return None
    kinds = spec.operand_kinds
    params = [(p if i < spec.min_args else p + "?") + (f": {kinds[p]}" if p in kinds else "") for i, p in enumerate(spec.params)]
    if spec.variadic:
        params.append("...")
    sig = f"{spec.name}({', '.join(params)})"
    if spec.kwargs:
        kw = spec.keyword_kinds
        sig += " {" + ", ".join(k + (f": {kw[k]}" if k in kw else "") for k in spec.kwargs) + "}"
    return sig


def hover_text(
    program: Program,
    line0: int,
    col0: int,
    stats: dict[str, dict] | None = None,
    index: SymbolIndex | None = None,
) -> str | None:
    """Markdown for the thing under an LSP position, or None."""
    idx = index_for(program, index)
    occ = idx.at(line0, col0)
    if occ is not None:
        if occ.kind in (VAR_DEF, VAR_USE):
            return _hover_var(idx, occ.func, occ.name, stats)
        if occ.kind in (FUNC_DEF, FUNC_REF):
            return _hover_function(idx, occ.name)
        if occ.kind == OP:
            return _hover_op(occ.obj if isinstance(occ.obj, OpCall) else None, occ.name)
        if occ.kind == DTYPE:
            return dtype_doc(occ.name)
        if occ.kind == ENUM:
            enum, _, member = occ.name.partition(".")
            return enum_doc(enum, member)
    return _hover_lexical(idx, line0, col0)


def _hover_var(idx: SymbolIndex, func: int, name: str, stats: dict[str, dict] | None) -> str:
    key = idx.resolve(func, name)
    ds = idx.defs.get(key, [])
    fn_name = idx.program.functions[func].name if 0 <= func < len(idx.program.functions) else ""
    out: list[str] = []
    if not ds:
        why = " (a free variable the printer emitted)" if "__FREE_VAR" in name else ""
        out.append(f"**`{name}`**: no definition in `{fn_name}`{why}")
    else:
        d0 = ds[0]
        if d0.kind == "param" and isinstance(d0.node, Param):
            role = f"parameter ({d0.node.direction}) of `{fn_name}`"
        elif d0.kind == "iter_arg" and isinstance(d0.node, For | While):
            loop = d0.node
            head = f"for {loop.var.name}" if isinstance(loop, For) and loop.var is not None else "pl.while_"
            role = f"iter_arg #{d0.index} of `{head}` (line {loop.span.line})"
        else:
            role = _DEF_ROLE.get(d0.kind, "variable")
        out.append(f"**`{name}`**: {role}")
        t, note = idx.type_of(func, name)
        if t is not None:
            out.append("")
            out.append(f"`{type_str(t)}`" + (f" *({note})*" if note else ""))
            details = _type_details(idx, t)
            if details:
                out.append("")
                out.extend(f"- {x}" for x in details)
        if d0.kind != "param":
            lines = sorted({d.span.line for d in ds})
            out.append("")
            if len(lines) == 1:
                out.append(f"defined at line {lines[0]}")
            else:
                out.append(f"defined {len(ds)}× at lines " + ", ".join(str(x) for x in lines))
        elif len(ds) > 1:  # a parameter re-assigned in a pre-SSA dump
            out.append("")
            out.append("re-assigned at lines " + ", ".join(str(x) for x in sorted({d.span.line for d in ds[1:]})))
    if stats is not None and name in stats:
        out.append("")
        out.append(_stats_line(stats[name]))
    return "\n".join(out)


def _type_details(idx: SymbolIndex, t: Type) -> list[str]:
    out: list[str] = []
    if isinstance(t, TensorType | TileType):
        dyn = [x.id for x in t.shape if isinstance(x, Name)]
        shape = f"shape `{dims_str(t.shape)}`"
        if dyn:
            shape += " (dynamic: " + ", ".join(f"`{n}`" for n in dyn) + ")"
        out.append(shape)
        out.append(f"dtype `{t.dtype}`: {DTYPE_DOCS.get(t.dtype, 'data type')}")
        mem = t.memspace if isinstance(t, TileType) else "DDR"
        if mem:
            out.append(f"memory `{mem}`: {ENUM_DOCS['Mem'].get(mem, '')}".rstrip(": "))
        if t.valid_shape is not None:
            out.append(f"valid_shape `{dims_str(t.valid_shape)}`")
        layout = t.layout if isinstance(t, TensorType) else t.blayout
        if layout:
            out.append(f"layout `{layout}`")
        if t.memref is not None:
            m = t.memref
            parts = [f"memref base `{m.base}`"]
            if m.offset is not None:
                parts.append(f"offset {expr_str(m.offset)}")
            if m.size is not None:
                parts.append(f"size {expr_str(m.size)} B")
            out.append(", ".join(parts))
    elif isinstance(t, ScalarType):
        out.append(f"dtype `{t.dtype}`: {DTYPE_DOCS.get(t.dtype, 'data type')}")
    return out


def _stats_line(s: dict) -> str:
    parts: list[str] = []
    if "shape" in s:
        parts.append(f"shape `{list(s['shape'])}`")
    if "dtype" in s:
        parts.append(str(s["dtype"]))
    for k in ("min", "max", "mean"):
        if k in s:
            parts.append(f"{k} {_num(s[k])}")
    nan, inf = s.get("nan"), s.get("inf")
    if nan is not None or inf is not None:
        bad = (nan or 0) + (inf or 0)
        parts.append(("⚠ " if bad else "") + f"NaN {nan or 0} · Inf {inf or 0}")
    return "**last run**: " + " · ".join(parts)


def _hover_function(idx: SymbolIndex, name: str) -> str:
    fn = idx.function_at(name)
    if fn is None:
        return f"**`{name}`**: unknown function (no `def {name}` in this program)"
    head = [f"{fn.kind} function"]
    if fn.level:
        head.append(f"level {fn.level}")
    if fn.role:
        head.append(f"role {fn.role}")
    out = [f"**`{fn.name}`**: " + " · ".join(head)]
    attrs = {k: v for k, v in fn.attrs.items() if k != "name"}
    if attrs:
        out.append("")
        out.append("attrs: " + ", ".join(f"`{k}={expr_str(v)}`" for k, v in attrs.items()))
    params = [param_str(p) for p in fn.params]
    ret = ""
    if len(fn.returns) == 1:
        ret = f" -> {type_str(fn.returns[0])}"
    elif fn.returns:
        ret = " -> tuple[" + ", ".join(type_str(r) for r in fn.returns) + "]"
    one = f"def {fn.name}({', '.join(params)}){ret}"
    if len(one) > 100 and params:
        one = f"def {fn.name}(\n" + "".join(f"    {p},\n" for p in params) + f"){ret}"
    out += ["", "```python", one, "```"]
    callers = idx.calls.get(name, [])
    if callers:
        names: list[str] = []
        for fi, _ in callers:
            n = idx.program.functions[fi].name
            if n not in names:
                names.append(n)
        out.append("")
        out.append(f"called {len(callers)}× from " + ", ".join(f"`{n}`" for n in names))
    return "\n".join(out)


def _hover_op(call: OpCall | None, name: str) -> str:
    spec = lookup(name)
    printed = call.printed if call is not None else name
    if spec is None:
        return f"**`{printed}`**: unknown op (not in the PyPTO op catalogue)"
    out = [f"**`{op_signature(spec.name)}`**", "", spec.doc, ""]
    if spec.result is not None:
        out.append(f"result: {RESULT_RULES[spec.result]}")
    else:
        out.append("result: given by the assignment's annotation")
    out.append("")
    out.append(f"executor: {_STATUS_TEXT.get(spec.status, spec.status)}")
    return "\n".join(out)


def _word_at(line: str, col: int) -> str:
    if not line:
        return ""
    col = min(col, len(line))
    if col == len(line) or line[col] not in IDENT_CHARS:
        if col > 0 and line[col - 1] in IDENT_CHARS:
            col -= 1
        else:
            return ""
    a = col
    while a > 0 and line[a - 1] in IDENT_CHARS:
        a -= 1
    b = col
    while b < len(line) and line[b] in IDENT_CHARS:
        b += 1
    return line[a:b].strip(".")


def _hover_lexical(idx: SymbolIndex, line0: int, col0: int) -> str | None:
    """dtypes / enums / DSL words the model keeps no span for (inside type annotations, decorators)."""
    if not 0 <= line0 < len(idx.lines):
        return None
    word = _word_at(idx.lines[line0], col0)
    parts = word.split(".")
    if len(parts) < 2 or parts[0] not in ("pl", "pld"):
        return None
    if len(parts) == 2 and parts[1] in DTYPES:
        return dtype_doc(parts[1])
    if len(parts) == 3 and parts[1] in ENUMS:
        return enum_doc(parts[1], parts[2])
    doc = CONSTRUCT_DOCS.get(word)
    if doc is not None:
        return f"`{word}`: {doc}"
    if len(parts) >= 3 and lookup(word) is not None:
        return _hover_op(None, word)
    return None


def _num(v: object) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)
