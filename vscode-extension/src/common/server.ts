/**
 * Starting, restarting and talking to the pypto-lsp server.
 *
 * One LanguageClient at a time, replaced on restart (the way the python tools
 * template does it). Restarts asked for by settings or interpreter changes are
 * debounced; all starts and stops run one after the other on a promise chain,
 * so a burst of changes never leaves two servers running.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import {
    CancellationToken,
    ExecuteCommandRequest,
    LanguageClient,
    LanguageClientOptions,
    RevealOutputChannelOn,
    ServerOptions as ClientServerOptions,
    State,
    WorkDoneProgress,
    WorkDoneProgressBegin,
    WorkDoneProgressReport,
} from 'vscode-languageclient/node';
import { FILE_RESULT_NOTIFICATION, parseFileResult, SERVER_COMMANDS } from '../core/protocol';
import { Debouncer } from '../core/debounce';
import { ResultStore } from '../core/results';
import { ExtensionSettings, importErrorMessage, InterpreterChoice, sameServerOptions } from '../core/settings';
import { CONFIG_SECTION, EXTENSION_ID, RESTART_DEBOUNCE_MS, SERVER_NAME } from './constants';
import { getLogChannel, traceError, traceInfo, traceWarn } from './log/logging';
import { checkImport, resolveInterpreter, selectInterpreter } from './python';
import { readSettings } from './settings';
import { showErrorMessage, workspaceFolders } from './vscodeapi';

export type ServerState = 'stopped' | 'starting' | 'running' | 'notInstalled' | 'failed';

/**
 * Every python file on disk. Dumps live in `passes_dump*` folders, but a dump
 * copied elsewhere is recognised by its `# pypto.program:` first line, which a
 * document selector cannot express; the server ignores the other files. The
 * server is only started when the workspace has dumps (see extension.ts).
 */
export const DOCUMENT_SELECTOR = [{ scheme: 'file', language: 'python' }];

export class CancelledError extends Error {
    constructor() {
        super('cancelled');
    }
}

export class PyptoServer implements vscode.Disposable {
    private client: LanguageClient | undefined;
    private clientDisposables: vscode.Disposable[] = [];
    private chain: Promise<void> = Promise.resolve();
    private readonly restartDebouncer = new Debouncer(RESTART_DEBOUNCE_MS, (reasons) => void this.restart(reasons.join('; ')));
    private current: ExtensionSettings | undefined;
    private interpreter: InterpreterChoice | undefined;
    /** interpreters for which the "cannot import" message was already shown */
    private readonly importErrorShown = new Set<string>();
    private _state: ServerState = 'stopped';
    private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
    readonly onDidChangeState = this.stateEmitter.event;
    private disposed = false;

    constructor(private readonly store: ResultStore) {}

    get state(): ServerState {
        return this._state;
    }

    get settings(): ExtensionSettings | undefined {
        return this.current;
    }

    get interpreterChoice(): InterpreterChoice | undefined {
        return this.interpreter;
    }

    private setState(s: ServerState): void {
        if (s !== this._state) {
            this._state = s;
            this.stateEmitter.fire(s);
        }
    }

    /** Debounced restart (settings / interpreter changes). */
    scheduleRestart(reason: string): void {
        this.restartDebouncer.trigger(reason);
    }

    /** Stop the running server (if any) and start a new one. Serialised. */
    restart(reason: string): Promise<void> {
        const run = async (): Promise<void> => {
            if (this.disposed) {
                return;
            }
            traceInfo(`(re)starting the server: ${reason}`);
            await this.stopClient();
            await this.startClient();
        };
        this.chain = this.chain.then(run, run);
        return this.chain;
    }

    /** A setting the server reads changed: push it (workspace/didChangeConfiguration) without a restart. */
    async pushSettings(): Promise<void> {
        const next = readSettings();
        const prev = this.current;
        this.current = { ...next, interpreter: prev?.interpreter ?? next.interpreter };
        if (!this.client || !this.client.isRunning()) {
            return;
        }
        if (prev && sameServerOptions(prev.server, next.server)) {
            return;
        }
        traceInfo('pushing settings to the server:', next.server);
        await this.client.sendNotification('workspace/didChangeConfiguration', {
            settings: { [CONFIG_SECTION]: next.server },
        });
    }

