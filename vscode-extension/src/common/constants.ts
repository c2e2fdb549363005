/** One id drives everything: settings namespace, command prefix, output channel, server name. */
export const EXTENSION_ID = 'pypto-lsp';
export const SERVER_NAME = 'PyPTO LSP';
export const CONFIG_SECTION = 'pypto-lsp';
export const PASSES_VIEW_ID = 'pypto-lsp.passes';

/** The user-facing commands (palette category "PyPTO LSP"). */
export const CMD = {
    validateThisPass: 'pypto-lsp.cmd.validateThisPass',
    validateAllPasses: 'pypto-lsp.cmd.validateAllPasses',
    firstDivergentPass: 'pypto-lsp.cmd.firstDivergentPass',
    compareWithPrevious: 'pypto-lsp.cmd.compareWithPrevious',
    showGeneratedCode: 'pypto-lsp.cmd.showGeneratedCode',
    showConfig: 'pypto-lsp.cmd.showConfig',
    restartServer: 'pypto-lsp.cmd.restartServer',
    configureGolden: 'pypto-lsp.cmd.configureGolden',
    showLogs: 'pypto-lsp.cmd.showLogs',
    debugThisPass: 'pypto-lsp.cmd.debugThisPass',
} as const;

/** Commands the server's code lenses use that run in the client. */
export const LENS_CMD = {
    compareWithPrevious: 'pypto-lsp.compareWithPrevious',
    configureGolden: 'pypto-lsp.configureGolden',
    revealLine: 'pypto-lsp.revealLine',
    debugPass: 'pypto-lsp.debugPass',
} as const;

export const TREE_CMD = {
    failingOnlyOn: 'pypto-lsp.tree.failingOnlyOn',
    failingOnlyOff: 'pypto-lsp.tree.failingOnlyOff',
    hideUnchangedOn: 'pypto-lsp.tree.hideUnchangedOn',
    hideUnchangedOff: 'pypto-lsp.tree.hideUnchangedOff',
    refresh: 'pypto-lsp.tree.refresh',
    open: 'pypto-lsp.tree.open',
} as const;

/** Context keys (when-clauses in package.json). */
export const CONTEXT = {
    failingOnly: 'pypto-lsp.failingOnly',
    hideUnchanged: 'pypto-lsp.hideUnchanged',
    activeIsDump: 'pypto-lsp.activeIsDump',
} as const;

/** workspaceState keys */
export const STATE = {
    untrustedNoticeShown: 'pypto-lsp.untrustedNoticeShown',
    failingOnly: 'pypto-lsp.tree.failingOnly',
    hideUnchanged: 'pypto-lsp.tree.hideUnchanged',
} as const;

/** Restarts triggered by settings / interpreter changes are debounced by this much. */
export const RESTART_DEBOUNCE_MS = 1000;

/** The import check must not hang activation on a broken interpreter. */
export const IMPORT_CHECK_TIMEOUT_MS = 20000;
