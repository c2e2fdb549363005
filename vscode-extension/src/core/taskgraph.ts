/**
 * The task graph webview's page and messages. Free of the VS Code API (views/taskgraph.ts holds
 * the panel). The data is the server's `pypto-lsp/taskGraph` answer (pypto_lsp/validate/taskgraph.py:
 * the runtime's tasks of the dump's last run in layers, the dependencies, the racing pairs); the
 * drawing is pypto_lsp/report_assets/taskgraph.js (the same `validate --report` inlines) over the
 * pictures' Vega-Lite bundle and render.js (its theme).
 */
import { drawingPage, PageOptions, WEBVIEW_SCRIPTS } from './pictures';

export const TASK_GRAPH_REQUEST = 'pypto-lsp/taskGraph';
export const SHOW_TASK_GRAPH = 'pypto-lsp.showTaskGraph';

/** The scripts of the task graph webview, in order (file names under dist/webview/). */
export const TASKGRAPH_SCRIPTS = [...WEBVIEW_SCRIPTS, 'taskgraph.js'] as const;

/** The server's answer, as far as the extension reads it. */
export interface TaskGraphData {
    uri?: string;
    file?: string;
    nodes: unknown[];
    edges: unknown[];
    races: { kind: string }[];
    truncated?: boolean;
    unavailable?: string | null;
    stale?: boolean;
    pending?: boolean;
    counts?: { tasks: number; edges: number; races: number };
}

/** A short line above the graph. */
export function taskGraphNote(d: TaskGraphData, name: string): string {
    if (d.unavailable) {
        return `${name}: no task graph (${d.unavailable}).`;
    }
    const c = d.counts ?? { tasks: d.nodes.length, edges: d.edges.length, races: d.races.length };
    const kinds = [...new Set(d.races.map((r) => r.kind))].join('/');
    const red = c.races === 0 ? 'no race' : `${c.races} racing pair${c.races === 1 ? '' : 's'} (${kinds}) in red`;
    const when = d.pending ? ' · validating…' : d.stale ? ' · from the last run, before your edits' : '';
    return (
        `${name} · ${c.tasks} task${c.tasks === 1 ? '' : 's'} · ${c.edges} dependenc${c.edges === 1 ? 'y' : 'ies'} · ${red}` +
        `${d.truncated ? ' · the first 500 tasks only' : ''}${when}. Click a task to go to its call.`
    );
}

/** The task graph's page; a clicked task reveals its call's line (the same message as the memory map's). */
export function taskGraphWebviewHtml(opts: PageOptions): string {
    return drawingPage({
        ...opts,
        hostId: 'taskgraph',
        style: '.task-graph { margin: 8px 0 20px; }',
        render: "window.pyptoTaskGraph.renderAll(host, last, { maxWidth: document.body.clientWidth, onLineClick: (line) => vscode.postMessage({ type: 'reveal', line: line }) })",
    });
}
