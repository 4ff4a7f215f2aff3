// SPDX-License-Identifier: Apache-2.0
// A CPU split this program measures itself (tests/integration/test_node.c): outer() calls
// alpha() or beta() at random, each as often as its share of the work given on the command line, and times each call
// with process.cpuUsage(). alpha and beta are too large for TurboFan to inline (more than 460
// bytes of bytecode), so each keeps a frame of its own. Prints "ready", works for the seconds
// given, then prints "share alpha PERCENT" and "share beta PERCENT".
'use strict';

function alpha(n) {
	let s = 1;
	for (let i = 0; i < n; i++) {
		s = (s * 31 + i + 0) | 0;
		s = (s * 33 + i + 1) | 0;
		s = (s * 35 + i + 2) | 0;
		s = (s * 37 + i + 3) | 0;
		s = (s * 39 + i + 4) | 0;
		s = (s * 41 + i + 5) | 0;
		s = (s * 43 + i + 6) | 0;
		s = (s * 45 + i + 7) | 0;
		s = (s * 47 + i + 8) | 0;
		s = (s * 49 + i + 9) | 0;
		s = (s * 51 + i + 10) | 0;
		s = (s * 53 + i + 11) | 0;
		s = (s * 55 + i + 12) | 0;
		s = (s * 57 + i + 13) | 0;
		s = (s * 59 + i + 14) | 0;
		s = (s * 61 + i + 15) | 0;
		s = (s * 63 + i + 16) | 0;
		s = (s * 65 + i + 17) | 0;
		s = (s * 67 + i + 18) | 0;
		s = (s * 69 + i + 19) | 0;
		s = (s * 71 + i + 20) | 0;
		s = (s * 73 + i + 21) | 0;
		s = (s * 75 + i + 22) | 0;
		s = (s * 77 + i + 23) | 0;
		s = (s * 79 + i + 24) | 0;
		s = (s * 81 + i + 25) | 0;
		s = (s * 83 + i + 26) | 0;
		s = (s * 85 + i + 27) | 0;
		s = (s * 87 + i + 28) | 0;
		s = (s * 89 + i + 29) | 0;
		s = (s * 91 + i + 30) | 0;
		s = (s * 93 + i + 31) | 0;
		s = (s * 95 + i + 32) | 0;
		s = (s * 97 + i + 33) | 0;
		s = (s * 99 + i + 34) | 0;
		s = (s * 101 + i + 35) | 0;
		s = (s * 103 + i + 36) | 0;
		s = (s * 105 + i + 37) | 0;
		s = (s * 107 + i + 38) | 0;
		s = (s * 109 + i + 39) | 0;
		s = (s * 111 + i + 40) | 0;
		s = (s * 113 + i + 41) | 0;
		s = (s * 115 + i + 42) | 0;
		s = (s * 117 + i + 43) | 0;
		s = (s * 119 + i + 44) | 0;
		s = (s * 121 + i + 45) | 0;
		s = (s * 123 + i + 46) | 0;
		s = (s * 125 + i + 47) | 0;
	}
	return s;
}

function beta(n) {
	let s = 2;
	for (let i = 0; i < n; i++) {
		s = (s * 32 + i + 0) | 0;
		s = (s * 34 + i + 1) | 0;
		s = (s * 36 + i + 2) | 0;
		s = (s * 38 + i + 3) | 0;
		s = (s * 40 + i + 4) | 0;
		s = (s * 42 + i + 5) | 0;
		s = (s * 44 + i + 6) | 0;
		s = (s * 46 + i + 7) | 0;
		s = (s * 48 + i + 8) | 0;
		s = (s * 50 + i + 9) | 0;
		s = (s * 52 + i + 10) | 0;
		s = (s * 54 + i + 11) | 0;
		s = (s * 56 + i + 12) | 0;
		s = (s * 58 + i + 13) | 0;
		s = (s * 60 + i + 14) | 0;
		s = (s * 62 + i + 15) | 0;
		s = (s * 64 + i + 16) | 0;
		s = (s * 66 + i + 17) | 0;
		s = (s * 68 + i + 18) | 0;
		s = (s * 70 + i + 19) | 0;
		s = (s * 72 + i + 20) | 0;
		s = (s * 74 + i + 21) | 0;
		s = (s * 76 + i + 22) | 0;
		s = (s * 78 + i + 23) | 0;
		s = (s * 80 + i + 24) | 0;
		s = (s * 82 + i + 25) | 0;
		s = (s * 84 + i + 26) | 0;
		s = (s * 86 + i + 27) | 0;
		s = (s * 88 + i + 28) | 0;
		s = (s * 90 + i + 29) | 0;
		s = (s * 92 + i + 30) | 0;
		s = (s * 94 + i + 31) | 0;
		s = (s * 96 + i + 32) | 0;
		s = (s * 98 + i + 33) | 0;
		s = (s * 100 + i + 34) | 0;
		s = (s * 102 + i + 35) | 0;
		s = (s * 104 + i + 36) | 0;
		s = (s * 106 + i + 37) | 0;
		s = (s * 108 + i + 38) | 0;
		s = (s * 110 + i + 39) | 0;
		s = (s * 112 + i + 40) | 0;
		s = (s * 114 + i + 41) | 0;
		s = (s * 116 + i + 42) | 0;
		s = (s * 118 + i + 43) | 0;
		s = (s * 120 + i + 44) | 0;
		s = (s * 122 + i + 45) | 0;
		s = (s * 124 + i + 46) | 0;
		s = (s * 126 + i + 47) | 0;
	}
	return s;
}

const seconds = Number(process.argv[2] || 5);
const alphaWork = Number(process.argv[3] || 3000);
const betaWork = Number(process.argv[4] || 7000);
const spent = { alpha: 0, beta: 0 };
let sink = 0;

function timed(name, fn, n) {
	const t = process.cpuUsage();
	sink ^= fn(n);
	const d = process.cpuUsage(t);
	spent[name] += d.user + d.system;
}

// One of the two at random each time, in the proportion of their work: a fixed alpha, beta
// cycle of about the sampling period would lock the profiler's samples to a phase of it.
function outer() {
	if (Math.random() * (alphaWork + betaWork) < alphaWork)
		timed('alpha', alpha, alphaWork + betaWork);
	else
		timed('beta', beta, alphaWork + betaWork);
}

console.log('ready');
const end = Date.now() + seconds * 1000;
while (Date.now() < end)
	outer();
const total = spent.alpha + spent.beta;
console.log(`share alpha ${(100 * spent.alpha / total).toFixed(2)}`);
console.log(`share beta ${(100 * spent.beta / total).toFixed(2)}`);
console.log(`sink ${sink}`);
