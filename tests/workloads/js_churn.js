// Node workload that keeps compiling: a new hot function every 100 ms, as
// a service that loads code as it goes. Run with --perf-basic-prof: V8
// writes each function's perf map line when it compiles it.
//   node --perf-basic-prof js_churn.js [SECONDS]
'use strict';
const seconds = Number(process.argv[2] || 10);
const deadline = Date.now() + seconds * 1000;
let sink = 0;
let n = 0;

function jsChurnCaller(fn) {
	for (let i = 0; i < 2000; i++)
		sink = (sink + fn(i)) | 0;
}

console.log(`ready ${process.pid}`);
while (Date.now() < deadline) {
	// a function of its own each time: compiled anew, never reused
	const fn = new Function('i', `let s = ${n}; for (let k = 0; k < 200; k++) s = (s + i * k + ${n}) | 0; return s;`);
	n++;
	const until = Date.now() + 100;
	while (Date.now() < until)
		jsChurnCaller(fn);
}
