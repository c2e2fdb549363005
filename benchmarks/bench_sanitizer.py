"""What the sanitizer costs: the qwen3_scope3_910b folder validated cold, sanitizer on vs off (memory model on in both).

    python benchmarks/bench_sanitizer.py [--case NAME] [--repeat N]

The same measure as ``bench_memory.py`` (in-process and CLI, the modes interleaved, min and median)
with ``--sanitize on`` / ``--sanitize off``; the issue's goal: <= 1.3x. No asserts.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_memory import main

if __name__ == "__main__":
    raise SystemExit(main(switch="sanitize", counted="files with findings", goal=1.3))
