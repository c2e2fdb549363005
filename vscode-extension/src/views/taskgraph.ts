/**
 * `pypto-lsp.showTaskGraph`: the runtime's tasks of a dump's last run (dependencies, racing
 * pairs in red) in a webview beside the editor. Reachable from the command palette on a pass
 * dump and from the "Show task graph" lens of a dump with a race. The data is the server's
 * `pypto-lsp/taskGraph` (from the last validation result); it is asked again when results
 * change. Clicking a task reveals its call in the dump.
 */
import * as path from 'path';
import * as vscode from 'vscode';
import { traceError } from '../common/log/logging';
import { PyptoServer } from '../common/server';
import { isRevealFromWebview } from '../core/memmap';
import { ResultStore } from '../core/results';
import { TASK_GRAPH_REQUEST, TASKGRAPH_SCRIPTS, TaskGraphData, taskGraphNote, taskGraphWebviewHtml, ToTaskGraphWebview } from '../core/taskgraph';
import { DrawingPanel } from './drawingPanel';

class TaskGraphPanel extends DrawingPanel<ToTaskGraphWebview> {
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
        super('pypto-lsp.taskGraph', `Task graph · ${path.basename(uri.fsPath)}`, extensionUri, taskGraphWebviewHtml, TASKGRAPH_SCRIPTS, reveal, onDispose);
    }
}

export class TaskGraphs implements vscode.Disposable {
    private readonly panels = new Map<string, TaskGraphPanel>();
    private readonly subs: vscode.Disposable[] = [];
    private timer: NodeJS.Timeout | undefined;

    constructor(
        private readonly server: PyptoServer,
        store: ResultStore,
        private readonly extensionUri: vscode.Uri,
    ) {
        // a new validation result is a new run's tasks: ask again (debounced)
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
            p = new TaskGraphPanel(uri, this.extensionUri, () => this.panels.delete(key));
            this.panels.set(key, p);
        } else {
            p.panel.reveal(undefined, true);
        }
        await this.fill(p);
    }

    private async fill(p: TaskGraphPanel): Promise<void> {
        const name = path.basename(p.uri.fsPath);
        try {
            const data = await this.server.request<TaskGraphData>(TASK_GRAPH_REQUEST, { uri: p.uri.toString() });
            p.post({ type: 'data', data, note: taskGraphNote(data, name) });
        } catch (e) {
            traceError('task graph:', e);
            p.post({ type: 'message', text: `No task graph: ${e instanceof Error ? e.message : String(e)}` });
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
