/**
 * The user-facing commands and the two client-side code lens commands. Server
 * work goes through workspace/executeCommand (PyptoServer.executeServerCommand).
 */
import * as path from 'path';
import * as vscode from 'vscode';
import { folderMessage } from '../core/format';
import { previousPass, sortPassFiles } from '../core/passes';
import {
    basenameOfUri,
    FileResult,
    GoldenCaseWritten,
    parseDivergentLocation,
    parseGoldenCaseWritten,
    parseFileResult,
    parseFolderResult,
    SERVER_COMMANDS,
} from '../core/protocol';
import { ResultStore } from '../core/results';
import { CMD, LENS_CMD } from './constants';
import { getLogChannel, traceError, traceInfo } from './log/logging';
import { CancelledError, normaliseUri, PyptoServer } from './server';
import {
    activeTextEditor,
    isTrusted,
    listFiles,
    openUntitled,
    registerCommand,
    showErrorMessage,
    showInformationMessage,
} from './vscodeapi';

/** What the commands need of the passes view (views/passesTree implements it; common/ never imports views/). */
export interface CurrentFolder {
    readonly currentFolder: vscode.Uri | undefined;
}

export interface CommandDeps {
    server: PyptoServer;
    store: ResultStore;
    tree: CurrentFolder;
}

/** A command argument -> a uri: vscode.Uri, a uri string (lenses), a tree element ({uri}), or the active editor. */
export function toUri(arg: unknown): vscode.Uri | undefined {
    if (arg instanceof vscode.Uri) {
        return arg;
    }
    if (typeof arg === 'string' && arg) {
        return /^[a-z][a-z0-9+.-]*:/i.test(arg) && !/^[a-z]:[\\/]/i.test(arg) ? vscode.Uri.parse(arg) : vscode.Uri.file(arg);
    }
    if (typeof arg === 'object' && arg !== null && 'uri' in arg) {
        return toUri((arg as { uri: unknown }).uri);
    }
    const ed = activeTextEditor();
    return ed && ed.document.uri.scheme === 'file' ? ed.document.uri : undefined;
}

async function isFolder(uri: vscode.Uri): Promise<boolean> {
    try {
        return ((await vscode.workspace.fs.stat(uri)).type & vscode.FileType.Directory) !== 0;
    } catch {
        return false;
    }
}

function errorText(e: unknown): string {
    return e instanceof Error ? e.message : String(e);
}

