// SPDX-License-Identifier: Apache-2.0
// Functions made and dropped in a loop (tests/integration/test_node.c): churn(i) compiles a
// new script with `new Function` whose function is named f<i>, calls it for a while, and drops
// it; the collector frees and moves the old ones, so the addresses of their descriptions come
// back for others. A profile must never name a frame with a function that was not running:
// f<i> always under churn. Prints "ready", works for the seconds given.
'use strict';

const seconds = Number(process.argv[2] || 5);
let sink = 0;

function churn(i) {
	const make = new Function(
		`return function f${i}(n) { let s = ${i}; ` +
		'for (let k = 0; k < n; k++) s = (s * 31 + k) | 0; return s; }');
	const f = make();
	for (let r = 0; r < 100; r++)
		sink ^= f(3000);
}

console.log('ready');
const end = Date.now() + seconds * 1000;
for (let i = 0; Date.now() < end; i++)
	churn(i);
console.log(`sink ${sink}`);
