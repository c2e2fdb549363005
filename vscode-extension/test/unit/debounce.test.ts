import assert from 'node:assert/strict';
import { describe, mock, test } from 'node:test';
import { Debouncer } from '../../src/core/debounce';

describe('Debouncer (restart debouncing)', () => {
    test('a burst becomes one call with every reason, after the quiet period', () => {
        mock.timers.enable({ apis: ['setTimeout'] });
        try {
            const calls: string[][] = [];
            const d = new Debouncer(1000, (r) => calls.push(r));
            d.trigger('interpreter changed');
            mock.timers.tick(600);
            d.trigger('workspace trusted');
            mock.timers.tick(600);
            assert.equal(calls.length, 0);
            assert.ok(d.pending);
            mock.timers.tick(400);
            assert.deepEqual(calls, [['interpreter changed', 'workspace trusted']]);
            assert.ok(!d.pending);
            d.trigger('again');
            mock.timers.tick(1000);
            assert.deepEqual(calls[1], ['again']);
        } finally {
            mock.timers.reset();
        }
    });
    test('cancel drops the pending call', () => {
        mock.timers.enable({ apis: ['setTimeout'] });
        try {
            let n = 0;
            const d = new Debouncer(100, () => n++);
            d.trigger('x');
            d.cancel();
            mock.timers.tick(500);
            assert.equal(n, 0);
        } finally {
            mock.timers.reset();
        }
    });
});
