/**
 * The `pypto` debugger in VS Code: the adapter is `<python> -m pypto_lsp debug` with the same
 * interpreter the language server uses; a configuration provider fills in the active dump; the
 * "Debug this pass" lens and command start a session; tile values show at line ends while
 * stopped (an InlineValuesProvider: VS Code evaluates each assigned name in the stopped frame).
 */
import * as path from 'path';
import * as vscode from 'vscode';
import { resolveInterpreter } from '../common/python';
import { PyptoServer } from '../common/server';
import { readSettings } from '../common/settings';
import { Pictures } from './pictures';
import { traceInfo } from '../common/log/logging';
import { CMD, LENS_CMD } from '../common/constants';
import { ADAPTER_ARGS, completeLaunch, DEBUG_TYPE, ERROR_MAP_DAP_REQUEST, inlineTargets, launchFor, SHOW_TILE_ERROR_MAP, tileMapNote } from '../core/debug';

function activeDump(isDump: (doc: vscode.TextDocument) => boolean): vscode.TextDocument | undefined {
    const doc = vscode.window.activeTextEditor?.document;
    return doc && isDump(doc) ? doc : undefined;
}

export function registerDebugger(server: PyptoServer, isDump: (doc: vscode.TextDocument) => boolean, pictures: Pictures): vscode.Disposable[] {
    const factory: vscode.DebugAdapterDescriptorFactory = {
        async createDebugAdapterDescriptor(session) {
            const choice = server.interpreterChoice ?? (await resolveInterpreter(readSettings().interpreter, session.workspaceFolder?.uri));
            const cwd = session.workspaceFolder?.uri.fsPath ?? path.dirname(String(session.configuration.program ?? '.'));
            traceInfo(`debug adapter: ${choice.command} ${ADAPTER_ARGS.join(' ')}`);
            return new vscode.DebugAdapterExecutable(choice.command, [...ADAPTER_ARGS], {
                cwd,
                env: { ...process.env, PYTHONUNBUFFERED: '1', PYTHONUTF8: '1' } as Record<string, string>,
            });
        },
    };
    const provider: vscode.DebugConfigurationProvider = {
        resolveDebugConfiguration(_folder, config) {
            const doc = activeDump(isDump);
            const done = completeLaunch(config as Record<string, unknown>, doc?.uri.fsPath, doc ? path.basename(doc.uri.fsPath) : undefined);
            if (!done) {
                void vscode.window.showInformationMessage('PyPTO LSP: open a pass dump to debug (or set "program" in launch.json).');
                return undefined;
            }
            return done as vscode.DebugConfiguration;
        },
    };
    const inline: vscode.InlineValuesProvider = {
        provideInlineValues(document, _viewPort, context) {
            const lines = Array.from({ length: document.lineCount }, (_, i) => document.lineAt(i).text);
            return inlineTargets(lines, context.stoppedLocation.end.line).map(
                (t) => new vscode.InlineValueEvaluatableExpression(new vscode.Range(t.line, t.column, t.line, t.column + t.name.length), t.name),
            );
        },
    };
    const start = (arg?: unknown): Thenable<boolean> | undefined => {
        let uri: vscode.Uri | undefined;
        if (typeof arg === 'string') {
            uri = vscode.Uri.parse(arg);
        } else if (arg instanceof vscode.Uri) {
            uri = arg;
        } else {
            uri = activeDump(isDump)?.uri;
        }
        if (!uri) {
            void vscode.window.showInformationMessage('PyPTO LSP: open a pass dump first.');
            return undefined;
        }
        const folder = vscode.workspace.getWorkspaceFolder(uri);
        return vscode.debug.startDebugging(folder, launchFor(uri.fsPath, path.basename(uri.fsPath)));
    };
    /** The Variables view's "Show Tile in Error Map": the adapter draws the tile against the previous pass. */
    const showTile = async (arg?: { variable?: { name?: string; evaluateName?: string } }): Promise<void> => {
        const session = vscode.debug.activeDebugSession;
        const expr = arg?.variable?.evaluateName ?? arg?.variable?.name;
        if (!session || session.type !== DEBUG_TYPE || !expr) {
            return;
        }
        const item = vscode.debug.activeStackItem;
        const frameId = item instanceof vscode.DebugStackFrame ? item.frameId : undefined;
        try {
            const res = (await session.customRequest(ERROR_MAP_DAP_REQUEST, { expression: expr, frameId })) as { maps?: unknown[]; against?: string; line?: number };
            pictures.showMaps(`${session.id}#${expr}`, `Tile · ${expr}`, res.maps ?? [], tileMapNote(expr, res));
        } catch (e) {
            void vscode.window.showInformationMessage(`PyPTO LSP: no error map of '${expr}': ${e instanceof Error ? e.message : String(e)}`);
        }
    };
    return [
        vscode.commands.registerCommand(SHOW_TILE_ERROR_MAP, showTile),
        vscode.debug.registerDebugAdapterDescriptorFactory(DEBUG_TYPE, factory),
        vscode.debug.registerDebugConfigurationProvider(DEBUG_TYPE, provider),
        vscode.languages.registerInlineValuesProvider({ language: 'python', scheme: 'file' }, inline),
        vscode.commands.registerCommand(LENS_CMD.debugPass, start),
        vscode.commands.registerCommand(CMD.debugThisPass, start),
    ];
}
