/**
 * `pypto-lsp.showMemoryMap`: each core's memory over statement order for one dump, in a
 * webview beside the editor. Reachable from the command palette and the editor title on a
 * pass dump, and from the "Show memory map" lens beside the `⚠ memory` lens. The data is the
 * server's `pypto-lsp/memoryMap` (static placement + live ranges, plus the findings of the
 * last validation of the same text); it is asked again when results change. Clicking a bar
 * reveals its line in the dump.
 */
import * as path from 'path';
import * as vscode from 'vscode';
import { traceError } from '../common/log/logging';
import { PyptoServer } from '../common/server';
import { isRevealFromWebview, MEMMAP_SCRIPTS, memmapWebviewHtml, MEMORY_MAP_REQUEST, MemoryMapData, memoryMapNote, ToMemmapWebview } from '../core/memmap';
import { ResultStore } from '../core/results';
import { DrawingPanel } from './drawingPanel';

class MemmapPanel extends DrawingPanel<ToMemmapWebview> {
    constructor(
        readonly uri: vscode.Uri,
        extensionUri: vscode.Uri,
        onDispose: () => void,
    ) {
        const reveal = async (m: unknown): Promise<void> => {
            if (isRevealFromWebview(m)) {
                const doc = await vscode.workspace.openTextDocument(uri);
                const pos = new vscode.Position(m.line - 1, 0);
                await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.One, preview: false, selection: new vscode.Range(pos, pos) });
            }
        };
        super('pypto-lsp.memoryMap', `Memory map · ${path.basename(uri.fsPath)}`, extensionUri, memmapWebviewHtml, MEMMAP_SCRIPTS, reveal, onDispose);
    }
}

export class MemoryMaps implements vscode.Disposable {
    private readonly panels = new Map<string, MemmapPanel>();
    private readonly subs: vscode.Disposable[] = [];
    private timer: NodeJS.Timeout | undefined;

    constructor(
        private readonly server: PyptoServer,
        store: ResultStore,
        private readonly extensionUri: vscode.Uri,
    ) {
        // a new validation result brings the sanitizer's findings: ask again (debounced)
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
            p = new MemmapPanel(uri, this.extensionUri, () => this.panels.delete(key));
            this.panels.set(key, p);
        } else {
            p.panel.reveal(undefined, true);
        }
        await this.fill(p);
    }

    private async fill(p: MemmapPanel): Promise<void> {
        const name = path.basename(p.uri.fsPath);
        try {
            const data = await this.server.request<MemoryMapData>(MEMORY_MAP_REQUEST, { uri: p.uri.toString() });
            p.post({ type: 'data', data, note: memoryMapNote(data, name) });
        } catch (e) {
            traceError('memory map:', e);
            p.post({ type: 'message', text: `No memory map: ${e instanceof Error ? e.message : String(e)}` });
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
