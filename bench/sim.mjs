// Simulation speed, WebAssembly in Node against native: `npm run bench:sim`.
// Runs two workloads end to end, several times each, on both sides:
//   - llama_decoder_layer: the small Llama-style layer with numbers (load, reference,
//     compile, simulate, compare);
//   - llama3_8b_layer, timing only: one real-size Llama 3.1 8B layer without numbers (load,
//     compile, simulate).
// Both run on spyre32.
// The wasm side opens a Session and runs it, as the page does, so its time includes handing
// the result to JavaScript as objects (the pass texts stay in the session, as the page's
// runs leave them until a view asks); the native side is `spyre bench` (the same pipeline,
// in-process), which also times serializing the result as JSON, the native counterpart of
// handing it on. Prints median wall times and events per second, and wasm/native against
// the pipeline alone and against pipeline + JSON; then the best run of each side and their
// ratio, which a busy or shared machine disturbs less than the median.
// Builds what is missing first (or everything with --build): the wasm facade for Node with
// wasm-pack (the wasm-release profile) and wasm-opt into target/wasm-node, and the release
// `spyre` binary.
// A benchmark, not a test: it prints figures and never fails on them.
//
//   node bench/sim.mjs [--runs 5] [--build]

import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const PKG = join(ROOT, "target", "wasm-node");
const SPYRE = join(ROOT, "target", "release", "spyre");
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const runs = Number(arg("runs", "5"));
const rebuild = process.argv.includes("--build");

const run = (cmd, args) => execFileSync(cmd, args, { cwd: ROOT, stdio: "inherit" });
if (rebuild || !existsSync(join(PKG, "wasm.js"))) {
  console.error("building the wasm facade for Node (release)...");
  // The page's build (scripts/build-web.sh), for Node: same profile, same wasm-opt pass.
  run("wasm-pack", [
    "build",
    "crates/wasm",
    "--profile",
    "wasm-release",
    "--no-opt",
    "--target",
    "nodejs",
    "--out-dir",
    "../../target/wasm-node",
  ]);
  run("bash", ["scripts/wasm-opt.sh", join(PKG, "wasm_bg.wasm")]);
}
if (rebuild || !existsSync(SPYRE)) {
  console.error("building the release spyre binary...");
  run("cargo", ["build", "--release", "-p", "cli"]);
}

const workloads = [
  { name: "llama_decoder_layer", model: "llama_decoder_layer.json", timingOnly: false },
  { name: "llama3_8b_layer (timing only)", model: "llama3_8b_layer.json", timingOnly: true },
];

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const best = (xs) => Math.min(...xs);
const wasm = createRequire(import.meta.url)(join(PKG, "wasm.js"));

const rows = [];
for (const w of workloads) {
  const path = join(ROOT, "examples", "graphs", w.model);
  const bytes = readFileSync(path);
  // As the page's worker runs it: the pass texts stay in the session until a view asks.
  const options = { timingOnly: w.timingOnly, textsApart: true };
  const once = () => {
    const session = new wasm.Session(bytes, w.model);
    try {
      return session.run(options);
    } finally {
      session.free();
    }
  };
  const events = once().run.events.count; // also the warm-up
  const ms = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    once();
    ms.push(performance.now() - t0);
  }
  // The wasm side compiles every run, so the native side must not take a compile from its
  // artifact cache.
  const args = ["bench", path, "--runs", String(runs), "--json", "--no-cache"];
  if (w.timingOnly) args.push("--timing-only");
  const native = JSON.parse(execFileSync(SPYRE, args, { cwd: ROOT, encoding: "utf8" }));
  if (native.events !== events)
    console.error(`${w.name}: wasm saw ${events} events, native ${native.events}`);
  rows.push({
    w,
    events,
    wasmMs: median(ms),
    nativeMs: native.medianMs,
    wasmBestMs: best(ms),
    nativeBestMs: best(native.ms),
    jsonMs: native.medianMs + native.medianJsonMs,
  });
}

const fmt = (x, d = 1) => x.toFixed(d);
const ratio = (x, y) => `${fmt(x / y, 2)}x`;
// Prints a table of `rows`: a title, then one line per workload under `columns`, each a
// [heading, width, cell of a row].
const table = (title, columns) => {
  console.log(
    title + "\n" + "workload".padEnd(32) + columns.map(([h, w]) => h.padStart(w)).join(""),
  );
  for (const r of rows)
    console.log(r.w.name.padEnd(32) + columns.map(([, w, cell]) => cell(r).padStart(w)).join(""));
};
table(`end to end, median of ${runs} runs (after one warm-up), Node ${process.version}`, [
  ["events", 8, (r) => String(r.events)],
  ["wasm ms", 10, (r) => fmt(r.wasmMs)],
  ["native ms", 11, (r) => fmt(r.nativeMs)],
  ["+json ms", 10, (r) => fmt(r.jsonMs)],
  ["wasm ev/s", 12, (r) => fmt((r.events / r.wasmMs) * 1e3, 0)],
  ["native ev/s", 13, (r) => fmt((r.events / r.nativeMs) * 1e3, 0)],
  ["wasm/native", 13, (r) => ratio(r.wasmMs, r.nativeMs)],
  ["vs +json", 10, (r) => ratio(r.wasmMs, r.jsonMs)],
]);
table(`\nbest of ${runs} runs`, [
  ["wasm ms", 18, (r) => fmt(r.wasmBestMs)],
  ["native ms", 11, (r) => fmt(r.nativeBestMs)],
  ["wasm/native", 13, (r) => ratio(r.wasmBestMs, r.nativeBestMs)],
]);
