// SPDX-License-Identifier: Apache-2.0
// Blocks in JavaScript (tests/integration/test_node.c, OFF_CPU): loop() calls waiter(), which
// waits 20 ms at a time in Atomics.wait (V8's C++, then libc's pthread_cond_timedwait, which
// has no frame pointer). Prints "ready", blocks for the seconds given.
'use strict';

const seconds = Number(process.argv[2] || 5);
const cell = new Int32Array(new SharedArrayBuffer(4));

function waiter() {
	Atomics.wait(cell, 0, 0, 20);
}

function loop(n) {
	for (let i = 0; i < n; i++)
		waiter();
}

console.log('ready');
loop(seconds * 50);
