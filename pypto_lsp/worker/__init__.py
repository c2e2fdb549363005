"""The validation worker process (torch lives here) and the protocol the server speaks to it.

:mod:`.protocol` is torch-free and shared by both sides; :mod:`.service` is the
worker itself (``python -m pypto_lsp.worker``).
"""
