// SPDX-License-Identifier: Apache-2.0
// The second reference of tests/integration/test_node.c: reads a .cpuprofile that node
// --cpu-prof wrote and prints "self NAME SAMPLES" for each JavaScript function of the script
// named by its second argument (a file name), by the samples whose innermost frame it is,
// most first. node's own profiler, so what V8 itself says ran, not rover's reading of it.
'use strict';
const fs = require('fs');

const prof = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const file = process.argv[3];
const byId = new Map();
for (const n of prof.nodes) byId.set(n.id, n);
const self = new Map();
for (const id of prof.samples) {
	const cf = byId.get(id).callFrame;
	if (!cf.url.endsWith('/' + file)) continue;
	self.set(cf.functionName, (self.get(cf.functionName) || 0) + 1);
}
for (const [name, n] of [...self].sort((a, b) => b[1] - a[1])) console.log(`self ${name} ${n}`);
