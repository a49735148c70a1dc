// End-to-end: the built page (web/dist) in Debian's Chromium through playwright-core.
// Run `bash scripts/build-web.sh` first (the wasm module must be in web/pkg when building).
// Screenshots of every view go to test-artifacts/.

import { before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { ARTIFACTS, ROOT, browser, linkWith, server, settled, suite } from "./harness.mjs";

const STEP_TIMEOUT = 20_000;
const TEST_TIMEOUT = 120_000;
const VIEWS = ["graph", "passes", "ir", "ring", "timeline", "cores", "roofline"];

/** @type {import("playwright-core").BrowserContext} */ let context;
/** @type {import("playwright-core").Page} */ let page;
const consoleErrors = [];
const pageErrors = [];
const foreignRequests = [];

/** Reports console errors, page errors and requests outside the page's origin. */
function watch(p) {
  p.on("console", (msg) => {
    if (msg.type() === "error") consoleErrors.push(`${p.url()}: ${msg.text()}`);
  });
  p.on("pageerror", (err) => pageErrors.push(String(err)));
  p.on("request", (req) => {
    const u = req.url();
    if (!u.startsWith(server.url) && !u.startsWith("data:") && !u.startsWith("blob:")) {
      foreignRequests.push(u);
    }
  });
}

async function snapshotText(p = page) {
  return (await p.locator("#snapshot").textContent()) ?? "";
}

async function diffText(p = page) {
  return (await p.locator("#diff").textContent()) ?? "";
}

async function selectedPass(p = page) {
  return p.locator('#pass-list [aria-selected="true"]').getAttribute("data-pass");
}

async function shot(locator, name) {
  mkdirSync(ARTIFACTS, { recursive: true });
  const buf = await locator.screenshot({ timeout: STEP_TIMEOUT, animations: "allow" });
  writeFileSync(join(ARTIFACTS, name), buf);
  return buf;
}

/** Waits for the page to finish a run (it counts them on <body data-runs>) or show an error. */
async function runs(p = page) {
  return Number((await p.evaluate(() => document.body.dataset.runs)) ?? 0);
}

async function waitForRunAfter(count, p = page) {
  await p.waitForFunction(
    (n) =>
      Number(document.body.dataset.runs ?? 0) > n ||
      (document.body.dataset.state === "error" &&
        !document.getElementById("error-banner")?.hidden &&
        (document.getElementById("error-message")?.textContent ?? "").trim() !== ""),
    count,
    { timeout: 60_000 },
  );
}

async function showView(view, p = page) {
  await p.locator(`#view-tabs [data-view="${view}"]`).click();
  await p.locator(`#view-${view}`).waitFor({ state: "visible" });
}

async function openPage(url) {
  const p = await context.newPage();
  p.setDefaultTimeout(STEP_TIMEOUT);
  watch(p);
  await p.goto(url, { waitUntil: "load", timeout: 30_000 });
  await p.waitForFunction(
    () => document.body.dataset.state === "ready" || document.body.dataset.state === "error",
    undefined,
    { timeout: 60_000 },
  );
  return p;
}

/** A KTIR module whose loop would run for hours: each of its 10^12 iterations adds 512x512 values. */
const HEAVY_KTIR = `func.func @spin() attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %big = arith.constant 1000000000000 : index
  %z = arith.constant dense<1.0> : tensor<512x512xf16>
  scf.for %i = %c0 to %big step %c1 {
    %s = arith.addf %z, %z : tensor<512x512xf16>
  }
  return
}
`;

/** The same loop with an empty body. */
const EMPTY_LOOP_KTIR = `func.func @spin() attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %big = arith.constant 1000000000000 : index
  scf.for %i = %c0 to %big step %c1 {
  }
  return
}
`;

async function noticeText(p) {
  return (await p.locator("#notice-text").textContent()) ?? "";
}

/** Waits until the notice line says something matching `re`. */
async function waitForNotice(p, re, timeout = 60_000) {
  await p.waitForFunction(
    (source) => new RegExp(source).test(document.getElementById("notice-text")?.textContent ?? ""),
    re.source,
    { timeout },
  );
  assert.ok(await p.locator("#notice").isVisible(), "the notice is not visible");
  return noticeText(p);
}

describe("Spyre Playground page", { timeout: 20 * TEST_TIMEOUT }, () => {
  // The console and page errors are checked by the tests below, with foreign requests.
  suite({ checkProblems: false });

  before(
    async () => {
      context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
      page = await openPage(server.url);
      if (await page.locator("#error-banner").isVisible()) {
        const text = await page.locator("#error-banner").textContent();
        throw new Error(`page showed an error on load: ${text}`);
      }
    },
    { timeout: TEST_TIMEOUT },
  );

  it("loads the first example with the ktir pass selected", { timeout: TEST_TIMEOUT }, async () => {
    assert.equal(await page.title(), "Spyre Playground");
    const examples = await page.locator("#example-picker option:not([disabled])").count();
    assert.ok(examples > 0, "example picker is empty");
    assert.ok((await page.locator("#pass-list [data-pass]").count()) > 1, "few passes");
    assert.equal(await selectedPass(), "ktir");
    await showView("passes");
    const text = await snapshotText();
    assert.match(text, /ktdp\./, "KTIR snapshot has no ktdp. op");
    assert.match(text, /func\.func/, "KTIR snapshot has no func.func");
    assert.ok(
      (await page.locator("#machine-picker option").count()) >= 2,
      "machine presets missing",
    );
  });

  it(
    "renders every view for every gallery example without console errors",
    { timeout: 10 * TEST_TIMEOUT },
    async () => {
      const names = await page
        .locator("#example-picker option:not([disabled])")
        .evaluateAll((os) => os.map((o) => o.getAttribute("value")));
      assert.ok(names.length > 0);
      const failed = [];
      for (const [i, name] of names.entries()) {
        const n = await runs();
        if (i > 0 || (await page.locator("#example-picker").inputValue()) !== name) {
          await page.locator("#example-picker").selectOption(name);
          await waitForRunAfter(n);
        }
        const msg = await page.evaluate(() =>
          document.getElementById("error-banner")?.hidden
            ? null
            : (document.getElementById("error-message")?.textContent ?? ""),
        );
        if (msg !== null) {
          // A pipeline that fails for an example must say so clearly, and leave a usable page.
          assert.ok(msg.trim().length > 10, `empty error banner for ${name}`);
          failed.push(`${name}: ${msg.split("\n")[0]}`);
        }
        // Every gallery model runs: with numbers checked, or timing-only when too large.
        const verdict = await page.getByTestId("run-verdict").innerText();
        assert.ok(["PASS", "RAN", "TIMED"].includes(verdict), `${name}: verdict ${verdict}`);
        if (name === "llama3_8b_layer") assert.equal(verdict, "TIMED");
        for (const view of VIEWS) {
          await showView(view);
          const box = await page.locator(`#view-${view}`).boundingBox();
          assert.ok(box && box.width > 400 && box.height > 200, `${name}/${view} is too small`);
          if (view === "ring" || view === "timeline") {
            const c = await page.locator(`#${view}-canvas`).boundingBox();
            assert.ok(c && c.width > 200 && c.height > 200, `${name}/${view} canvas too small`);
          } else {
            const text = (await page.locator(`#view-${view}`).innerText()).trim();
            assert.ok(text.length > 0, `${name}/${view} is empty`);
          }
          await page.waitForTimeout(120);
          await shot(page.locator("#app"), `view-${name}-${view}.png`);
        }
        // Awaited and only when shown: a pending click would dismiss a later test's banner.
        if (await page.locator("#error-banner").isVisible()) {
          await page.locator("#error-dismiss").click();
        }
      }
      assert.deepEqual(failed, [], "examples whose pipeline failed");
      assert.deepEqual(pageErrors, [], "page errors");
      assert.deepEqual(consoleErrors, [], "console errors");
      // Back to the first example that runs, for the tests below.
      const n = await runs();
      await page.locator("#example-picker").selectOption(names[0]);
      await waitForRunAfter(n);
    },
  );

  it(
    "steps through passes with the arrow keys, changing the snapshot and the diff",
    { timeout: TEST_TIMEOUT },
    async () => {
      await showView("passes");
      // SDSC and KTIR are shown side by side; the passes before them are diffed.
      await page.locator('#pass-list [data-pass="ktir"]').click();
      assert.match(await page.locator("#diff-title").textContent(), /SDSC beside KTIR/);
      await page.locator('#pass-list [data-pass="scratchpad"]').click();
      const scratchText = await snapshotText();
      const scratchDiff = await diffText();
      assert.match(await page.locator("#diff-title").textContent(), /→ scratchpad/);
      // With focus in the pass list.
      await page.locator('#pass-list [aria-selected="true"]').focus();
      await page.keyboard.press("ArrowUp");
      const upPass = await selectedPass();
      assert.notEqual(upPass, "scratchpad", "ArrowUp did not change the selected pass");
      assert.notEqual(await snapshotText(), scratchText, "ArrowUp did not change the snapshot");
      assert.notEqual(await diffText(), scratchDiff, "ArrowUp did not change the diff");
      assert.match(await page.locator("#diff-meta").textContent(), /^\+\d+ −\d+$/);
      assert.ok((await page.locator("#diff .dl.add, #diff .dl.del").count()) > 0, "no diff lines");
      await page.keyboard.press("ArrowDown");
      assert.equal(await selectedPass(), "scratchpad");
      assert.equal(await snapshotText(), scratchText);
      assert.equal(await diffText(), scratchDiff);
      // Globally, with focus on nothing in particular, from the first pass.
      await page.locator("#pass-list [data-pass]").first().click();
      assert.match(await diffText(), /first pass/);
      await page.evaluate(() => /** @type {HTMLElement} */ (document.activeElement)?.blur());
      await page.keyboard.press("ArrowDown");
      const second = await selectedPass();
      assert.equal(
        second,
        await page.locator("#pass-list [data-pass]").nth(1).getAttribute("data-pass"),
      );
      assert.ok((await page.locator("#diff .dl.add, #diff .dl.del").count()) > 0);
      await shot(page.locator("#app"), "passes-diff.png");
      await page.locator('#pass-list [data-pass="ktir"]').click();
    },
  );

  it(
    "shows a KTIR error on the right line, clears it when fixed, and runs an edit",
    { timeout: TEST_TIMEOUT },
    async () => {
      await showView("ir");
      const lines = (
        await page.evaluate(() => {
          const content = document.querySelector("#ktir-editor .cm-content");
          return content ? /** @type {HTMLElement} */ (content).innerText : "";
        })
      ).split("\n");
      const loadLine = lines.findIndex((l) => l.includes("ktdp.load")) + 1;
      assert.ok(loadLine > 1, "no ktdp.load in the KTIR editor");
      await page.locator("#ktir-editor .cm-content").click();
      await page.keyboard.press("Control+Home");
      for (let i = 1; i < loadLine; i++) await page.keyboard.press("ArrowDown");
      await page.keyboard.press("End");
      // A new line after it with an op the verifier does not know.
      await page.keyboard.press("Enter");
      await page.keyboard.type("%bogus = ktdp.lod %x : index");
      const errLine = loadLine + 1;
      const diag = page.locator('#ktir-diagnostics li[data-severity="error"]').first();
      await diag.waitFor({ state: "visible" });
      assert.equal(Number(await diag.getAttribute("data-line")), errLine, await diag.textContent());
      assert.match((await diag.textContent()) ?? "", /ktdp\.lod/);
      await page.locator("#ktir-editor .cm-lintRange-error").first().waitFor();
      assert.match(await page.locator("#ktir-state").textContent(), /edited · \d+ error/);
      await shot(page.locator("#app"), "ir-diagnostic.png");

      // Fix it: remove the line again.
      await page.keyboard.press("Shift+Home");
      await page.keyboard.press("Shift+Home");
      await page.keyboard.press("Backspace");
      await page.keyboard.press("Backspace");
      await page.waitForFunction(
        () => document.querySelectorAll("#ktir-diagnostics li.error").length === 0,
      );
      assert.equal(await page.locator("#ktir-editor .cm-lintRange-error").count(), 0);

      // A real edit that still verifies (a comment), then Run: results come back.
      await page.keyboard.press("Control+Home");
      await page.keyboard.press("End");
      await page.keyboard.type(" // edited in the playground");
      await page.waitForFunction(() =>
        /edited/.test(document.getElementById("ktir-state")?.textContent ?? ""),
      );
      const n = await runs();
      await page.locator("#ktir-run").click();
      await waitForRunAfter(n);
      assert.ok(!(await page.locator("#error-banner").isVisible()), "the edited run failed");
      assert.equal(await page.locator("#results").getAttribute("data-passed"), "true");
      assert.match(await page.locator("#results").textContent(), /edited KTIR/);
      assert.match(await page.locator("#ktir-state").textContent(), /^edited/);
      await shot(page.locator("#app"), "ir-run.png");
      await page.locator("#ktir-reset").click();
      assert.match(await page.locator("#ktir-state").textContent(), /as compiled/);
    },
  );

  it(
    "animates the ring, and scrubbing to one time twice gives the same frame",
    { timeout: TEST_TIMEOUT },
    async () => {
      await showView("ring");
      if ((await page.locator("#play-toggle").textContent())?.trim() === "Play") {
        await page.locator("#play-toggle").click();
      }
      const canvas = page.locator("#ring-canvas");
      const a = await shot(canvas, "ring-1.png");
      await page.waitForTimeout(400);
      const b = await shot(canvas, "ring-2.png");
      assert.ok(!a.equals(b), "two frames of the ring 400 ms apart are identical");

      await page.locator("#play-toggle").click(); // pause
      const max = Number(await page.locator("#time-scrubber").getAttribute("max"));
      assert.ok(max > 0, "scrubber has no range");
      const mid = Math.floor(max / 2);
      await page.locator("#time-scrubber").fill(String(mid));
      await page.waitForTimeout(100);
      const m1 = await shot(canvas, "ring-scrub-1.png");
      await page.locator("#time-scrubber").fill(String(Math.floor(max / 5)));
      await page.waitForTimeout(100);
      const other = await shot(canvas, "ring-scrub-other.png");
      await page.locator("#time-scrubber").fill(String(mid));
      await page.waitForTimeout(100);
      const m2 = await shot(canvas, "ring-scrub-2.png");
      assert.ok(m1.equals(m2), "the same time drew two different frames");
      assert.ok(!m1.equals(other), "different times drew the same frame");
      assert.match(
        await page.locator("#time-readout").textContent(),
        new RegExp(`^${mid.toLocaleString("en-US")} /`),
      );

      // Clicking a core shows its details.
      const box = await canvas.boundingBox();
      const core = await page.evaluate(() => {
        const c = /** @type {HTMLCanvasElement} */ (document.getElementById("ring-canvas"));
        return { w: c.clientWidth, h: c.clientHeight };
      });
      assert.ok(box);
      // Core 0 sits just right of the top (stop 0 of the ring is at the top).
      for (let dx = 0; dx < 60; dx += 4) {
        await canvas.click({ position: { x: core.w / 2 + dx, y: 40 } });
        if ((await page.locator("#core-details").getAttribute("data-core")) !== "") break;
      }
      const picked = await page.locator("#core-details").getAttribute("data-core");
      assert.ok(
        picked !== null && picked !== "",
        "clicking near the top of the ring selected no core",
      );
      assert.match(await page.locator("#core-details").textContent(), /Core \d+ at cycle/);
      assert.match(await page.locator("#core-details").textContent(), /Scratchpad[\s\S]*capacity/);
      await shot(page.locator("#app"), "ring-core.png");
    },
  );

  it(
    "draws the timeline with zoom, pan and the utilisation summary",
    { timeout: TEST_TIMEOUT },
    async () => {
      await showView("timeline");
      assert.match(await page.locator("#util-summary").textContent(), /Bottleneck/);
      assert.match(
        await page.locator("[data-testid=bottleneck]").textContent(),
        /memory|compute|communication/,
      );
      const full = await page.locator("#timeline-canvas").getAttribute("data-window");
      await page.keyboard.press("+");
      const zoomed = await page.locator("#timeline-canvas").getAttribute("data-window");
      assert.notEqual(zoomed, full, "+ did not zoom");
      await page.keyboard.press("ArrowRight");
      assert.notEqual(
        await page.locator("#timeline-canvas").getAttribute("data-window"),
        zoomed,
        "→ did not pan",
      );
      await page.keyboard.press("0");
      await shot(page.locator("#app"), "timeline.png");
    },
  );

  it("links a graph node to its KTIR kernel", { timeout: TEST_TIMEOUT }, async () => {
    await showView("graph");
    const op = page.locator("#graph-scroll [data-node^='op:']").first();
    await op.click();
    assert.match(await page.locator("#node-details").textContent(), /tensor/);
    await page.locator("#node-details [data-link=ktir]").click();
    await page.locator("#view-ir").waitFor({ state: "visible" });
    await page.locator("#ktir-editor .cm-linked-line").first().waitFor();
    assert.match(
      await page.locator("#ktir-editor .cm-linked-line").first().textContent(),
      /func\.func/,
    );
    assert.match(await page.locator("#view-meta").textContent(), /KTIR lines \d+–\d+/);
  });

  it(
    "plots one roofline dot per kernel and a click selects its kernel",
    { timeout: TEST_TIMEOUT },
    async () => {
      await showView("roofline");
      assert.match(
        await page.getByTestId("roofline-program").textContent(),
        /program: [\d,]+ cycles, bound [\d,]+ \((dram|matmul|vector)\), ratio/,
      );
      const dots = page.locator("#view-roofline circle.rl-dot");
      assert.ok((await dots.count()) > 0, "no roofline dots");
      await dots.first().dispatchEvent("click");
      await page.locator("#view-roofline circle.rl-dot.selected").waitFor();
      assert.match(await page.locator("#view-meta").textContent(), /KTIR lines \d+–\d+/);
      await showView("ir");
      await page.locator("#ktir-editor .cm-linked-line").first().waitFor();
      assert.match(
        await page.locator("#ktir-editor .cm-linked-line").first().textContent(),
        /func\.func/,
      );
      await shot(page.locator("#app"), "roofline.png");
    },
  );

  it(
    "restores example, pass, view and time from a share URL",
    { timeout: TEST_TIMEOUT },
    async () => {
      await page.locator('#pass-list [data-pass="layout"]').click();
      await showView("timeline");
      await page
        .locator("#play-toggle")
        .click()
        .catch(() => {});
      if ((await page.locator("#play-toggle").textContent())?.trim() === "Pause") {
        await page.locator("#play-toggle").click();
      }
      const max = Number(await page.locator("#time-scrubber").getAttribute("max"));
      const t = Math.floor(max / 3);
      await page.locator("#time-scrubber").fill(String(t));
      await settled(page);
      const url = page.url();
      assert.match(url, /#v=2&s=/);
      const example = await page.locator("#example-picker").inputValue();
      const p2 = await openPage(url);
      assert.equal(await p2.locator("#example-picker").inputValue(), example);
      assert.equal(await selectedPass(p2), "layout");
      assert.equal(
        await p2.locator('#view-tabs [aria-selected="true"]').getAttribute("data-view"),
        "timeline",
      );
      assert.ok(await p2.locator("#view-timeline").isVisible());
      assert.match(
        await p2.locator("#time-readout").textContent(),
        new RegExp(`^${t.toLocaleString("en-US")} /`),
      );
      assert.equal((await p2.locator("#play-toggle").textContent())?.trim(), "Play");
      await shot(p2.locator("#app"), "restored.png");
      await p2.close();
      await page.locator('#pass-list [data-pass="ktir"]').click();
    },
  );

  it(
    "reports malformed files in the banner and keeps working",
    { timeout: TEST_TIMEOUT },
    async () => {
      await showView("passes");
      const before = await snapshotText();
      if (await page.locator("#error-banner").isVisible())
        await page.locator("#error-dismiss").click();
      for (const [name, body] of [
        ["broken.json", '{ "format": "spyre-graph", "nodes": [ '],
        ["broken.mlir", "module {\n  func.func @k( {\n}\n"],
        ["binary.json", "\u0000\u00ff\u0001garbage"],
      ]) {
        await page.locator("#file-input").setInputFiles({
          name,
          mimeType: "application/octet-stream",
          buffer: Buffer.from(body, "latin1"),
        });
        const banner = page.locator("#error-banner");
        await banner.waitFor({ state: "visible" });
        await page.waitForFunction(() => document.body.dataset.state === "error");
        const message = (await page.locator("#error-message").textContent()) ?? "";
        assert.ok(message.includes(name), `the error for ${name} does not name it: ${message}`);
        assert.equal(
          await snapshotText(),
          before,
          `a failed load of ${name} replaced the snapshot`,
        );
        await page.locator("#error-dismiss").click();
        await banner.waitFor({ state: "hidden" });
      }
      // Still working: passes step, and a good file opens.
      await page.keyboard.press("ArrowUp");
      assert.notEqual(await snapshotText(), before);
      await page.keyboard.press("ArrowDown");
      const n = await runs();
      await page.locator("#file-input").setInputFiles({
        name: "matmul_add.json",
        mimeType: "application/json",
        buffer: await readFile(join(ROOT, "examples", "graphs", "matmul_add.json")),
      });
      await waitForRunAfter(n);
      assert.equal(await page.locator("#source-name").textContent(), "matmul_add.json");
      assert.equal(await page.locator("#results").getAttribute("data-passed"), "true");
    },
  );

  it(
    "opens a standalone KTIR module (.mlir) and simulates it",
    { timeout: TEST_TIMEOUT },
    async () => {
      const n = await runs();
      await page.locator("#file-input").setInputFiles({
        name: "add_rows.mlir",
        mimeType: "text/plain",
        buffer: await readFile(join(ROOT, "tests", "ktir", "valid", "add_rows.mlir")),
      });
      await waitForRunAfter(n);
      assert.ok(
        !(await page.locator("#error-banner").isVisible()),
        await page.locator("#error-message").textContent(),
      );
      assert.equal(await page.locator("#pass-list [data-pass]").count(), 0);
      assert.match(await page.locator("#results").textContent(), /RAN/);
      await showView("ir");
      assert.match(
        await page.locator("#ktir-editor .cm-content").innerText(),
        /func\.func @add_rows/,
      );
      await showView("ring");
      await shot(page.locator("#app"), "ktir-file-ring.png");
      // Back to an example.
      const m = await runs();
      const first = await page
        .locator("#example-picker option:not([disabled])")
        .first()
        .getAttribute("value");
      await page.locator("#example-picker").selectOption(first ?? "");
      await waitForRunAfter(m);
    },
  );

  it("has a shortcuts panel and dark and light themes", { timeout: TEST_TIMEOUT }, async () => {
    await page.evaluate(() => /** @type {HTMLElement} */ (document.activeElement)?.blur());
    await page.keyboard.press("?");
    await page.locator("#help").waitFor({ state: "visible" });
    assert.match(await page.locator("#help").textContent(), /previous \/ next pass/);
    await shot(page, "help.png");
    await page.keyboard.press("Escape");
    await page.locator("#help").waitFor({ state: "hidden" });

    const themeOf = () => page.evaluate(() => document.documentElement.dataset.theme);
    await showView("ring");
    if ((await page.locator("#play-toggle").textContent())?.trim() === "Pause") {
      await page.locator("#play-toggle").click();
    }
    const before = await themeOf();
    const a = await shot(page.locator("#ring-canvas"), `theme-${before}.png`);
    await page.locator("#theme-toggle").click();
    const afterTheme = await themeOf();
    assert.notEqual(afterTheme, before);
    await page.waitForTimeout(100);
    const b = await shot(page.locator("#ring-canvas"), `theme-${afterTheme}.png`);
    assert.ok(!a.equals(b), "the ring did not follow the theme");
    for (const v of VIEWS) {
      await showView(v);
      await page.waitForTimeout(80);
      await shot(page.locator("#app"), `${afterTheme}-${v}.png`);
    }
    await page.locator("#theme-toggle").click();
    assert.equal(await themeOf(), before);
  });

  it("renders <spyre-playground> inside the demo page", { timeout: TEST_TIMEOUT }, async () => {
    const p = await context.newPage();
    p.setDefaultTimeout(STEP_TIMEOUT);
    watch(p);
    await p.goto(`${server.url}demo.html`, { waitUntil: "load" });
    assert.equal(await p.locator("spyre-playground").count(), 2);
    await p.waitForFunction(
      () => {
        const el = document.querySelector("spyre-playground");
        const f = el?.shadowRoot?.querySelector("iframe");
        return f?.contentDocument?.body?.dataset.state === "ready";
      },
      undefined,
      { timeout: 60_000 },
    );
    const frame = p
      .frames()
      .find((f) => f.url().includes("embed=1") && f.url().includes("view=ring"));
    assert.ok(frame, "no embedded playground frame");
    assert.ok(await frame.locator("#ring-canvas").isVisible(), "the embedded ring is not shown");
    assert.ok(!(await frame.locator(".topbar").isVisible()), "the embed shows the page's header");
    assert.equal(await frame.locator("#error-banner").isVisible(), false);
    assert.match(await frame.locator("#results").textContent(), /cycles/);
    await p.waitForTimeout(300);
    await shot(p, "demo.png");
    await p.close();
  });

  it(
    "says what was wrong with a bad link and what it shows instead",
    { timeout: TEST_TIMEOUT },
    async () => {
      const first = await page.evaluate(() =>
        document.querySelector("#example-picker option:not([disabled])")?.getAttribute("value"),
      );
      assert.ok(first, "no example in the picker");
      const cases = [
        [`${server.url}#v=2&s=garbage`, /the state is not/],
        [
          `${server.url}#v=1&example=no_such_example`,
          /there is no example named "no_such_example"/,
        ],
        [`${server.url}#v=7&example=${first}`, /its version "7" is not one this page reads/],
        [await linkWith("{example: matmul"), /the state is not JSON/],
        [
          await linkWith(JSON.stringify({ example: first, t: "soon", core: [1] })),
          /field t has an unusable value "soon"; field core has an unusable value \[1\]/,
        ],
      ];
      for (const [url, why] of cases) {
        const p = await openPage(url);
        const text = await waitForNotice(p, /^This link's state could not be read \(/, 30_000);
        assert.match(text, why, url);
        assert.match(text, new RegExp(`showing the example ${first} instead\\.$`), url);
        assert.equal(await p.locator("#error-banner").isVisible(), false, url);
        assert.match((await p.locator("#results").textContent()) ?? "", /cycles/, url);
        await p.close();
      }
      // A good link has no notice.
      const p = await openPage(`${server.url}#v=1&example=${first}&view=ring`);
      assert.equal(await p.locator("#notice").isVisible(), false);
      await p.close();
    },
  );

  it(
    "stops a link's run at its time budget and shows an example instead",
    { timeout: TEST_TIMEOUT },
    async () => {
      const first = await page.evaluate(() =>
        document.querySelector("#example-picker option:not([disabled])")?.getAttribute("value"),
      );
      const started = Date.now();
      const p = await openPage(
        await linkWith(JSON.stringify({ file: { name: "spin.mlir", text: HEAVY_KTIR } })),
      );
      const text = await waitForNotice(p, /^This link's run was stopped/);
      assert.match(text, /did not finish within the 10 s time budget for links and was stopped/);
      assert.match(text, new RegExp(`showing the example ${first} instead\\.$`));
      assert.ok(Date.now() - started < 60_000, "the budget did not stop the run in time");
      await p.waitForFunction(() => document.body.dataset.state === "ready");
      assert.match((await p.locator("#results").textContent()) ?? "", /cycles/);
      assert.equal(await p.locator("#cancel-run").isVisible(), false);
      await p.close();
    },
  );

  it(
    "ends a link to an empty loop of 10^12 iterations instead of hanging",
    { timeout: TEST_TIMEOUT },
    async () => {
      const p = await openPage(
        await linkWith(JSON.stringify({ file: { name: "spin.mlir", text: EMPTY_LOOP_KTIR } })),
      );
      // Either the step limit ends it (an error naming the limit) or the time budget does.
      await p.waitForFunction(
        () =>
          /This link's run was stopped/.test(
            document.getElementById("notice-text")?.textContent ?? "",
          ) ||
          /more than \d+ operations/.test(
            document.getElementById("error-message")?.textContent ?? "",
          ),
        undefined,
        { timeout: 60_000 },
      );
      const stopped = /time budget/.test(await noticeText(p));
      const limit = /more than \d+ operations/.test(
        (await p.locator("#error-message").textContent()) ?? "",
      );
      assert.ok(stopped || limit);
      await p.close();
    },
  );

  it(
    "shows a run's progress and cancels it mid-run, staying usable",
    { timeout: TEST_TIMEOUT },
    async () => {
      const p = await openPage(server.url);
      const before = await runs(p);
      await p.locator("#file-input").setInputFiles({
        name: "spin.mlir",
        mimeType: "text/plain",
        buffer: Buffer.from(HEAVY_KTIR),
      });
      await p.locator("#cancel-run").waitFor({ state: "visible" });
      await p.waitForFunction(
        () => /^executing \d+%/.test(document.getElementById("status")?.textContent ?? ""),
        undefined,
        { timeout: 30_000 },
      );
      await p.locator("#cancel-run").click();
      const text = await waitForNotice(p, /^The run was cancelled; the worker was restarted/);
      assert.match(text, /Showing the example /);
      assert.match((await p.locator("#status").textContent()) ?? "", /cancelled/);
      assert.equal(await p.locator("#cancel-run").isVisible(), false);
      // Mid-compile: the full 8B model at seq 2048 compiles for seconds before it runs.
      await p.locator("#notice-dismiss").click();
      assert.equal(await p.locator("#notice").isVisible(), false);
      await p
        .locator("#file-input")
        .setInputFiles(join(ROOT, "examples", "graphs", "full", "llama3_8b_seq2048.json"));
      await p.locator("#cancel-run").waitFor({ state: "visible" });
      assert.match((await p.locator("#status").textContent()) ?? "", /^compiling…/);
      // The compile reports its pass and how far it has come.
      await p.waitForFunction(
        () =>
          /^compiling… pass [a-z-]+ · \d+%/.test(
            document.getElementById("status")?.textContent ?? "",
          ),
        undefined,
        { timeout: 30_000 },
      );
      await p.locator("#cancel-run").click();
      await waitForNotice(p, /^The run was cancelled; the worker was restarted/);
      assert.equal(await p.locator("#cancel-run").isVisible(), false);
      // The fresh worker runs the next request.
      const second = await p.evaluate(
        () =>
          document
            .querySelectorAll("#example-picker option:not([disabled])")[1]
            ?.getAttribute("value") ?? null,
      );
      assert.ok(second);
      await p.locator("#example-picker").selectOption(second);
      await waitForRunAfter(before, p);
      assert.equal(await runs(p), before + 1);
      assert.equal(await p.locator("#error-banner").isVisible(), false);
      assert.match((await p.locator("#status").textContent()) ?? "", /simulated in \d+ ms/);
      await p.close();
    },
  );

  it(
    "refuses javascript: and data: addresses in <spyre-playground src>",
    { timeout: TEST_TIMEOUT },
    async () => {
      const p = await context.newPage();
      p.setDefaultTimeout(STEP_TIMEOUT);
      watch(p);
      await p.goto(`${server.url}demo.html`, { waitUntil: "load" });
      for (const src of [
        "javascript:alert(1)",
        " JavaScript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
      ]) {
        const got = await p.evaluate(async (src) => {
          const el = document.createElement("spyre-playground");
          el.setAttribute("src", src);
          document.body.append(el);
          const f = el.shadowRoot?.querySelector("iframe");
          await new Promise((ok) => setTimeout(ok, 200));
          return {
            src: f?.getAttribute("src") ?? null,
            text: f?.contentDocument?.body?.textContent ?? "",
            height: f?.getBoundingClientRect().height ?? 0,
          };
        }, src);
        assert.equal(got.src, null, src);
        assert.match(
          got.text,
          /src must be an http\(s\) or relative address, not (javascript|data):/,
        );
        assert.ok(got.height > 0, "the message is not visible");
      }
      await p.close();
    },
  );

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
