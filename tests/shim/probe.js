// Node's clocks for run.sh: process.hrtime (libuv's uv_hrtime, CLOCK_MONOTONIC),
// performance.now and Date.now (V8's wall clock), read for ~300 ms, with a few timers between.
// Checks that no reading goes back; prints `pid N`, `realtime NAME NS GRAIN_NS` and `clock LABEL
// CLOCK NS REAL1_NS REAL2_NS GRAIN_NS REAL_GRAIN_NS` (process.hrtime between two Date.now) for
// run.sh's kernel brackets.
'use strict';
const { performance } = require('perf_hooks');

const last = new Map();
function check(name, value) {
  if (last.has(name) && value < last.get(name)) {
    console.error(`FAIL: ${name} went back: ${value} after ${last.get(name)}`);
    process.exit(1);
  }
  last.set(name, value);
}

const end = process.hrtime.bigint() + 300000000n;
// Runs in slices so the event loop (and its timers, which libuv times on the monotonic clock)
// turns too.
function slice() {
  for (let i = 0; i < 2000; ++i) {
    const mono = process.hrtime.bigint();
    check('hrtime.bigint', mono);
    const [s, ns] = process.hrtime();
    check('hrtime', BigInt(s) * 1000000000n + BigInt(ns));
    check('performance.now', performance.now());
    check('Date.now', Date.now());
    if (mono >= end) {
      console.log(`pid ${process.pid}`);
      console.log(`realtime Date.now ${BigInt(last.get('Date.now')) * 1000000n} 1000000`);
      const r1 = BigInt(Date.now()) * 1000000n;
      const x = process.hrtime.bigint();
      const r2 = BigInt(Date.now()) * 1000000n;
      console.log(`clock hrtime.bigint MONOTONIC ${x} ${r1} ${r2} 1 1000000`);
      return;
    }
  }
  setTimeout(slice, 1);
}
slice();
