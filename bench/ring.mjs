// Ring frame-rate benchmark: `npm run bench:ring` (after `bash scripts/build-web.sh`).
// Opens web/dist/bench.html in the system Chromium: the real RingView draws the spyre32 ring
// with N transfers in flight at once (default 5000); the page times frames with
// requestAnimationFrame timestamps and reports fps, mean / p95 / worst frame time.
// A benchmark, not a test: it prints figures and never fails on them.
//
//   node bench/ring.mjs [--tiles 5000] [--seconds 5] [--headed]

import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { serveStatic } from "../tests/e2e/server.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const DIST = join(ROOT, "web", "dist");
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const tiles = Number(arg("tiles", "5000"));
const seconds = Number(arg("seconds", "5"));
const headed = process.argv.includes("--headed");

if (!existsSync(join(DIST, "bench.html"))) {
  console.error("web/dist/bench.html is missing: run bash scripts/build-web.sh first");
  process.exit(2);
}
const server = await serveStatic(DIST);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH || "/usr/bin/chromium",
  headless: !headed,
  args: [
    "--no-sandbox",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
  page.on("pageerror", (e) => console.error("page error:", String(e)));
  await page.goto(`${server.url}bench.html?tiles=${tiles}&seconds=${seconds}`);
  await page.waitForFunction(() => "benchResult" in window || "benchError" in window, undefined, {
    timeout: (seconds + 60) * 1000,
  });
  const error = await page.evaluate(() => window.benchError);
  if (error) throw new Error(error);
  const r = await page.evaluate(() => window.benchResult);
  console.log(
    `ring, ${r.machine}, ${r.tiles} tiles in flight, 1280x720, ${headed ? "headed" : "headless"} Chromium:\n` +
      `  ${r.fps.toFixed(1)} frames per second over ${r.seconds.toFixed(1)} s (${r.frames} frames)\n` +
      `  frame time mean ${r.meanMs.toFixed(2)} ms, p95 ${r.p95Ms.toFixed(2)} ms, worst ${r.worstMs.toFixed(2)} ms; ` +
      `${r.slowFrames} frames over 25 ms\n` +
      `  the ring's own drawing: ${r.drawMs.toFixed(2)} ms a frame (a 60 Hz frame has 16.7 ms)`,
  );
} finally {
  await browser.close();
  await server.close();
}
