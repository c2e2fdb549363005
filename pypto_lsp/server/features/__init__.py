"""The LSP handlers, one module per feature; each exposes ``register(ls, core)``.

A handler translates an LSP message into calls on the core (:class:`..core.Core`) and its
answer into LSP types (with the pure converters of the floor above: :mod:`..results`,
:mod:`..lenses`, :mod:`..convert`, ...). Handlers never import each other nor ``app``.
"""
