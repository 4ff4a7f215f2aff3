// SPDX-License-Identifier: Apache-2.0
// Blocks in a synchronous file read (tests/integration/test_node.c, OFF_CPU): loop() calls
// reader(), which reads the FIFO named on the command line with fs.readSync: node's C++ (the
// fs binding, libuv) then libc's read, in the main thread, until the test writes a line.
// Opened read-write so that the open itself does not wait for a writer and the read sees no
// end of file while nothing is written. Prints "ready", then "read N" after each read; ends
// at a line "end".
'use strict';
const fs = require('fs');

const fd = fs.openSync(process.argv[2], 'r+');
const buf = Buffer.alloc(64);

function reader() {
	return fs.readSync(fd, buf, 0, buf.length, null);
}

function loop() {
	for (;;) {
		const n = reader();
		console.log(`read ${n}`);
		if (buf.toString('latin1', 0, n).includes('end'))
			return;
	}
}

console.log('ready');
loop();
