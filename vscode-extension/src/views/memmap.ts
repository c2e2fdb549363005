/**
 * `pypto-lsp.showMemoryMap`: each core's memory over statement order for one dump, in a
 * webview beside the editor. Reachable from the command palette and the editor title on a
 * pass dump, and from the "Show memory map" lens beside the `⚠ memory` lens. The data is the
 * server's `pypto-lsp/memoryMap` (static placement + live ranges, plus the findings of the
 * last validation of the same text); it is asked again when results change. Clicking a bar
 * reveals its line in the dump.
 */
import * as vscode from 'vscode';
import { PyptoServer } from '../common/server';
import { MEMMAP_SCRIPTS, memmapWebviewHtml, MEMORY_MAP_REQUEST, MemoryMapData, memoryMapNote } from '../core/memmap';
import { ResultStore } from '../core/results';
import { DumpDrawings } from './drawingPanel';

export class MemoryMaps extends DumpDrawings<MemoryMapData> {
    constructor(server: PyptoServer, store: ResultStore, extensionUri: vscode.Uri) {
        const kind = {
            viewType: 'pypto-lsp.memoryMap',
            title: 'Memory map',
            what: 'memory map',
            request: MEMORY_MAP_REQUEST,
            page: memmapWebviewHtml,
            scripts: MEMMAP_SCRIPTS,
            note: memoryMapNote,
        };
        super(kind, server, store, extensionUri);
    }
}
