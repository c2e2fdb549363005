"""The names the server and its clients agree on: command ids, custom requests and notifications.

One home for each: the server's handlers register these, its lenses use them, and the VS Code
extension's copies (``vscode-extension/src/core/protocol.ts``, ``common/constants.ts``,
``core/pictures.ts``, ``core/memmap.ts``, ``core/taskgraph.ts``) are checked against this module by ``tests/unit/test_contract.py``.
"""

from __future__ import annotations

# ``workspace/executeCommand``: commands the server implements (see features/commands.py)
VALIDATE_FILE = "pypto-lsp.validateFile"
VALIDATE_FOLDER = "pypto-lsp.validateFolder"
FIRST_DIVERGENT_PASS = "pypto-lsp.firstDivergentPass"
SHOW_GENERATED_CODE = "pypto-lsp.showGeneratedCode"
SHOW_CONFIG = "pypto-lsp.showConfig"
WRITE_GOLDEN_CASE = "pypto-lsp.writeGoldenCase"  # [{dumps, inputs, expected}]: features/golden_case.py
SERVER_COMMANDS = (VALIDATE_FILE, VALIDATE_FOLDER, FIRST_DIVERGENT_PASS, SHOW_GENERATED_CODE, SHOW_CONFIG, WRITE_GOLDEN_CASE)

# commands the server's code lenses name that the client implements (the VS Code extension)
COMPARE_WITH_PREVIOUS = "pypto-lsp.compareWithPrevious"  # [uri]
CONFIGURE_GOLDEN = "pypto-lsp.configureGolden"  # [uri]
REVEAL_LINE = "pypto-lsp.revealLine"  # [uri, 0-based line]
SHOW_ERROR_MAP = "pypto-lsp.showErrorMap"  # [uri, tensor]; its data: ERROR_MAP
SHOW_MEMORY_MAP = "pypto-lsp.showMemoryMap"  # [uri]; its data: MEMORY_MAP
SHOW_TASK_GRAPH = "pypto-lsp.showTaskGraph"  # [uri]; its data: TASK_GRAPH
DEBUG_PASS = "pypto-lsp.debugPass"  # [uri]: a `pypto` debug session on the dump (docs/debugger.md)
CLIENT_COMMANDS = (COMPARE_WITH_PREVIOUS, CONFIGURE_GOLDEN, REVEAL_LINE, SHOW_ERROR_MAP, SHOW_MEMORY_MAP, SHOW_TASK_GRAPH, DEBUG_PASS)
NO_ACTION = ""  # a lens that only shows text

# custom requests (client -> server)
DEBUG_INFO = "pypto-lsp/debugInfo"
PASS_CHART = "pypto-lsp/passChart"
ERROR_MAP = "pypto-lsp/errorMap"
MEMORY_MAP = "pypto-lsp/memoryMap"
TASK_GRAPH = "pypto-lsp/taskGraph"
REQUESTS = (DEBUG_INFO, PASS_CHART, ERROR_MAP, MEMORY_MAP, TASK_GRAPH)

# custom notifications (server -> client)
FILE_RESULT_NOTIFICATION = "pypto-lsp/fileResult"  # after every validation of a file
NOTIFICATIONS = (FILE_RESULT_NOTIFICATION,)