export function registerCommands(deps: CommandDeps): vscode.Disposable[] {
    const { server, store, tree } = deps;

    const needUri = (arg: unknown): vscode.Uri | undefined => {
        const uri = toUri(arg);
        if (!uri) {
            void showInformationMessage('PyPTO LSP: open a pass dump (passes_dump/NN_after_<Pass>.py) first.');
        }
        return uri;
    };

    const failed = (what: string, e: unknown): void => {
        if (e instanceof CancelledError) {
            return;
        }
        traceError(`${what}:`, e);
        void showErrorMessage(`PyPTO LSP: ${what} failed: ${errorText(e)}`, 'Show Log').then((p) => {
            if (p) {
                getLogChannel().show(true);
            }
        });
    };

    /** Validation runs user tensors and config: not in an untrusted workspace. */
    const trusted = (): boolean => {
        if (isTrusted()) {
            return true;
        }
        const manage = 'Manage Workspace Trust';
        void showInformationMessage('PyPTO LSP: numeric validation is off in an untrusted workspace.', manage).then((p) => {
            if (p === manage) {
                void vscode.commands.executeCommand('workbench.trust.manage');
            }
        });
        return false;
    };

    const validateThisPass = async (arg?: unknown): Promise<FileResult | undefined> => {
        const uri = needUri(arg);
        if (!uri || !trusted()) {
            return undefined;
        }
        try {
            const raw = await vscode.window.withProgress(
                { location: vscode.ProgressLocation.Window, title: `PyPTO: validating ${basenameOfUri(uri.toString())}` },
                () => server.executeServerCommand(SERVER_COMMANDS.validateFile, [uri.toString()]),
            );
            const r = parseFileResult(raw);
            if (r) {
                store.update({ ...r, uri: normaliseUri(r.uri) });
            }
            return r;
        } catch (e) {
            failed('Validate This Pass', e);
            return undefined;
        }
    };

    const goTo = async (uriText: string, range?: vscode.Range): Promise<void> => {
        const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(uriText));
        await vscode.window.showTextDocument(doc, { selection: range, preview: false });
    };

    const validateAllPasses = async (arg?: unknown): Promise<void> => {
        const uri = toUri(arg) ?? tree.currentFolder;
        if (!uri) {
            void showInformationMessage('PyPTO LSP: open a pass dump, or pick a passes_dump folder in the Explorer.');
            return;
        }
        if (!trusted()) {
            return;
        }
        const folder = (await isFolder(uri)) ? uri : vscode.Uri.joinPath(uri, '..');
        try {
            const raw = await vscode.window.withProgress(
                {
                    location: vscode.ProgressLocation.Notification,
                    title: `PyPTO: validating ${vscode.workspace.asRelativePath(folder)}`,
                    cancellable: true,
                },
                (progress, token) => {
                    let last = 0;
                    return server.executeServerCommand(SERVER_COMMANDS.validateFolder, [uri.toString()], {
                        token,
                        progress: ({ message, percentage }) => {
                            const inc = percentage !== undefined && percentage > last ? percentage - last : undefined;
                            if (percentage !== undefined) {
                                last = Math.max(last, percentage);
                            }
                            progress.report({ message, increment: inc });
                        },
                    });
                },
            );
            const res = parseFolderResult(raw);
            const fd = res.first_divergent ? normaliseUri(res.first_divergent) : null;
            store.updateFolder(folder.toString(), {
                files: res.files.map((f) => ({ ...f, uri: normaliseUri(f.uri) })),
                first_divergent: fd,
            });
            const msg = `PyPTO: ${folderMessage(res, fd ? basenameOfUri(fd) : null)}`;
            traceInfo(msg);
            const actions = fd ? ['Go to First Divergent Pass'] : [];
            const failedAny = res.files.some((f) => f.status === 'fail' || f.status === 'error');
            const show = failedAny ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
            const picked = await show(msg, ...actions);
            if (picked && fd) {
                await firstDivergentPass(vscode.Uri.parse(fd));
            }
        } catch (e) {
            if (e instanceof CancelledError) {
                void showInformationMessage('PyPTO: validation of all passes cancelled.');
                return;
            }
            failed('Validate All Passes', e);
        }
    };

    const firstDivergentPass = async (arg?: unknown): Promise<void> => {
        const uri = toUri(arg) ?? tree.currentFolder;
        if (!uri) {
            void showInformationMessage('PyPTO LSP: open a pass dump first.');
            return;
        }
        try {
            const loc = parseDivergentLocation(await server.executeServerCommand(SERVER_COMMANDS.firstDivergentPass, [uri.toString()]));
            if (!loc) {
                void showInformationMessage('PyPTO: no divergent pass: every validated pass matches the expected tensors.');
                return;
            }
            const r = loc.range;
            await goTo(loc.uri, new vscode.Range(r.start.line, r.start.character, r.end.line, r.end.character));
        } catch (e) {
            failed('Go to First Divergent Pass', e);
        }
    };

    /** The "first differing value" lens: [uri, 0-based line] -> that line in the editor. */
    const revealLine = async (uriArg?: unknown, lineArg?: unknown): Promise<void> => {
        const uri = toUri(uriArg);
        if (!uri || typeof lineArg !== 'number' || !Number.isInteger(lineArg) || lineArg < 0) {
            return;
        }
        await goTo(uri.toString(), new vscode.Range(lineArg, 0, lineArg, 0));
    };

    const compareWithPrevious = async (arg?: unknown): Promise<void> => {
        const uri = needUri(arg);
        if (!uri) {
            return;
        }
        const folder = vscode.Uri.joinPath(uri, '..');
        const name = path.posix.basename(uri.path);
        const names = sortPassFiles(await listFiles(folder));
        const prev = previousPass(names, name);
        if (!prev) {
            void showInformationMessage(
                names.includes(name) ? `PyPTO: ${name} is the first pass; nothing to compare with.` : `PyPTO: ${name} is not in a dump folder.`,
            );
            return;
        }
        const left = vscode.Uri.joinPath(folder, prev);
        await vscode.commands.executeCommand('vscode.diff', left, uri, `${prev} ↔ ${name}`);
    };

    const showGeneratedCode = async (arg?: unknown): Promise<void> => {
        const uri = needUri(arg);
        if (!uri) {
            return;
        }
        try {
            const code = await server.executeServerCommand<unknown>(SERVER_COMMANDS.showGeneratedCode, [uri.toString()]);
            await openUntitled('python', typeof code === 'string' ? code : JSON.stringify(code, null, 2));
        } catch (e) {
            failed('Show Generated PyTorch', e);
        }
    };

    const showConfig = async (arg?: unknown): Promise<void> => {
        const uri = toUri(arg) ?? tree.currentFolder;
        try {
            const cfg = await server.executeServerCommand<unknown>(SERVER_COMMANDS.showConfig, uri ? [uri.toString()] : []);
            await openUntitled('json', JSON.stringify(cfg, null, 2) + '\n');
        } catch (e) {
            failed('Show Resolved Configuration', e);
        }
    };

    const configureGolden = async (arg?: unknown): Promise<void> => {
        if (!server.isRunning()) {
            // the server writes the entry: say so before two file dialogs, not after
            failed('Configure Golden Tensors', new Error(server.notRunningReason()));
            return;
        }
        let target = toUri(arg) ?? tree.currentFolder;
        if (!target) {
            const picked = await vscode.window.showOpenDialog({
                title: 'PyPTO: pick the passes_dump folder',
                canSelectFolders: true,
                canSelectFiles: false,
                openLabel: 'Use this dump folder',
            });
            target = picked?.[0];
            if (!target) {
                return;
            }
        }
        const dumps = (await isFolder(target)) ? target : vscode.Uri.joinPath(target, '..');
        const filters = { 'Tensors (.pt, .safetensors)': ['pt', 'safetensors'], 'All files': ['*'] };
        const near = vscode.Uri.joinPath(dumps, '..');
        const inputs = await vscode.window.showOpenDialog({
            title: `PyPTO: input tensors for ${vscode.workspace.asRelativePath(dumps)} (1/2)`,
            canSelectMany: false,
            filters,
            defaultUri: near,
            openLabel: 'Use as inputs',
        });
        if (!inputs?.[0]) {
            return;
        }
        const expected = await vscode.window.showOpenDialog({
            title: `PyPTO: expected output tensors for ${vscode.workspace.asRelativePath(dumps)} (2/2)`,
            canSelectMany: false,
            filters,
            defaultUri: vscode.Uri.joinPath(inputs[0], '..'),
            openLabel: 'Use as expected outputs',
        });
        if (!expected?.[0]) {
            return;
        }
        // the server writes the [[cases]] entry (pypto_lsp/validate/case_writer.py, the one writer):
        // into the nearest pypto-lsp.toml up to the workspace root, else a new one beside the dumps,
        // and checks the open dumps against it at once
        let written: GoldenCaseWritten;
        try {
            written = parseGoldenCaseWritten(
                await server.executeServerCommand(SERVER_COMMANDS.writeGoldenCase, [
                    { dumps: dumps.toString(), inputs: inputs[0].toString(), expected: expected[0].toString() },
                ]),
            );
        } catch (e) {
            failed('Configure Golden Tensors', e);
            return;
        }
        const tomlUri = vscode.Uri.file(written.config);
        traceInfo(`${written.written} the case of ${dumps.fsPath} in ${written.config}`);
        const open = 'Open pypto-lsp.toml';
        void showInformationMessage(`PyPTO: golden tensors configured in ${vscode.workspace.asRelativePath(tomlUri)}.`, open).then(
            async (p) => {
                if (p === open) {
                    await vscode.window.showTextDocument(tomlUri);
                }
            },
        );
    };

    return [
        registerCommand(CMD.validateThisPass, validateThisPass),
        registerCommand(CMD.validateAllPasses, validateAllPasses),
        registerCommand(CMD.firstDivergentPass, firstDivergentPass),
        registerCommand(CMD.compareWithPrevious, compareWithPrevious),
        registerCommand(CMD.showGeneratedCode, showGeneratedCode),
        registerCommand(CMD.showConfig, showConfig),
        registerCommand(CMD.restartServer, () => server.restart('Restart Server command')),
        registerCommand(CMD.configureGolden, configureGolden),
        registerCommand(CMD.showLogs, () => getLogChannel().show(true)),
        registerCommand(LENS_CMD.compareWithPrevious, compareWithPrevious),
        registerCommand(LENS_CMD.configureGolden, configureGolden),
        registerCommand(LENS_CMD.revealLine, revealLine),
    ];
}
