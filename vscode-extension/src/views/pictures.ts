/**
 * The pictures webviews: `pypto-lsp.showPassChart` (the PyPTO Passes view title) and
 * `pypto-lsp.showErrorMap` (the lens of a failing tensor). The data comes from the server's
 * `pypto-lsp/passChart` and `pypto-lsp/errorMap` requests; the drawing is the shared
 * render.js with Vega-Lite. In an untrusted workspace nothing runs for a picture: the pass
 * chart shows the results the server has, the error map only a map it has already computed.
 */
import * as path from 'path';
import * as vscode from 'vscode';
import { ERROR_MAP_REQUEST, errorMapNote, isFromWebview, PASS_CHART_REQUEST, passChartNote, ToWebview, webviewHtml, WEBVIEW_SCRIPTS } from '../core/pictures';
import { ResultStore } from '../core/results';
import { traceError } from '../common/log/logging';
import { PyptoServer } from '../common/server';
import { isTrusted } from '../common/vscodeapi';
import { DrawingPanel } from './drawingPanel';

type Kind = 'passChart' | 'errorMap';

class PicturePanel extends DrawingPanel<ToWebview> {
    constructor(
        readonly kind: Kind,
        readonly key: string,
        title: string,
        extensionUri: vscode.Uri,
        onDispose: () => void,
    ) {
        const open = async (m: unknown): Promise<void> => {
            if (isFromWebview(m)) {
                const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(m.file));
                await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.One, preview: false });
            }
        };
        super(`pypto-lsp.${kind}`, title, extensionUri, webviewHtml, WEBVIEW_SCRIPTS, open, onDispose);
    }
}

export class Pictures implements vscode.Disposable {
    private readonly panels = new Map<string, PicturePanel>();
    private readonly subs: vscode.Disposable[] = [];
    private refreshTimer: NodeJS.Timeout | undefined;

    constructor(
        private readonly server: PyptoServer,
        store: ResultStore,
        private readonly extensionUri: vscode.Uri,
    ) {
        // new results redraw the open pass charts (debounced: a folder run streams 50 of them)
        this.subs.push(
            store.onDidChange(() => {
                if (this.refreshTimer) {
                    clearTimeout(this.refreshTimer);
                }
                this.refreshTimer = setTimeout(() => void this.refreshCharts(), 300);
            }),
        );
    }

    private panel(kind: Kind, key: string, title: string): PicturePanel {
        const id = `${kind}:${key}`;
        let p = this.panels.get(id);
        if (!p) {
            p = new PicturePanel(kind, key, title, this.extensionUri, () => this.panels.delete(id));
            this.panels.set(id, p);
        } else {
            p.panel.reveal(undefined, true);
        }
        return p;
    }

    async showPassChart(target: vscode.Uri): Promise<void> {
        const p = this.panel('passChart', target.toString(), `Passes · ${path.basename(target.fsPath)}`);
        await this.fillChart(p);
    }

    private async fillChart(p: PicturePanel): Promise<void> {
        try {
            const chart = await this.server.request<{ passes?: unknown[]; known?: number }>(PASS_CHART_REQUEST, { uri: p.key });
            p.post({ type: 'data', data: { chart }, note: passChartNote(chart) });
        } catch (e) {
            traceError('pass chart:', e);
            p.post({ type: 'message', text: `No pass chart: ${e instanceof Error ? e.message : String(e)}` });
        }
    }

    private async refreshCharts(): Promise<void> {
        for (const p of this.panels.values()) {
            if (p.kind === 'passChart') {
                await this.fillChart(p);
            }
        }
    }

    async showErrorMap(uri: vscode.Uri, tensor?: string): Promise<void> {
        const name = path.basename(uri.fsPath);
        const p = this.panel('errorMap', `${uri.toString()}#${tensor ?? ''}`, `Error map · ${tensor ? `${tensor} · ` : ''}${name}`);
        p.post({ type: 'message', text: isTrusted() ? `Running ${name} with its stores recorded…` : 'Untrusted workspace: showing a computed map only.' });
        try {
            const res = await this.server.request<{ maps?: unknown[]; unavailable?: string; error?: string | null; kept?: boolean }>(
                ERROR_MAP_REQUEST,
                { uri: uri.toString(), tensor, run: isTrusted() },
            );
            if (!res.maps || res.maps.length === 0) {
                p.post({ type: 'message', text: errorMapNote(res, name) });
            } else {
                p.post({ type: 'data', data: { maps: res.maps }, note: errorMapNote(res, name) });
            }
        } catch (e) {
            traceError('error map:', e);
            p.post({ type: 'message', text: `No error map: ${e instanceof Error ? e.message : String(e)}` });
        }
    }

    /** Error maps computed elsewhere (the debugger's tile pictures): drawn as they are. */
    showMaps(key: string, title: string, maps: unknown[], note: string): void {
        const p = this.panel('errorMap', `debug:${key}`, title);
        p.post({ type: 'data', data: { maps }, note });
    }

    dispose(): void {
        if (this.refreshTimer) {
            clearTimeout(this.refreshTimer);
        }
        for (const p of this.panels.values()) {
            p.panel.dispose();
        }
        this.subs.forEach((s) => s.dispose());
    }
}
