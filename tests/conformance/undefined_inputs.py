"""The sanitizer's definedness on real dumps: each input of a dump's orchestrator replaced by a tensor
created without init_value, the default run (sweeps, batched pipe loops, K-chunk matmuls) against
``--exact`` (every loop tile by tile, each kernel followed). Both must report the same buffers on the
same lines with the same paths: a batched path that drops a shadow shows as a finding only the exact
run has (the swept down projection of qwen3 did, before exec/sweep.py kept undefined pops apart).

    python tests/conformance/undefined_inputs.py [CASE_SUBSTRING] [--coverage] [--all-dumps] [--memory]

Per case: the middle and the last dumps (every dump with ``--all-dumps``); values only, or with the
memory model on (``--memory``: the first and last iterations of a sweep run in the arenas). Prints
one line per disagreement and a tally; exit 1 on a disagreement. No goldens needed (values are not
compared).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT.parent / "shared" / "fixtures"
COVERAGE = FIXTURES.parent / "fixtures-coverage"

_PARAM = re.compile(r"(\w+): pl\.Tensor\[(\[[^\]]*\]), (pl\.\w+)[\],]")


def with_undefined_inputs(text: str) -> list[tuple[str, str]]:
    """``text`` once per input tensor of its orchestrator (not ``pl.Out``): every use of it in the
    body replaced by ``u_x``, a tensor.create without init_value of its type on the body's first line.
    Empty when the dump has no orchestrator."""
    lines = text.splitlines()
    d = next((i for i, ln in enumerate(lines) if "FunctionType.Orchestration" in ln), None)
    if d is None or d + 2 >= len(lines):
        return []
    d += 1
    end = next((i for i in range(d + 1, len(lines)) if lines[i].lstrip().startswith(("@pl.function", "def "))), len(lines))
    indent = lines[d + 1][: len(lines[d + 1]) - len(lines[d + 1].lstrip())]
    out = []
    for name, shape, dtype in _PARAM.findall(lines[d].split("->")[0]):
        if f"{name}: pl.Out[" in lines[d] or name == "u_x":
            continue
        body = [re.sub(rf"\b{re.escape(name)}\b", "u_x", ln) for ln in lines[d + 1 : end]]
        if body == lines[d + 1 : end]:
            continue  # not used in the body
        create = f"{indent}u_x: pl.Tensor[{shape}, {dtype}] = pl.tensor.create({shape}, dtype={dtype}, layout=pl.TensorLayout.ND)"
        out.append((name, "\n".join([*lines[: d + 1], create, *body, *lines[end:]]) + "\n"))
    return out


def findings(
    text: str, inputs: dict[str, Any], exact: bool, filename: str, memory: bool = False
) -> tuple[list[tuple[Any, ...]], str | None]:
    """The uninitialised findings of one run (name, line, related), and its error kind if it did not finish."""
    from pypto_lsp.validate.engine import run_text

    r = run_text(text, {k: v.clone() for k, v in inputs.items()}, {}, filename=filename, memory=memory, exact=exact, timeout=120)
    hz = (r.memory or {}).get("hazards", [])
    found = sorted((h["name"], h["line"], tuple(h.get("related", []))) for h in hz if h["kind"] == "uninitialised")
    return found, (r.error.kind if r.error is not None else None)


def check(root: Path = FIXTURES, memory: bool = False, every: bool = False, selector: str | None = None) -> tuple[int, int, list[str]]:
    """Runs, runs with a finding, and one line per disagreement between the batched and the exact run."""
    import json

    from pypto_lsp.validate.golden import load_bundle

    verdicts = json.loads((root / "verdicts.json").read_text())
    runs = found = 0
    disagree: list[str] = []
    seen: set[str] = set()
    for case, spec in verdicts.items():
        if (selector and selector not in case) or spec.get("kind") or spec["dir"] in seen:
            continue  # hand-edited copies share their dumps' orchestrators: once per folder
        seen.add(spec["dir"])
        inputs = load_bundle(root / spec["inputs"])
        files = sorted((root / spec["dir"] / "passes_dump").glob("*.py"))
        picks = files if every else sorted({files[len(files) // 2], files[-1]})
        for f in picks:
            for name, text in with_undefined_inputs(f.read_text()):
                (batched, err_b), (exact, err_e) = (
                    findings(text, inputs, False, f.name, memory),
                    findings(text, inputs, True, f.name, memory),
                )
                runs += 1
                found += bool(exact)
                if batched != exact or err_b != err_e:
                    disagree.append(f"{case}/{f.name}: {name} undefined: batched {batched} ({err_b}), exact {exact} ({err_e})")
                    print(disagree[-1], flush=True)
    return runs, found, disagree


def main(argv: list[str]) -> int:
    from pypto_lsp.validate.process_setup import configure_process

    configure_process()
    root = COVERAGE if "--coverage" in argv else FIXTURES
    words = [a for a in argv if not a.startswith("--")]
    if not (root / "verdicts.json").is_file():
        print(f"no fixtures at {root}")
        return 0
    runs, found, disagree = check(root, "--memory" in argv, "--all-dumps" in argv, words[0] if words else None)
    print(f"undefined inputs: {runs} runs, {found} with a finding, {len(disagree)} where batched and exact disagree")
    return 1 if disagree else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