    private async startClient(): Promise<void> {
        this.setState('starting');
        const settings = readSettings();
        this.current = settings;
        const choice = await resolveInterpreter(settings.interpreter, workspaceFolders()[0]?.uri);
        this.interpreter = choice;
        const cwd = workspaceFolders()[0]?.uri.fsPath;

        const check = await checkImport(choice.command, cwd);
        if (!check.ok) {
            this.setState('notInstalled');
            this.reportImportError(choice, check.detail);
            return;
        }
        traceInfo(`pypto_lsp ${check.version} found with ${choice.command}`);

        const serverOptions: ClientServerOptions = {
            command: choice.command,
            args: ['-m', 'pypto_lsp', 'serve'],
            options: { cwd, env: { ...process.env, PYTHONUNBUFFERED: '1', PYTHONUTF8: '1' } },
        };
        const log = getLogChannel();
        const clientOptions: LanguageClientOptions = {
            documentSelector: DOCUMENT_SELECTOR,
            outputChannel: log,
            traceOutputChannel: log,
            revealOutputChannelOn: RevealOutputChannelOn.Never,
            diagnosticCollectionName: EXTENSION_ID,
            initializationOptions: settings.server,
        };
        const client = new LanguageClient(EXTENSION_ID, SERVER_NAME, serverOptions, clientOptions);
        this.client = client;
        this.clientDisposables.push(
            client.onNotification(FILE_RESULT_NOTIFICATION, (raw: unknown) => {
                const r = parseFileResult(raw);
                if (r) {
                    this.store.update({ ...r, uri: normaliseUri(r.uri), first_divergent: r.first_divergent && normaliseUri(r.first_divergent) });
                } else {
                    traceWarn(`ignored a malformed ${FILE_RESULT_NOTIFICATION}:`, raw);
                }
            }),
            client.onDidChangeState((e) => {
                if (this.client !== client) {
                    return;
                }
                if (e.newState === State.Running) {
                    this.setState('running');
                } else if (e.newState === State.Stopped) {
                    this.setState(this._state === 'starting' ? 'failed' : 'stopped');
                }
            }),
        );
        try {
            await client.start();
            traceInfo(`server started: ${choice.command} -m pypto_lsp serve (validation ${settings.server.validation ? 'on' : 'off'})`);
            this.registerUnadvertisedCommands(client);
            this.setState('running');
        } catch (e) {
            this.setState('failed');
            const msg = e instanceof Error ? e.message : String(e);
            traceError('the server did not start:', e);
            if (/command '.*' already exists/.test(msg)) {
                traceError(
                    'the server advertises a command id that the extension implements itself ' +
                        '(pypto-lsp.compareWithPrevious / configureGolden / revealLine must not be in executeCommandProvider)',
                );
            }
        }
    }

    /**
     * vscode-languageclient registers a client-side command for every id in the
     * server's executeCommandProvider, so lens clicks on `pypto-lsp.validateFile`
     * reach the server. Should the server not advertise one of its commands, add
     * the same forwarder here so the lenses still work.
     */
    private registerUnadvertisedCommands(client: LanguageClient): void {
        const advertised = new Set(client.initializeResult?.capabilities.executeCommandProvider?.commands ?? []);
        for (const id of [SERVER_COMMANDS.validateFile, SERVER_COMMANDS.validateFolder]) {
            if (!advertised.has(id)) {
                traceWarn(`the server does not advertise ${id}; forwarding it from the client`);
                this.clientDisposables.push(
                    vscode.commands.registerCommand(id, (...args: unknown[]) => this.executeServerCommand(id, args)),
                );
            }
        }
    }

    private reportImportError(choice: InterpreterChoice, detail: string): void {
        const message = importErrorMessage(choice, findCheckout(choice.command), detail);
        traceError(message);
        if (this.importErrorShown.has(choice.command)) {
            return;
        }
        this.importErrorShown.add(choice.command);
        const select = 'Select Interpreter';
        const logs = 'Show Log';
        void showErrorMessage(message, select, logs).then((picked) => {
            if (picked === select) {
                void selectInterpreter();
            } else if (picked === logs) {
                getLogChannel().show(true);
            }
        });
    }

    private async stopClient(): Promise<void> {
        const client = this.client;
        this.client = undefined;
        for (const d of this.clientDisposables.splice(0)) {
            d.dispose();
        }
        if (client) {
            try {
                await client.stop(5000);
            } catch (e) {
                traceWarn('stopping the server:', e);
            }
            await client.dispose().catch(() => undefined);
        }
        this.store.clear();
        this.setState('stopped');
    }

