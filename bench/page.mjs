// A whole model in the page: `npm run bench:page [-- FILE] [--runs 2]` (after
// `bash scripts/build-web.sh`). Opens the built page in the system Chromium, timing-only, then
// opens FILE (default: the full Llama-3.1-8B at seq 8192) as a user would with Open…, and prints
// the wall time from choosing the file to the run on screen, with what the page's status says
// (the compile, cold or from the page's compile cache, and the simulation). Each run after the
// first opens the file again in the same browser profile, so it shows the warm start.
// A benchmark, not a test: it prints figures and never fails on them.
//
//   node bench/page.mjs [FILE] [--runs 2] [--headed]

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
const runs = Number(arg("runs", "2"));
const headed = process.argv.includes("--headed");
const file = resolve(
  process.argv.slice(2).find((a, i, all) => !a.startsWith("--") && all[i - 1] !== "--runs") ??
    join(ROOT, "examples", "graphs", "full", "llama3_8b_seq8192.json"),
);
// A run of a full model may take minutes on a slow machine; this bounds the wait.
const WAIT_MS = 20 * 60_000;

if (!existsSync(join(DIST, "index.html"))) {
  console.error("web/dist/index.html is missing: run bash scripts/build-web.sh first");
  process.exit(2);
}
if (!existsSync(file)) {
  console.error(`${file}: no such file`);
  process.exit(2);
}

/** The page's link state for `state`, as the page writes it (deflate-raw, base64url). */
async function link(url, state) {
  const body = new Blob([JSON.stringify(state)])
    .stream()
    .pipeThrough(new CompressionStream("deflate-raw"));
  const bytes = Buffer.from(await new Response(body).arrayBuffer());
  return `${url}#v=2&s=${bytes.toString("base64url")}`;
}

const runsShown = (page) => page.evaluate(() => Number(document.body.dataset.runs ?? 0));

const server = await serveStatic(DIST);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH || "/usr/bin/chromium",
  headless: !headed,
  args: ["--no-sandbox", "--disable-quic", "--no-first-run", "--disable-background-networking"],
});
try {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const start = await link(server.url, { example: "matmul_add", view: "graph", timingOnly: true });
  console.log(`${file.slice(ROOT.length + 1)} in the page, timing-only, headless Chromium:`);
  for (let i = 0; i < runs; i++) {
    const page = await context.newPage();
    page.on("pageerror", (e) => console.error("page error:", String(e)));
    await page.goto(start, { waitUntil: "load" });
    await page.waitForFunction(() => Number(document.body.dataset.runs ?? 0) > 0, undefined, {
      timeout: 120_000,
    });
    const before = await runsShown(page);
    const t0 = Date.now();
    await page.locator("#file-input").setInputFiles(file);
    await page.waitForFunction(
      (n) => Number(document.body.dataset.runs ?? 0) > n || document.body.dataset.state === "error",
      before,
      { timeout: WAIT_MS, polling: 250 },
    );
    const wallMs = Date.now() - t0;
    const state = await page.evaluate(() => document.body.dataset.state);
    const status = (await page.getByTestId("status").innerText()).trim();
    const cache = await page.evaluate(() => document.body.dataset.compileCache ?? "none");
    const cycles = /([\d,]+) cycles \(/.exec(await page.getByTestId("results").innerText())?.[1];
    const error =
      state === "error" ? (await page.locator("#error-message").innerText()).trim() : "";
    console.log(
      `  run ${i + 1}: ${state === "error" ? "FAILED" : "shown"} ${(wallMs / 1000).toFixed(1)} s after the file was chosen; ` +
        `${cycles ?? "?"} cycles; compile cache ${cache}; status: ${status}${error ? `\n    ${error}` : ""}`,
    );
    await page.close();
  }
} finally {
  await browser.close();
  await server.close();
}
