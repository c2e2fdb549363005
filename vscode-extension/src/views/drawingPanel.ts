/**
 * A webview panel beside the editor that draws what it is sent (the pictures, the memory map,
 * the task graph): the page from `page` with the extension's own scripts, the last message kept
 * and sent again when the page (re)loads, every other message from the page handed to
 * `onMessage`. `DumpDrawings`: the panels of one kind of drawing of a dump, kept up to date.
 */
import * as path from 'path';
import * as vscode from 'vscode';
import { traceError } from '../common/log/logging';
import { PyptoServer } from '../common/server';
import { isRevealFromWebview } from '../core/memmap';
import { makeNonce, PageOptions } from '../core/pictures';
import { ResultStore } from '../core/results';

export class DrawingPanel<M> {
    readonly panel: vscode.WebviewPanel;
    private last: M | undefined;

    constructor(
        viewType: string,
        title: string,
        extensionUri: vscode.Uri,
        page: (opts: PageOptions) => string,
        scripts: readonly string[],
        onMessage: (m: unknown) => Promise<void> | void,
        onDispose: () => void,
    ) {
        const root = vscode.Uri.joinPath(extensionUri, 'dist', 'webview');
        this.panel = vscode.window.createWebviewPanel(viewType, title, vscode.ViewColumn.Beside, {
            enableScripts: true,
            localResourceRoots: [root],
            retainContextWhenHidden: true,
        });
        const wv = this.panel.webview;
        wv.html = page({
            title,
            scriptUris: scripts.map((f) => wv.asWebviewUri(vscode.Uri.joinPath(root, f)).toString()),
            cspSource: wv.cspSource,
            nonce: makeNonce(),
        });
        wv.onDidReceiveMessage(async (m: unknown) => {
            if (typeof m === 'object' && m !== null && (m as { type?: string }).type === 'ready') {
                if (this.last) {
                    void wv.postMessage(this.last); // the page (re)loaded after data was sent
                }
                return;
            }
            await onMessage(m);
        });
        this.panel.onDidDispose(onDispose);
    }

    post(m: M): void {
        this.last = m;
        void this.panel.webview.postMessage(m);
    }
}

/** One kind of drawing of a dump (the memory map, the task graph): where its data comes from and how it is drawn. */
export interface DumpDrawingKind<D> {
    viewType: string;
    /** the panel title's first part and the error's wording: "Memory map", "memory map" */
    title: string;
    what: string;
    /** the server's request, answered with D for `{uri}` */
    request: string;
    page: (opts: PageOptions) => string;
    scripts: readonly string[];
    note: (data: D, name: string) => string;
}

/** What a drawing's page is sent: its data and the line above it, or a message instead. */
type ToDrawing<D> = { type: 'data'; data: D; note: string } | { type: 'message'; text: string };

class DumpPanel<D> extends DrawingPanel<ToDrawing<D>> {
    constructor(
        readonly uri: vscode.Uri,
        kind: DumpDrawingKind<D>,
        extensionUri: vscode.Uri,
        onDispose: () => void,
    ) {
        // a click on a bar or a task reveals its line in the dump
        const reveal = async (m: unknown): Promise<void> => {
            if (isRevealFromWebview(m)) {
                const doc = await vscode.workspace.openTextDocument(uri);
                const pos = new vscode.Position(m.line - 1, 0);
                await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.One, preview: false, selection: new vscode.Range(pos, pos) });
            }
        };
        super(kind.viewType, `${kind.title} · ${path.basename(uri.fsPath)}`, extensionUri, kind.page, kind.scripts, reveal, onDispose);
    }
}

/**
 * The open drawings of one kind, one panel per dump: shown (or revealed) on request, filled from
 * the server, and asked again (debounced) whenever a validation result changes, since the
 * drawings show the last run's findings and tasks.
 */
export class DumpDrawings<D> implements vscode.Disposable {
    private readonly panels = new Map<string, DumpPanel<D>>();
    private readonly subs: vscode.Disposable[] = [];
    private timer: NodeJS.Timeout | undefined;

    constructor(
        private readonly kind: DumpDrawingKind<D>,
        private readonly server: PyptoServer,
        store: ResultStore,
        private readonly extensionUri: vscode.Uri,
    ) {
        this.subs.push(
            store.onDidChange(() => {
                if (this.timer) {
                    clearTimeout(this.timer);
                }
                this.timer = setTimeout(() => void this.refreshAll(), 300);
            }),
        );
    }

    async show(uri: vscode.Uri): Promise<void> {
        const key = uri.toString();
        let p = this.panels.get(key);
        if (!p) {
            p = new DumpPanel(uri, this.kind, this.extensionUri, () => this.panels.delete(key));
            this.panels.set(key, p);
        } else {
            p.panel.reveal(undefined, true);
        }
        await this.fill(p);
    }

    private async fill(p: DumpPanel<D>): Promise<void> {
        try {
            const data = await this.server.request<D>(this.kind.request, { uri: p.uri.toString() });
            p.post({ type: 'data', data, note: this.kind.note(data, path.basename(p.uri.fsPath)) });
        } catch (e) {
            traceError(`${this.kind.what}:`, e);
            p.post({ type: 'message', text: `No ${this.kind.what}: ${e instanceof Error ? e.message : String(e)}` });
        }
    }

    private async refreshAll(): Promise<void> {
        for (const p of this.panels.values()) {
            await this.fill(p);
        }
    }

    dispose(): void {
        if (this.timer) {
            clearTimeout(this.timer);
        }
        for (const p of this.panels.values()) {
            p.panel.dispose();
        }
        this.subs.forEach((s) => s.dispose());
    }
}