    isRunning(): boolean {
        return this.client !== undefined && this.client.isRunning();
    }

    /** workspace/executeCommand with optional work-done progress; rejects with CancelledError on cancel. */
    async executeServerCommand<T = unknown>(
        command: string,
        args: unknown[],
        opts: {
            token?: vscode.CancellationToken;
            progress?: (p: { message?: string; percentage?: number }) => void;
        } = {},
    ): Promise<T> {
        const client = this.client;
        if (!client || !client.isRunning()) {
            throw new Error(this.notRunningReason());
        }
        const workDoneToken = opts.progress ? `pypto-lsp-${Date.now()}-${Math.random().toString(36).slice(2)}` : undefined;
        let progressSub: vscode.Disposable | undefined;
        if (workDoneToken && opts.progress) {
            const report = opts.progress;
            progressSub = client.onProgress(WorkDoneProgress.type, workDoneToken, (v) => {
                if (v.kind === 'begin' || v.kind === 'report') {
                    const p = v as WorkDoneProgressBegin | WorkDoneProgressReport;
                    report({ message: p.message, percentage: p.percentage });
                }
            });
        }
        try {
            const request = client.sendRequest(
                ExecuteCommandRequest.type,
                { command, arguments: args, workDoneToken },
                opts.token as CancellationToken | undefined,
            ) as Promise<T>;
            if (!opts.token) {
                return await request;
            }
            // $/cancelRequest goes out with the token; don't make the user wait for the server to honour it
            const token = opts.token;
            return await new Promise<T>((resolve, reject) => {
                const sub = token.onCancellationRequested(() => {
                    sub.dispose();
                    reject(new CancelledError());
                });
                request.then(
                    (v) => {
                        sub.dispose();
                        resolve(v);
                    },
                    (e) => {
                        sub.dispose();
                        reject(token.isCancellationRequested ? new CancelledError() : e);
                    },
                );
            });
        } finally {
            progressSub?.dispose();
        }
    }

    /** A custom request of the server (e.g. `pypto-lsp/passChart`); rejects when the server is not running. */
    async request<T = unknown>(method: string, params: unknown): Promise<T> {
        const client = this.client;
        if (!client || !client.isRunning()) {
            throw new Error(this.notRunningReason());
        }
        return (await client.sendRequest(method, params)) as T;
    }

    notRunningReason(): string {
        switch (this._state) {
            case 'notInstalled':
                return `the PyPTO LSP server is not running: pypto_lsp is not importable with ${this.interpreter?.command ?? 'the interpreter'}`;
            case 'starting':
                return 'the PyPTO LSP server is still starting';
            case 'failed':
                return 'the PyPTO LSP server failed to start (see the "PyPTO LSP" output)';
            default:
                return 'the PyPTO LSP server is not running';
        }
    }

    async dispose(): Promise<void> {
        this.disposed = true;
        this.restartDebouncer.cancel();
        await this.chain.catch(() => undefined);
        await this.stopClient();
        this.stateEmitter.dispose();
    }
}

/** Server uris -> VS Code's spelling of the same uri, so that map keys match `uri.toString()`. */
export function normaliseUri(uri: string): string {
    try {
        return vscode.Uri.parse(uri, true).toString();
    } catch {
        return uri;
    }
}

/**
 * A pypto-lsp checkout for the `pip install -e` hint: a workspace folder that is
 * one, or a folder above the interpreter (a `.venv` inside a checkout).
 */
function findCheckout(interpreter?: string): string | undefined {
    const candidates = workspaceFolders().map((f) => f.uri.fsPath);
    if (interpreter && path.isAbsolute(interpreter)) {
        let d = path.dirname(interpreter);
        for (let i = 0; i < 4 && path.dirname(d) !== d; i++) {
            d = path.dirname(d);
            candidates.push(d);
        }
    }
    for (const dir of candidates) {
        try {
            const text = fs.readFileSync(path.join(dir, 'pyproject.toml'), 'utf8');
            if (/^\s*name\s*=\s*["']pypto-lsp["']/m.test(text)) {
                return dir;
            }
        } catch {
            // not a checkout
        }
    }
    return undefined;
}
