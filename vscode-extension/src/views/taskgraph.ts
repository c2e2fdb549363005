/**
 * `pypto-lsp.showTaskGraph`: the runtime's tasks of a dump's last run (dependencies, racing
 * pairs in red) in a webview beside the editor. Reachable from the command palette on a pass
 * dump and from the "Show task graph" lens of a dump with a race. The data is the server's
 * `pypto-lsp/taskGraph` (from the last validation result); it is asked again when results
 * change. Clicking a task reveals its call in the dump.
 */
import * as vscode from 'vscode';
import { PyptoServer } from '../common/server';
import { ResultStore } from '../core/results';
import { TASK_GRAPH_REQUEST, TASKGRAPH_SCRIPTS, TaskGraphData, taskGraphNote, taskGraphWebviewHtml } from '../core/taskgraph';
import { DumpDrawings } from './drawingPanel';

export class TaskGraphs extends DumpDrawings<TaskGraphData> {
    constructor(server: PyptoServer, store: ResultStore, extensionUri: vscode.Uri) {
        const kind = {
            viewType: 'pypto-lsp.taskGraph',
            title: 'Task graph',
            what: 'task graph',
            request: TASK_GRAPH_REQUEST,
            page: taskGraphWebviewHtml,
            scripts: TASKGRAPH_SCRIPTS,
            note: taskGraphNote,
        };
        super(kind, server, store, extensionUri);
    }
}
