/**
 * PyPTO LSP: wiring only. Each concern lives in its own module:
 * common/server.ts (the language client), common/settings.ts + common/python.ts
 * (configuration and interpreter), common/commands.ts, views/ (tree + status bar),
 * core/ (the logic, free of the VS Code API and unit-tested).
 */
import * as vscode from 'vscode';
import { registerCommands, toUri } from './common/commands';
import { CONTEXT, STATE } from './common/constants';
import { createLogChannel, traceInfo } from './common/log/logging';
import { onDidChangePythonInterpreter } from './common/python';
import { PyptoServer } from './common/server';
import { PUSHED_SETTINGS, RESTART_SETTINGS } from './common/settings';
import {
    activeTextEditor,
    isTrusted,
    onDidChangeActiveTextEditor,
    onDidChangeConfiguration,
    onDidGrantWorkspaceTrust,
    onDidOpenTextDocument,
    registerCommand,
    setContext,
    showInformationMessage,
} from './common/vscodeapi';
import { isDumpDocument, unchangedFromChart } from './core/passes';
import { ResultStore } from './core/results';
import { PassesTreeProvider } from './views/passesTree';
import { Pictures } from './views/pictures';
import { MemoryMaps } from './views/memmap';
import { SHOW_MEMORY_MAP } from './core/memmap';
import { SHOW_TASK_GRAPH } from './core/taskgraph';
import { TaskGraphs } from './views/taskgraph';
import { PASS_CHART_REQUEST, PICTURE_CMD } from './core/pictures';
import { DumpStatusBar } from './views/statusBar';
import { registerDebugger } from './views/debug';

let server: PyptoServer | undefined;

/** A dump: a python file on disk in a passes_dump* folder or starting with `# pypto.program:`. */
function isDumpTextDocument(doc: vscode.TextDocument): boolean {
    if (doc.uri.scheme !== 'file' || doc.languageId !== 'python') {
        return false;
    }
    return isDumpDocument(doc.uri.fsPath, doc.lineCount > 0 ? doc.lineAt(0).text : '');
}

