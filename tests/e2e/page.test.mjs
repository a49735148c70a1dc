// End-to-end: the built page (web/dist) in Debian's Chromium through playwright-core.
// Run `npm run web:build` first (the wasm module must be in web/pkg when building).

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { serveStatic } from "./server.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const DIST = join(ROOT, "web", "dist");
const ARTIFACTS = join(ROOT, "test-artifacts");
const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const STEP_TIMEOUT = 15_000;
const TEST_TIMEOUT = 60_000;

/** @type {Awaited<ReturnType<typeof serveStatic>>} */ let server;
/** @type {import("playwright-core").Browser} */ let browser;
/** @type {import("playwright-core").Page} */ let page;
const consoleErrors = [];
const pageErrors = [];
const foreignRequests = [];

async function snapshotText() {
  return (await page.locator("#snapshot").textContent()) ?? "";
}

async function selectedPass() {
  return page.locator('#pass-list [aria-selected="true"]').getAttribute("data-pass");
}

async function shot(locator, name) {
  mkdirSync(ARTIFACTS, { recursive: true });
  const buf = await locator.screenshot({ timeout: STEP_TIMEOUT, animations: "allow" });
  writeFileSync(join(ARTIFACTS, name), buf);
  return buf;
}

describe("Spyre Playground page", { timeout: 5 * TEST_TIMEOUT }, () => {
  before(
    async () => {
      if (!existsSync(join(DIST, "index.html"))) {
        throw new Error(`${DIST}/index.html is missing: run npm run web:build first`);
      }
      if (!existsSync(CHROMIUM)) {
        throw new Error(
          `no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`,
        );
      }
      server = await serveStatic(DIST);
      browser = await chromium.launch({
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
      const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
      page = await context.newPage();
      page.setDefaultTimeout(STEP_TIMEOUT);
      page.on("console", (msg) => {
        if (msg.type() === "error") consoleErrors.push(msg.text());
      });
      page.on("pageerror", (err) => pageErrors.push(String(err)));
      page.on("request", (req) => {
        const u = req.url();
        if (!u.startsWith(server.url) && !u.startsWith("data:") && !u.startsWith("blob:")) {
          foreignRequests.push(u);
        }
      });
      await page.goto(server.url, { waitUntil: "load", timeout: 30_000 });
      // The first example is compiled and simulated in the worker; wait for its passes,
      // or fail early and clearly if the page shows an error instead.
      await page.waitForFunction(
        () =>
          document.querySelectorAll("#pass-list [data-pass]").length > 0 ||
          !document.getElementById("error-banner")?.hidden,
        undefined,
        { timeout: 30_000 },
      );
      if (await page.locator("#error-banner").isVisible()) {
        const text = await page.locator("#error-banner").textContent();
        throw new Error(`page showed an error on load: ${text}`);
      }
    },
    { timeout: TEST_TIMEOUT },
  );

  after(async () => {
    await browser?.close().catch(() => {});
    await server?.close();
  });

  it("loads the first example with the ktir pass selected", { timeout: TEST_TIMEOUT }, async () => {
    assert.equal(await page.title(), "Spyre Playground");
    const examples = await page.locator("#example-picker option:not([disabled])").count();
    assert.ok(examples > 0, "example picker is empty");
    const passes = await page.locator("#pass-list [data-pass]").count();
    assert.ok(passes > 1, `expected several passes, got ${passes}`);
    assert.equal(await selectedPass(), "ktir");
    const text = await snapshotText();
    assert.match(text, /ktdp\./, "KTIR snapshot has no ktdp. op");
    assert.match(text, /func\.func/, "KTIR snapshot has no func.func");
    await page.waitForTimeout(300);
    await shot(page.locator("#app"), "page.png");
  });

  it("steps through passes with ArrowUp / ArrowDown", { timeout: TEST_TIMEOUT }, async () => {
    const ktirText = await snapshotText();
    // With focus in the pass list.
    await page.locator('#pass-list [aria-selected="true"]').focus();
    await page.keyboard.press("ArrowUp");
    const upPass = await selectedPass();
    assert.notEqual(upPass, "ktir", "ArrowUp did not change the selected pass");
    const upText = await snapshotText();
    assert.notEqual(upText, ktirText, "ArrowUp did not change the snapshot text");
    assert.equal(
      await page.evaluate(() => document.activeElement?.getAttribute("data-pass")),
      upPass,
      "focus did not follow the selection in the pass list",
    );
    await page.keyboard.press("ArrowDown");
    assert.equal(await selectedPass(), "ktir");
    assert.equal(await snapshotText(), ktirText, "ArrowDown did not come back to the KTIR text");

    // Globally, with focus on nothing in particular.
    await page.evaluate(() => /** @type {HTMLElement} */ (document.activeElement)?.blur());
    await page.keyboard.press("ArrowUp");
    assert.equal(await selectedPass(), upPass, "global ArrowUp did not step");
    await page.keyboard.press("ArrowDown");
    assert.equal(await selectedPass(), "ktir", "global ArrowDown did not step");

    // Clicking a pass selects it.
    const first = page.locator("#pass-list [data-pass]").first();
    await first.click();
    assert.equal(await selectedPass(), await first.getAttribute("data-pass"));
    await page.locator('#pass-list [data-pass="ktir"]').click();
    assert.equal(await selectedPass(), "ktir");
  });

  it("animates the ring", { timeout: TEST_TIMEOUT }, async () => {
    const ring = page.locator("#ring-pane");
    assert.ok(await page.locator("#ring-canvas").isVisible(), "ring canvas is not visible");
    const box = await page.locator("#ring-canvas").boundingBox();
    assert.ok(
      box && box.width > 200 && box.height > 200,
      `ring canvas too small: ${JSON.stringify(box)}`,
    );
    const a = await shot(ring, "ring-1.png");
    await page.waitForTimeout(500);
    const b = await shot(ring, "ring-2.png");
    assert.ok(!a.equals(b), "two screenshots of the ring 500 ms apart are identical");

    // Pausing stops the animation; the scrubber moves time.
    await page.locator("#play-toggle").click();
    await page.waitForTimeout(100);
    const p1 = await shot(ring, "ring-paused-1.png");
    await page.waitForTimeout(400);
    const p2 = await shot(ring, "ring-paused-2.png");
    assert.ok(p1.equals(p2), "the ring still changes while paused");
    const max = Number(await page.locator("#time-scrubber").getAttribute("max"));
    assert.ok(max > 0, "scrubber has no range (total cycles is 0?)");
    const mid = Math.floor(max / 2);
    await page.locator("#time-scrubber").fill(String(mid));
    const expected = `${mid.toLocaleString("en-US")} / `;
    await page
      .waitForFunction(
        (want) => document.getElementById("time-readout")?.textContent?.startsWith(want),
        expected,
        { timeout: 5000 },
      )
      .catch(async () => {
        const got = await page.locator("#time-readout").textContent();
        assert.fail(`scrubbing to ${mid} shows "${got}", expected it to start with "${expected}"`);
      });
    await page.locator("#play-toggle").click();
    assert.equal(await page.locator("#play-toggle").textContent(), "Pause");
  });

  it("shows results that pass against the tolerance", { timeout: TEST_TIMEOUT }, async () => {
    const results = page.locator("#results");
    assert.equal(await results.getAttribute("data-passed"), "true", "run did not pass");
    const text = (await results.textContent()) ?? "";
    assert.match(text, /PASS/);
    assert.match(text, /[\d,]+ cycles/);
    assert.match(text, /max abs/);
  });

  it(
    "reports a broken file in the error banner and keeps the page",
    { timeout: TEST_TIMEOUT },
    async () => {
      const before = await snapshotText();
      await page.locator("#file-input").setInputFiles({
        name: "broken.json",
        mimeType: "application/json",
        buffer: Buffer.from('{ "format": "spyre-graph", "nodes": [ '),
      });
      const banner = page.locator("#error-banner");
      await banner.waitFor({ state: "visible" });
      const message = (await page.locator("#error-message").textContent()) ?? "";
      assert.ok(message.trim().length > 0, "error banner is empty");
      assert.equal(await snapshotText(), before, "a failed load replaced the previous snapshot");
      assert.ok((await page.locator("#pass-list [data-pass]").count()) > 0, "pass list emptied");
      await page.locator("#error-dismiss").click();
      await banner.waitFor({ state: "hidden" });
    },
  );

  it("opens a model graph file", { timeout: TEST_TIMEOUT }, async () => {
    const file = join(ROOT, "examples", "graphs", "matmul_add.json");
    await page.locator("#file-input").setInputFiles({
      name: "matmul_add.json",
      mimeType: "application/json",
      buffer: await readFile(file),
    });
    await page.waitForFunction(
      () =>
        document.getElementById("source-name")?.textContent === "matmul_add.json" ||
        !document.getElementById("error-banner")?.hidden,
    );
    assert.ok(
      !(await page.locator("#error-banner").isVisible()),
      `opening matmul_add.json failed: ${await page.locator("#error-message").textContent()}`,
    );
    assert.equal(await selectedPass(), "ktir", "the selected pass was not kept");
    assert.match(await snapshotText(), /func\.func/);
    assert.equal(await page.locator("#results").getAttribute("data-passed"), "true");
    assert.equal(await page.locator("#example-picker").inputValue(), "");

    // Picking an example again replaces the file.
    const firstExample = await page
      .locator("#example-picker option:not([disabled])")
      .first()
      .getAttribute("value");
    await page.locator("#example-picker").selectOption(firstExample ?? "");
    await page.waitForFunction(() => document.getElementById("source-name")?.textContent === "");
    assert.equal(await selectedPass(), "ktir");
  });

  it("toggles between dark and light themes", { timeout: TEST_TIMEOUT }, async () => {
    const themeOf = () => page.evaluate(() => document.documentElement.dataset.theme);
    const before = await themeOf();
    await page.locator("#play-toggle").click(); // pause, so only the theme changes the pixels
    const a = await shot(page.locator("#ring-pane"), `theme-${before}.png`);
    await page.locator("#theme-toggle").click();
    const after = await themeOf();
    assert.notEqual(after, before, "theme did not change");
    assert.ok(after === "dark" || after === "light");
    await page.waitForTimeout(100);
    const b = await shot(page.locator("#ring-pane"), `theme-${after}.png`);
    assert.ok(!a.equals(b), "the ring did not follow the theme");
    await shot(page.locator("#app"), `page-${after}.png`);
    await page.locator("#theme-toggle").click();
    await page.locator("#play-toggle").click();
    assert.equal(await themeOf(), before);
  });

  it(
    "had no console errors, page errors or foreign requests",
    { timeout: TEST_TIMEOUT },
    async () => {
      assert.deepEqual(pageErrors, [], "page errors");
      assert.deepEqual(consoleErrors, [], "console errors");
      assert.deepEqual(foreignRequests, [], "requests outside the page's own origin");
      assert.ok(
        server.requests.some((p) => p.endsWith(".wasm")),
        "the page never fetched a .wasm file",
      );
    },
  );
});
