// End-to-end: the compiler and simulator options on the page (issue 19): every CLI flag as a
// control, carried in the link and restored on reload, at 1440x900 and 390x844. Screenshots
// go to test-artifacts/screenshots/. Run `bash scripts/build-web.sh` first.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { serveStatic } from "./server.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const DIST = join(ROOT, "web", "dist");
const SHOTS = join(ROOT, "test-artifacts", "screenshots");
const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const T = 120_000;
const SIZES = [
  { name: "desktop", width: 1440, height: 900, touch: false },
  { name: "phone", width: 390, height: 844, touch: true },
];
/** A gallery example whose kernels stream tiles through time loops (double-buffered). */
const STREAMED = "llama3_8b_layer";
/** A small gallery example. */
const EXAMPLE = "gelu_mlp";

/** @type {Awaited<ReturnType<typeof serveStatic>>} */ let server;
/** @type {import("playwright-core").Browser} */ let browser;
const problems = [];

async function newPage(size) {
  const ctx = await browser.newContext({
    viewport: { width: size.width, height: size.height },
    hasTouch: size.touch,
    isMobile: size.touch,
  });
  const p = await ctx.newPage();
  p.setDefaultTimeout(20_000);
  p.on("pageerror", (err) => problems.push(String(err)));
  p.on("console", (m) => {
    if (m.type() === "error") problems.push(`${p.url()}: ${m.text()}`);
  });
  return p;
}

async function ready(p) {
  await p.waitForFunction(
    () => document.body.dataset.state === "ready" || document.body.dataset.state === "error",
    undefined,
    { timeout: 60_000 },
  );
}

/** Runs `fn` and waits for the page to finish a run after it. */
async function afterRun(p, fn) {
  const n = Number((await p.evaluate(() => document.body.dataset.runs)) ?? 0);
  await fn();
  await p.waitForFunction((n) => Number(document.body.dataset.runs ?? 0) > n, n, {
    timeout: 60_000,
  });
}

async function shot(p, name) {
  mkdirSync(SHOTS, { recursive: true });
  await p.screenshot({ path: join(SHOTS, name), animations: "allow" });
}

async function noSidewaysScroll(p, what) {
  const [sw, iw] = await p.evaluate(() => [document.scrollingElement.scrollWidth, innerWidth]);
  assert.ok(sw <= iw, `${what}: the page is ${sw} px wide in a ${iw} px window`);
}

/** The state object the page keeps in its link (v=2: deflated JSON). */
function linkState(p) {
  return p.evaluate(async () => {
    const params = new URLSearchParams(location.hash.slice(1));
    const s = params.get("s") ?? "";
    const b64 = s.replace(/-/g, "+").replace(/_/g, "/");
    const bin = atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4));
    const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
    const body = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
    return JSON.parse(await new Response(body).text());
  });
}

const cycles = async (p) => (await p.getByTestId("total-cycles").innerText()).split(" cycles")[0];

describe("options on the page", { timeout: 10 * T }, () => {
  before(
    async () => {
      if (!existsSync(join(DIST, "index.html")))
        throw new Error(`${DIST} is incomplete: run bash scripts/build-web.sh first`);
      server = await serveStatic(DIST);
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        timeout: 30_000,
        args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],
      });
    },
    { timeout: T },
  );

  after(async () => {
    await browser?.close().catch(() => {});
    await server?.close();
    assert.deepEqual(problems, [], "console or page errors");
  });

  for (const size of SIZES) {
    it(
      `turns double buffering off, keeps it in the link and restores it at ${size.width}x${size.height}`,
      { timeout: 2 * T },
      async () => {
        const p = await newPage(size);
        await p.goto(`${server.url}#v=1&example=${STREAMED}`, { waitUntil: "load" });
        await ready(p);
        const on = await cycles(p);
        await p.getByTestId("run-options-summary").click();
        const box = p.getByTestId("opt-double-buffer");
        await box.waitFor({ state: "visible" });
        assert.equal(await box.isChecked(), true);
        assert.equal(await p.getByTestId("opt-flags").innerText(), "(the defaults)");
        await afterRun(p, () => box.uncheck());
        const off = await cycles(p);
        assert.notEqual(off, on, "single buffering did not change the cycles");
        assert.equal(await p.getByTestId("opt-flags").innerText(), "--no-double-buffer");
        await noSidewaysScroll(p, `options at ${size.width}`);
        await shot(p, `options-${size.width}x${size.height}.png`);
        // The link carries it.
        await p.waitForFunction(() => location.hash.includes("s="));
        await p.waitForFunction(() => Number(document.body.dataset.saved ?? 0) > 0);
        await p.waitForTimeout(400);
        const state = await linkState(p);
        assert.equal(state.noDoubleBuffer, true, JSON.stringify(state));
        assert.equal(state.example, STREAMED);
        // A reload restores it: the box is off and the run is the single-buffered one.
        await p.reload({ waitUntil: "load" });
        await ready(p);
        await p.waitForFunction(() => Number(document.body.dataset.runs ?? 0) > 0);
        assert.equal(await cycles(p), off);
        await p.getByTestId("run-options-summary").click();
        assert.equal(await p.getByTestId("opt-double-buffer").isChecked(), false);
        // Turning it back on gives the double-buffered cycles again.
        await afterRun(p, () => p.getByTestId("opt-double-buffer").check());
        assert.equal(await cycles(p), on);
        await p.context().close();
      },
    );
  }

  it("offers every CLI flag, each reaching the run", { timeout: 2 * T }, async () => {
    const p = await newPage(SIZES[0]);
    await p.goto(`${server.url}#v=1&example=${EXAMPLE}`, { waitUntil: "load" });
    await ready(p);
    await p.getByTestId("run-options-summary").click();
    for (const id of [
      "opt-allocator",
      "opt-attention-block",
      "opt-double-buffer",
      "opt-timing-only",
      "opt-seed",
      "opt-out-of-bounds",
      "opt-places",
    ])
      await p.getByTestId(id).waitFor({ state: "visible" });
    await afterRun(p, () => p.getByTestId("opt-allocator").selectOption("best-fit"));
    await afterRun(p, () => p.getByTestId("opt-timing-only").check());
    assert.match(await p.locator("#results").innerText(), /timing only|timing-only/i);
    await afterRun(p, async () => {
      await p.getByTestId("opt-seed").fill("5");
      await p.getByTestId("opt-seed").press("Enter");
    });
    assert.equal(
      await p.getByTestId("opt-flags").innerText(),
      "--allocator best-fit --timing-only --seed 5",
    );
    // A bad value is named and runs nothing.
    await p.getByTestId("opt-places").fill("a=b");
    await p.getByTestId("opt-places").press("Enter");
    await p.locator(".options-problem").waitFor({ state: "visible" });
    assert.match(await p.locator(".options-problem").innerText(), /not NAME=ADDR/);
    await p.waitForTimeout(400);
    const state = await linkState(p);
    assert.equal(state.allocator, "best-fit");
    assert.equal(state.timingOnly, true);
    assert.equal(state.seed, 5);
    assert.equal(state.places, undefined);
    await p.context().close();
  });
});
