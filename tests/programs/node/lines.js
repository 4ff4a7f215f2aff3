// A CPU split between two lines of one function (tests/integration/test_node.c): hot() runs a
// loop on line 11 and one on line 13, each its share of the work given on the command line,
// and times each loop with process.cpuUsage(). Prints "ready", works for the seconds given,
// then prints "share first PERCENT" and "share second PERCENT". Keep the loops on their lines:
// the test names them by number.
'use strict';
const spent = { first: 0, second: 0 };

function hot(a, b) {
	let s = 1, t = process.cpuUsage();
	for (let i = 0; i < a; i++) s = (s * 31 + i) | 0;
	t = process.cpuUsage(t), spent.first += t.user + t.system, t = process.cpuUsage();
	for (let i = 0; i < b; i++) s = (s * 37 + i) | 0;
	t = process.cpuUsage(t), spent.second += t.user + t.system;
	return s;
}

const seconds = Number(process.argv[2] || 5);
const firstWork = Number(process.argv[3] || 30000);
const secondWork = Number(process.argv[4] || 70000);
let sink = 0;

console.log('ready');
const end = Date.now() + seconds * 1000;
while (Date.now() < end)
	sink ^= hot(firstWork, secondWork);
const total = spent.first + spent.second;
console.log(`share first ${(100 * spent.first / total).toFixed(2)}`);
console.log(`share second ${(100 * spent.second / total).toFixed(2)}`);
console.log(`sink ${sink}`);
