"""pypto-lsp: an editor-native numerical debugger for PyPTO pass dumps.

The parser (:func:`loads`, :func:`load`) needs no torch; the engine entry points
(:func:`torch_codegen`, :func:`validate_passes`, ...) import torch on first use,
so the language server can import this package and stay light.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported on first use (below): `import pypto_lsp` stays cheap (the pytest plugin loads it)
    from .ir.diagnostics import Diagnostic as Diagnostic
    from .ir.diagnostics import IRError as IRError
    from .ir.diagnostics import IRSyntaxError as IRSyntaxError
    from .ir.model import Program as Program
    from .ir.parser import load as load
    from .ir.parser import loads as loads

# torch warns on import when numpy is absent; pypto-lsp never needs numpy, so say nothing
warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)

__version__ = "0.1.0"

_LAZY = {
    "Diagnostic": ("pypto_lsp.ir.diagnostics", "Diagnostic"),
    "IRError": ("pypto_lsp.ir.diagnostics", "IRError"),
    "IRSyntaxError": ("pypto_lsp.ir.diagnostics", "IRSyntaxError"),
    "Program": ("pypto_lsp.ir.model", "Program"),
    "load": ("pypto_lsp.ir.parser", "load"),
    "loads": ("pypto_lsp.ir.parser", "loads"),
    "torch_codegen": ("pypto_lsp.exec.codegen", "torch_codegen"),
    "validate_passes": ("pypto_lsp.validate.library", "validate_passes"),
    "validate_pass_ir_codegen_results": ("pypto_lsp.validate.compat", "validate_pass_ir_codegen_results"),
    "validate_ir": ("pypto_lsp.validate.compat", "validate_ir"),
    "save_golden": ("pypto_lsp.validate.golden", "save_golden"),
    "Report": ("pypto_lsp.validate.report", "Report"),
    "FileResult": ("pypto_lsp.validate.report", "FileResult"),
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'pypto_lsp' has no attribute '{name}'")
    import importlib

    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value
    return value
