// Node allocation load for bench/node.py: Buffers from 2 worker threads at full speed, or many small strings.
// SPDX-License-Identifier: MIT
//
// usage: node --expose-gc nodealloc.js MODE SECONDS [GOFILE]
//
// Prints "ready PID", waits for GOFILE (if given) to exist, then runs MODE
// for SECONDS, printing "w T OPS" every 100 ms (CLOCK_MONOTONIC seconds,
// operations so far, all threads), then stops, collects garbage, prints
// "held BYTES size SIZE" and "done", and waits for SIGUSR2 to exit 0.
//
// buffers: 2 worker threads allocate Buffers of 16..48 KiB
//   (allocUnsafeSlow: above the 8 KiB pool, each is malloc'd by node's
//   ArrayBuffer allocator) and drop them; every 64th allocation replaces
//   one of the worker's 64 kept Buffers of KEPT bytes (a size nothing else
//   has), so once the garbage is collected the workers hold exactly
//   2 * 64 * KEPT bytes of Buffers, allocated while running.
// strings: the main thread builds small strings (concatenations, numbers
//   to text, slices) into a rolling array: V8's heap, few malloc calls.
"use strict";
const { Worker, isMainThread, parentPort, workerData } = require("worker_threads");
const fs = require("fs");

const KEPT = 1048576 + 123;
const NKEPT = 64;
const WORKERS = 2;

function workerMain() {
  const { counter, stop } = workerData;
  const ops = new Int32Array(counter);
  const halt = new Int32Array(stop);
  const kept = new Array(NKEPT);
  let i = 0;
  while (!Atomics.load(halt, 0)) {
    for (let k = 0; k < 256; k++, i++) {
      const b = Buffer.allocUnsafeSlow(16384 + (i % 128) * 256);
      b[0] = i & 0xff;
      if (i % 64 === 0) {
        const c = Buffer.allocUnsafeSlow(KEPT);
        c[0] = 1;
        kept[(i / 64) % NKEPT] = c;
      }
    }
    Atomics.add(ops, 0, 256);
  }
  global.gc();
  parentPort.postMessage(kept.filter(Boolean).length * KEPT);
  parentPort.once("message", () => process.exit(0));
}

function strings(secs, window) {
  const ring = new Array(4096);
  const end = process.hrtime.bigint() + BigInt(Math.round(secs * 1e9));
  let i = 0, ops = 0;
  while (process.hrtime.bigint() < end) {
    for (let k = 0; k < 4096; k++, i++) {
      const s = "item-" + i + ":" + (i * 7).toString(16) + "/" + String(i % 977);
      ring[i & 4095] = s.slice(2) + s.length;
    }
    ops += 4096;
    window(ops);
  }
  return ring.length;
}

function now() {
  return Number(process.hrtime.bigint()) / 1e9;
}

function main() {
  const mode = process.argv[2], secs = Number(process.argv[3]), go = process.argv[4];
  console.log("ready " + process.pid);
  if (go)
    while (!fs.existsSync(go))
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
  let last = 0;
  const window = (ops) => {
    const t = now();
    if (t - last >= 0.1) {
      last = t;
      console.log("w " + t.toFixed(6) + " " + ops);
    }
  };
  const finish = (held, size) => {
    global.gc();
    console.log("held " + held + " size " + size);
    console.log("done");
  };
  if (mode === "strings") {
    strings(secs, window);
    finish(0, 0);
    process.on("SIGUSR2", () => process.exit(0));
    setInterval(() => {}, 1000);
    return;
  }
  const counter = new SharedArrayBuffer(4), stop = new SharedArrayBuffer(4);
  const ops = new Int32Array(counter);
  const workers = [];
  for (let w = 0; w < WORKERS; w++)
    workers.push(new Worker(__filename, { workerData: { counter, stop } }));
  const t0 = now();
  const tick = setInterval(() => {
    window(Atomics.load(ops, 0));
    if (now() - t0 < secs)
      return;
    clearInterval(tick);
    Atomics.store(new Int32Array(stop), 0, 1);
    let held = 0, told = 0;
    for (const w of workers)
      w.once("message", (n) => {
        held += n;
        if (++told === WORKERS)
          setTimeout(() => finish(held, KEPT), 300);
      });
  }, 20);
  process.on("SIGUSR2", () => {
    for (const w of workers)
      w.postMessage("exit");
    process.exit(0);
  });
}

if (isMainThread)
  main();
else
  workerMain();
