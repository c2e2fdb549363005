"""``python -m pypto_lsp.worker``: the validation worker the language server starts."""

from .service import main

raise SystemExit(main())
