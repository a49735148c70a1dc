// The set-up every browser test shares: where the built page and the screenshots live, the two
// window sizes, Chromium and the static server started before a suite and closed after it, and
// pages that collect their console and page errors. Run `bash scripts/build-web.sh` first.

import { after, before } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { serveStatic } from "./server.mjs";

export { serveStatic };

/** The repository's root. */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/** The built page. */
export const DIST = join(ROOT, "web", "dist");
/** Where tests leave what they produce. */
export const ARTIFACTS = join(ROOT, "test-artifacts");
/** Where tests save screenshots. */
export const SHOTS = join(ARTIFACTS, "screenshots");
/** The Chromium the tests drive. */
export const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
/** A test's usual time budget, in milliseconds. */
export const T = 120_000;
/** The two window sizes every page test covers: a desktop and a phone with touch. */
export const SIZES = [
  { name: "desktop", width: 1440, height: 900, touch: false },
  { name: "phone", width: 390, height: 844, touch: true },
];

/**
 * The static server of the suite, set by `suite()` before its tests run (a live binding, so
 * importers see it once it is set).
 * @type {Awaited<ReturnType<typeof serveStatic>>}
 */
export let server;
/**
 * The browser of the suite, set by `suite()` before its tests run.
 * @type {import("playwright-core").Browser}
 */
export let browser;
/** Console errors and uncaught page errors from every page `newPage` opened. */
export const problems = [];

/**
 * Launches Chromium headless, without the background traffic (updates, sync, QUIC probes)
 * that would otherwise count as requests the page did not make.
 */
export function launch() {
  return chromium.launch({
    executablePath: CHROMIUM,
    timeout: 30_000,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/**
 * Registers the suite's lifecycle in the enclosing `describe`: before its tests, checks the
 * page is built (`need`: files that must be in web/dist), serves it and launches Chromium;
 * after them, closes both and, unless `checkProblems` is false, asserts no page logged an error.
 */
export function suite({ need = ["index.html"], checkProblems = true } = {}) {
  before(
    async () => {
      for (const file of need)
        if (!existsSync(join(DIST, file)))
          throw new Error(`${DIST}/${file} is missing: run bash scripts/build-web.sh first`);
      if (!existsSync(CHROMIUM))
        throw new Error(
          `no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`,
        );
      server = await serveStatic(DIST);
      browser = await launch();
    },
    { timeout: T },
  );

  after(async () => {
    await browser?.close().catch(() => {});
    await server?.close();
    if (checkProblems) assert.deepEqual(problems, [], "console or page errors");
  });
}

/**
 * Opens a page in a new context of `size` (one of SIZES) whose console and page errors go to
 * `problems`, and which accepts downloads. `options` are extra context options.
 * @returns {Promise<import("playwright-core").Page>}
 */
export async function newPage(size = SIZES[0], options = {}) {
  const ctx = await browser.newContext({
    viewport: { width: size.width, height: size.height },
    hasTouch: size.touch,
    isMobile: size.touch,
    acceptDownloads: true,
    ...options,
  });
  const p = await ctx.newPage();
  p.setDefaultTimeout(20_000);
  p.on("pageerror", (err) => problems.push(String(err)));
  p.on("console", (m) => {
    if (m.type() === "error") problems.push(`${p.url()}: ${m.text()}`);
  });
  return p;
}

/**
 * Waits until the page has finished loading (its body says "ready" or "error").
 * @returns {Promise<string>} the state it reached
 */
export async function ready(p) {
  await p.waitForFunction(
    () => document.body.dataset.state === "ready" || document.body.dataset.state === "error",
    undefined,
    { timeout: 60_000 },
  );
  return p.evaluate(() => document.body.dataset.state);
}

/** Opens `url` in a new page of `size` and waits for it to be ready. */
export async function open(url, size = SIZES[0], options = {}) {
  const p = await newPage(size, options);
  await p.goto(url, { waitUntil: "load" });
  await ready(p);
  return p;
}

/** How many runs the page has finished (it counts them on <body data-runs>). */
export async function runCount(p) {
  return Number((await p.evaluate(() => document.body.dataset.runs)) ?? 0);
}

/** Waits for the page to finish a run after its `n`th, or to show an error. */
export async function runAfter(p, n) {
  await p.waitForFunction(
    (n) =>
      Number(document.body.dataset.runs ?? 0) > n ||
      (document.body.dataset.state === "error" && !document.getElementById("error-banner")?.hidden),
    n,
    { timeout: 60_000 },
  );
}

/** Runs `fn` and waits for the page to finish a run after it (or to show an error). */
export async function afterRun(p, fn) {
  const n = await runCount(p);
  await fn();
  await runAfter(p, n);
}

/** Brings a view forward through its tab. */
export async function showView(p, view) {
  const tab = p.locator(`#view-tabs [data-view="${view}"]`);
  await tab.scrollIntoViewIfNeeded();
  await tab.click();
  await p.locator(`#view-${view}`).waitFor({ state: "visible" });
}

/** Saves a screenshot of the window as SHOTS/`name`. */
export async function shot(p, name) {
  mkdirSync(SHOTS, { recursive: true });
  await p.screenshot({ path: join(SHOTS, name), animations: "allow" });
}

/** Asserts the page is no wider than its window (`what` names the place in the message). */
export async function noSidewaysScroll(p, what) {
  const [sw, iw] = await p.evaluate(() => [document.scrollingElement.scrollWidth, innerWidth]);
  assert.ok(sw <= iw, `${what}: the page is ${sw} px wide in a ${iw} px window`);
}

/** Waits until the page has written its latest state to the link. */
export async function settled(p) {
  const n = Number((await p.evaluate(() => document.body.dataset.saved)) ?? 0);
  await p.waitForFunction((n) => Number(document.body.dataset.saved ?? 0) > n, n, {
    timeout: 5000,
  });
}

/** The state object the page keeps in its link (v=2: deflated JSON). */
export function linkState(p) {
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

/** A v2 link to the served page holding `text` (normally a state object's JSON). */
export async function linkWith(text) {
  const body = new Blob([text]).stream().pipeThrough(new CompressionStream("deflate-raw"));
  const bytes = Buffer.from(await new Response(body).arrayBuffer());
  return `${server.url}#v=2&s=${bytes.toString("base64url")}`;
}
