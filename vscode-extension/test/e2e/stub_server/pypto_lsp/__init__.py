"""A stand-in for the pypto-lsp server, used only by the extension's end-to-end test.

It speaks the server contract the extension codes against (initializationOptions,
the five workspace/executeCommand commands, `pypto-lsp/fileResult`, code lenses,
diagnostics) with made-up numbers: a dump "fails" when it contains the broken
slice offset of fixtures/broken/qwen3_910b_wrong_slice_offset, and passes
otherwise. It lets the extension be tested end to end before, or independently
of, the real server. `run.sh --stub` puts this folder first on PYTHONPATH.
"""

__version__ = "0.0.0+e2e-stub"
