"""Write ``pypto_lsp/ir/op_registry.json``: every op PyPTO registers, from its C++ source.

PyPTO registers each IR op once, with ``REGISTER_OP("ns.name")`` in a ``.cpp`` file under
``src/``. This script reads those registrations from a git checkout or bare mirror of
hw-native-sys/pypto at a commit (``git grep``, no work tree needed) and writes the op names,
the file registering each, and the commit, as the data ``tests/unit/test_op_registry.py``
holds the catalogue (``pypto_lsp/ir/catalogue.py``) against and ``pypto-lsp ops`` reads.

It also writes what kind of value each operand is (``operands``: a tile, a tensor, a scalar or a
tuple of scalars), read from the words of each ``.add_argument(name, description)`` of the
registration ("tensor|scalar" where it allows either, "handle" for a pointer, a context or a
future); an operand whose description names no kind is left out. The catalogue gives the kinds to the static checker and to hover.

    python tools/gen_op_registry.py --repo /work/.mirror/hw-native-sys+pypto/repo \\
        --commit e2d0f78ae6d709c0d6ee345a48db2c3d621a4b09

``--check`` compares instead of writing (exit 1 when the data file differs).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "pypto_lsp" / "ir" / "op_registry.json"
# the commit the shared fixtures were dumped with
DEFAULT_COMMIT = "e2d0f78ae6d709c0d6ee345a48db2c3d621a4b09"
_REGISTER = re.compile(r'REGISTER_OP\("([^"]+)"\)')
_ARGUMENT = re.compile(r'\.add_argument\(\s*"([^"]+)"\s*,((?:\s*"(?:[^"\\]|\\.)*")+)\s*\)')
_ATTRIBUTE = re.compile(r'\.set_attr<\s*([\w:]+)\s*>\(\s*"([^"]+)"')
# an attribute's C++ type -> the kind of value its keyword takes in a dump
_ATTR_KINDS = {
    "DataType": "dtype",
    "bool": "bool",
    "int": "int",
    "double": "number",
    "MemorySpace": "memory_space",
    "PadValue": "pad_value",
    "TileLayout": "layout",
    "TensorLayout": "layout",
    "std::string": "string",
}
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _git(repo: Path, *args: str) -> str:
    """``git`` on a work tree (``repo/.git``) or a bare repository (``repo`` itself)."""
    where = ["-C", str(repo)] if (repo / ".git").exists() else ["--git-dir", str(repo)]
    return subprocess.run(["git", *where, *args], check=True, capture_output=True, text=True).stdout


def registry(repo: Path, commit: str) -> dict[str, object]:
    """The registry at ``commit``: {"source", "commit", "ops": {name: registering file}}."""
    full = _git(repo, "rev-parse", f"{commit}^{{commit}}").strip()
    found = _git(repo, "grep", "-n", "-E", r'REGISTER_OP\("', full, "--", "src/*.cpp")
    ops: dict[str, str] = {}
    for line in found.splitlines():
        # <commit>:<path>:<line>:<text>
        _, path, _, text = line.split(":", 3)
        for name in _REGISTER.findall(text):
            if name in ops and ops[name] != path:
                raise SystemExit(f"{name} registered twice: {ops[name]} and {path}")
            ops[name] = path
    args, attrs = operands(repo, full, set(ops.values()))
    return {
        "source": "hw-native-sys/pypto",
        "commit": full,
        "generator": "tools/gen_op_registry.py",
        "ops": dict(sorted(ops.items())),
        "operands": args,
        "attributes": attrs,
    }


def _chain(text: str, start: int) -> str:
    """The builder chain after a ``REGISTER_OP(...)`` at ``start``: up to the ``;`` that ends the
    statement (outside strings and brackets)."""
    depth, i, quoted = 0, start, False
    while i < len(text):
        c = text[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == ";" and depth == 0:
            break
        i += 1
    return text[start:i]


def operand_kind(description: str) -> str | None:
    """What an operand is, from the words of its registration: "tile", "tensor", "scalar",
    "tuple", "array" (a pl.Array), "tensor|scalar" or "tile|scalar" (either of the two), "handle" (a
    pointer, a context, an event, a future), or None when the words name none of these."""
    d = description
    if re.search(r"\bor\b", d) and re.search(r"scalar", d, re.I) and re.search(r"tensor|tile", d, re.I):
        # "a tensor or a scalar": either, but nothing else (a list, a memory space)
        array = "tile" if re.search(r"\btile\b|TileType", d, re.I) else "tensor"
        return f"{array}|scalar"
    if re.search(r"May be a runtime Scalar", d):
        return None
    if re.search(r"\bhandle\b|\bPtr\b|CommCtxType|ContextType|EventType|SessionType", d):
        return "handle"  # a pointer, a context, an event, a future: a value of its own kind
    if re.search(r"\bArrayType\b", d):
        return "array"
    if re.search(r"\bTileType\b", d):
        return "tile"
    if re.search(r"\b(?:Distributed)?TensorType\b|DistributedTensor", d):
        return "tensor"
    if re.search(r"scalar carrier", d):  # a [M, 1] tile that carries one value per row
        return "tile"
    if re.search(r"TupleType|MakeTuple|\bTuple\b|\btuple\b", d):
        return "tuple"
    if re.search(r"ScalarType|ConstInt|ConstFloat|\bINDEX\b", d) or re.search(r"\bscalar\b", d, re.I):
        return "scalar"
    if re.search(r"\btile\b", d, re.I):
        return "tile"
    if re.search(r"\btensor\b", d, re.I):
        return "tensor"
    return None


def operands(repo: Path, commit: str, files: set[str]) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    """({op: {operand: kind}}, {op: {attribute: kind}}): the operands whose kind the
    registration's words say, and the keyword attributes with the C++ type each is declared with
    (``.set_attr<T>("name")``)."""
    args: dict[str, dict[str, str]] = {}
    attrs: dict[str, dict[str, str]] = {}
    for path in sorted(files):
        text = _git(repo, "show", f"{commit}:{path}")
        for m in _REGISTER.finditer(text):
            chain = _chain(text, m.end())
            kinds = {}
            for a in _ARGUMENT.finditer(chain):
                kind = operand_kind("".join(_STRING.findall(a.group(2))))
                if kind is not None:
                    kinds[a.group(1)] = kind
            if kinds:
                args[m.group(1)] = kinds
            typed = {a.group(2): _ATTR_KINDS[a.group(1)] for a in _ATTRIBUTE.finditer(chain) if a.group(1) in _ATTR_KINDS}
            if typed:
                attrs[m.group(1)] = typed
    return dict(sorted(args.items())), dict(sorted(attrs.items()))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repo", type=Path, required=True, help="a pypto checkout or bare mirror")
    p.add_argument("--commit", default=DEFAULT_COMMIT)
    p.add_argument("--out", type=Path, default=DATA)
    p.add_argument("--check", action="store_true", help="exit 1 when --out differs from the registry")
    args = p.parse_args(argv)
    text = json.dumps(registry(args.repo, args.commit), indent=1) + "\n"
    if args.check:
        same = args.out.is_file() and args.out.read_text(encoding="utf-8") == text
        print(f"{args.out}: {'up to date' if same else 'differs from the registry'}")
        return 0 if same else 1
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}: {len(json.loads(text)['ops'])} ops at {args.commit[:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
