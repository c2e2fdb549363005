"""PyPTO's op registry as data, and the catalogue listed against it (``pypto-lsp ops``).

``op_registry.json`` (package data beside this module) holds every op PyPTO registers
(``REGISTER_OP`` in its C++ source), the file registering it and the commit it was read at;
``tools/gen_op_registry.py`` writes it from a pypto checkout. ``tests/unit/test_op_registry.py``
holds the catalogue (:mod:`.catalogue`) against it. No torch: whether an op executes is the
catalogue's status, which that test keeps equal to having a kernel.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

from .catalogue import OPS

__all__ = ["Registry", "load_registry", "OpListing", "listing", "listing_json", "listing_text"]

# where the names only the reference torch codegen knows are defined (UNREGISTERED_OPS)
_REFERENCE_CODEGEN = "python/pypto/debug/torch_codegen.py"


@dataclass(frozen=True, slots=True)
class Registry:
    """The registry at one commit: op name -> the pypto source file registering it."""

    source: str
    commit: str
    ops: dict[str, str]


@functools.cache
def load_registry() -> Registry:
    raw = json.loads(resources.files(__package__).joinpath("op_registry.json").read_text(encoding="utf-8"))
    return Registry(source=str(raw["source"]), commit=str(raw["commit"]), ops={str(k): str(v) for k, v in raw["ops"].items()})


@dataclass(frozen=True, slots=True)
class OpListing:
    """One op as ``pypto-lsp ops`` lists it."""

    name: str
    executes: bool  # a kernel runs it (or it is a declared no-op)
    status: str  # the catalogue's: "supported" | "noop" | "unsupported"
    doc: str
    defined_in: str  # the pypto file that defines its meaning (its registration, or the reference codegen)
    registered: bool  # in PyPTO's registry at the commit
    operands: dict[str, str]  # operand -> "tile" | "tensor" | "scalar" | "tuple" (those the registration names)
    keywords: dict[str, str]  # keyword attribute -> its declared kind ("dtype", "bool", "int", "memory_space" ...)


def listing() -> list[OpListing]:
    """Every catalogue row, by name."""
    reg = load_registry()
    out = []
    for name in sorted(OPS):
        spec = OPS[name]
        where = reg.ops.get(name, _REFERENCE_CODEGEN)  # else one of UNREGISTERED_OPS
        out.append(
            OpListing(
                name=name,
                executes=spec.status in ("supported", "noop"),
                status=spec.status,
                doc=spec.doc,
                defined_in=where,
                registered=name in reg.ops,
                operands=dict(spec.operand_kinds),
                keywords=dict(spec.keyword_kinds),
            )
        )
    return out


def listing_json() -> dict[str, Any]:
    """``pypto-lsp ops --json``: the registry's commit and counts, then every op."""
    reg = load_registry()
    rows = listing()
    registered = [r for r in rows if r.registered]
    return {
        "registry": {"source": reg.source, "commit": reg.commit, "ops": len(reg.ops)},
        "counts": {
            "rows": len(rows),
            "executes": sum(r.executes for r in rows),
            "registered_executes": sum(r.executes for r in registered),
            "registered_not_executed": sorted(r.name for r in registered if not r.executes),
        },
        "ops": [
            {
                "name": r.name,
                "executes": r.executes,
                "status": r.status,
                "doc": r.doc,
                "defined_in": r.defined_in,
                "registered": r.registered,
                "operands": r.operands,
                "keywords": r.keywords,
            }
            for r in rows
        ],
    }


def listing_text() -> str:
    """``pypto-lsp ops``: a line per op (name, runs or not, where pypto defines it, doc), then the counts."""
    data = listing_json()
    rows = data["ops"]
    width = max(len(r["name"]) for r in rows)
    lines = [f"{r['name']:<{width}}  {'runs' if r['executes'] else '--  '}  {r['defined_in']}  {r['doc']}" for r in rows]
    c, reg = data["counts"], data["registry"]
    lines.append(
        f"{c['rows']} ops, {c['executes']} run; PyPTO registers {reg['ops']} at {reg['commit'][:12]}, "
        f"{c['registered_executes']} of them run"
    )
    return "\n".join(lines)
