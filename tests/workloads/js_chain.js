// Node spinner for JIT symbol tests; run with --perf-basic-prof so V8
// writes /tmp/perf-PID.map:  node --perf-basic-prof js_chain.js [SECONDS]
'use strict';
const seconds = Number(process.argv[2] || 10);
const deadline = Date.now() + seconds * 1000;
let sink = 0;

function jsHotLeaf() {
	for (let i = 0; i < 1000000; i++)
		sink = (sink + i * 7) | 0;
	return sink;
}

function jsLevelA() {
	return jsHotLeaf() + 1;
}

console.log(`ready ${process.pid}`);
while (Date.now() < deadline)
	jsLevelA();
