/**
 * The "PyPTO LSP" LogOutputChannel: the extension's own messages and, through
 * the language client, the server's stderr, window/logMessage and the LSP trace.
 */
import * as vscode from 'vscode';
import { SERVER_NAME } from '../constants';

let channel: vscode.LogOutputChannel | undefined;

export function createLogChannel(): vscode.LogOutputChannel {
    if (!channel) {
        channel = vscode.window.createOutputChannel(SERVER_NAME, { log: true });
    }
    return channel;
}

export function getLogChannel(): vscode.LogOutputChannel {
    return createLogChannel();
}

export function traceError(...args: unknown[]): void {
    channel?.error(format(args));
}

export function traceWarn(...args: unknown[]): void {
    channel?.warn(format(args));
}

export function traceInfo(...args: unknown[]): void {
    channel?.info(format(args));
}

export function traceVerbose(...args: unknown[]): void {
    channel?.debug(format(args));
}

function format(args: unknown[]): string {
    return args
        .map((a) => (a instanceof Error ? a.stack ?? a.message : typeof a === 'string' ? a : JSON.stringify(a)))
        .join(' ');
}