/** The cheap guard behind `onLanguage:python`: only start for workspaces that have dumps. */
async function workspaceHasDumps(): Promise<boolean> {
    if (vscode.workspace.textDocuments.some(isDumpTextDocument)) {
        return true;
    }
    const found = await vscode.workspace.findFiles('**/passes_dump*/*.py', '**/node_modules/**', 1);
    return found.length > 0;
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
    const log = createLogChannel();
    context.subscriptions.push(log);
    traceInfo(`PyPTO LSP ${context.extension.packageJSON.version} activating (VS Code ${vscode.version})`);

    const store = new ResultStore();
    const srv = new PyptoServer(store);
    server = srv;
    // the tree's "IR unchanged" is the pass chart's (pypto_lsp/ir/passdiff.py): one definition for both
    const tree = new PassesTreeProvider(store, context.workspaceState, (folder) =>
        srv.request(PASS_CHART_REQUEST, { uri: folder.toString() }).then(unchangedFromChart),
    );
    const status = new DumpStatusBar(store);
    context.subscriptions.push(...tree.register(), status, ...registerCommands({ server: srv, store, tree }));
    context.subscriptions.push(
        srv.onDidChangeState((s) => {
            status.setServerState(s, srv.notRunningReason());
            if (s === 'running') {
                tree.refresh();
            }
        }),
    );
    const pictures = new Pictures(srv, store, context.extensionUri);
    context.subscriptions.push(
        pictures,
        registerCommand(PICTURE_CMD.showPassChart, (arg?: unknown) => {
            const uri = (arg === undefined ? undefined : toUri(arg)) ?? tree.currentFolder ?? toUri(undefined);
            return uri ? pictures.showPassChart(uri) : showInformationMessage('PyPTO LSP: open a pass dump first.');
        }),
        registerCommand(PICTURE_CMD.showErrorMap, (arg?: unknown, tensor?: unknown) => {
            const uri = toUri(arg);
            return uri ? pictures.showErrorMap(uri, typeof tensor === 'string' && tensor ? tensor : undefined) : undefined;
        }),
    );
    const memoryMaps = new MemoryMaps(srv, store, context.extensionUri);
    context.subscriptions.push(
        memoryMaps,
        registerCommand(SHOW_MEMORY_MAP, (arg?: unknown) => {
            const uri = toUri(arg);
            return uri ? memoryMaps.show(uri) : showInformationMessage('PyPTO LSP: open a pass dump first.');
        }),
    );
    const taskGraphs = new TaskGraphs(srv, store, context.extensionUri);
    context.subscriptions.push(
        taskGraphs,
        registerCommand(SHOW_TASK_GRAPH, (arg?: unknown) => {
            const uri = toUri(arg);
            return uri ? taskGraphs.show(uri) : showInformationMessage('PyPTO LSP: open a pass dump first.');
        }),
    );

    context.subscriptions.push(...registerDebugger(srv, isDumpTextDocument, pictures));

    let started = false;
    const ensureStarted = (why: string): void => {
        if (!started) {
            started = true;
            void srv.restart(why).then(() => maybeTellUntrusted(context));
        }
    };

    const onActiveEditor = (ed: vscode.TextEditor | undefined): void => {
        const isDump = ed !== undefined && isDumpTextDocument(ed.document);
        void setContext(CONTEXT.activeIsDump, isDump);
        status.setActive(isDump ? ed!.document.uri : undefined);
        tree.followDocument(ed?.document.uri, isDump);
        if (isDump) {
            ensureStarted('a dump is open');
        }
    };
    context.subscriptions.push(
        onDidChangeActiveTextEditor(onActiveEditor),
        onDidOpenTextDocument((doc) => {
            if (isDumpTextDocument(doc)) {
                ensureStarted(`opened ${doc.uri.fsPath}`);
            }
        }),
        onDidChangeConfiguration((e) => {
            if (!started) {
                return;
            }
            if (RESTART_SETTINGS.some((k) => e.affectsConfiguration(k))) {
                srv.scheduleRestart('the interpreter setting changed');
            } else if (PUSHED_SETTINGS.some((k) => e.affectsConfiguration(k))) {
                void srv.pushSettings();
            }
        }),
        // trusting the workspace turns validation on, and may unlock a workspace interpreter setting
        onDidGrantWorkspaceTrust(() => {
            if (started) {
                srv.scheduleRestart('the workspace is now trusted');
            }
        }),
    );
    // asking the Python extension activates it, which can take a while: don't hold up our activation
    void onDidChangePythonInterpreter(() => {
        if (started && !srv.settings?.interpreter) {
            srv.scheduleRestart("the Python extension's interpreter changed");
        }
    }).then((d) => context.subscriptions.push(d));

    onActiveEditor(activeTextEditor());
    if (!started && (await workspaceHasDumps())) {
        ensureStarted('the workspace has pass dumps');
    }
    if (!started) {
        traceInfo('no pass dumps in this workspace yet; the server starts when one is opened');
    }
}

/** Say once per workspace that an untrusted workspace gets parse errors only. */
async function maybeTellUntrusted(context: vscode.ExtensionContext): Promise<void> {
    if (isTrusted() || context.workspaceState.get<boolean>(STATE.untrustedNoticeShown)) {
        return;
    }
    await context.workspaceState.update(STATE.untrustedNoticeShown, true);
    const manage = 'Manage Workspace Trust';
    const picked = await showInformationMessage(
        'PyPTO LSP: this workspace is not trusted, so only parse errors are shown. Numeric validation loads tensors and runs the dumps; it starts once you trust the workspace.',
        manage,
    );
    if (picked === manage) {
        await vscode.commands.executeCommand('workbench.trust.manage');
    }
}

export async function deactivate(): Promise<void> {
    if (server) {
        await server.dispose();
        server = undefined;
    }
}
