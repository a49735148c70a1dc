// End-to-end: compare mode (issue 19): the run on screen beside a second configuration, with
// cycles, the bottleneck, a roofline-dot comparison, aligned timelines and the difference in
// words, kept in the link and restored on reload. At 1440x900 and 390x844; screenshots go to
// test-artifacts/screenshots/. Run `bash scripts/build-web.sh` first.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  SIZES,
  T,
  linkState,
  linkWith,
  newPage,
  noSidewaysScroll,
  ready,
  server,
  shot,
  showView,
  suite,
} from "./harness.mjs";

/** A gallery example whose kernels stream tiles through time loops (double-buffered). */
const STREAMED = "llama3_8b_layer";
/** A small gallery example. */
const SMALL = "matmul_add";

/** Waits for the page to finish a comparison after its `n`th. */
async function comparedAfter(p, n) {
  await p.waitForFunction((n) => Number(document.body.dataset.compares ?? 0) > n, n, {
    timeout: 90_000,
  });
}

const compares = (p) => p.evaluate(() => Number(document.body.dataset.compares ?? 0));

/** The link's state once the page has saved its latest. */
async function savedState(p) {
  await p.waitForFunction(() => Number(document.body.dataset.saved ?? 0) > 0);
  await p.waitForTimeout(400);
  return linkState(p);
}

describe("compare mode", { timeout: 12 * T }, () => {
  suite();

  for (const size of SIZES) {
    const dims = `${size.width}x${size.height}`;
    it(
      `compares double buffering off with the run on screen, and restores it, at ${dims}`,
      { timeout: 4 * T },
      async () => {
        const p = await newPage(size);
        await p.goto(`${server.url}#v=1&example=${STREAMED}`, { waitUntil: "load" });
        assert.equal(await ready(p), "ready");
        await showView(p, "compare");
        await p.getByTestId("cmp-double-buffer").selectOption("off");
        const n = await compares(p);
        await p.getByTestId("cmp-run").click();
        await comparedAfter(p, n);
        const sentence = await p.getByTestId("compare-sentence").innerText();
        assert.match(
          sentence,
          /^double buffering off: [\d.]+% more cycles(; .*)?; DMA no longer overlaps PT in \d+ kernels?(; DMA now overlaps PT in \d+ kernels?)?\.$/,
        );
        // Both runs' figures side by side.
        const table = await p.getByTestId("compare-table").innerText();
        assert.match(table, /on screen\s+double buffering off/);
        const cycles = [...table.matchAll(/^cycles\s+([\d,]+)\s+([\d,]+)$/gm)][0];
        assert.ok(cycles, table);
        const [on, off] = [cycles[1], cycles[2]].map((c) => Number(c.replace(/,/g, "")));
        assert.ok(off > on, `${off} cycles single-buffered against ${on}`);
        assert.match(
          table,
          /bottleneck\s+(memory|compute|communication)\s+(memory|compute|communication)/,
        );
        // One dot per kernel and run on one roofline chart. The two regimes may fuse
        // differently (work division and time cuts depend on double buffering, and fusion
        // on both), so their kernel counts may differ by a few.
        const a = await p.locator(".cmp-dot-a[data-testid]").count();
        const b = await p.locator(".cmp-dot-b[data-testid]").count();
        assert.ok(
          a > 0 && b > 0 && Math.abs(a - b) <= 4,
          `${a} dots on screen, ${b} for the second run`,
        );
        // Both timelines on one axis: the longer run spans it.
        const tl = p.getByTestId("compare-timeline");
        const ends = (await tl.getAttribute("data-ends")).split(",").map(Number);
        assert.deepEqual(ends, [on, off]);
        assert.equal(Number(await tl.getAttribute("data-axis")), Math.max(...ends));
        assert.ok((await p.locator(".cmp-busy.cmp-dma").count()) > 0, "no DMA activity drawn");
        await noSidewaysScroll(p, `compare at ${size.width}`);
        await shot(p, `compare-${dims}.png`);
        // The link carries the comparison; a reload restores it.
        const state = await savedState(p);
        assert.deepEqual(state.compare, { doubleBuffer: false }, JSON.stringify(state));
        await p.reload({ waitUntil: "load" });
        assert.equal(await ready(p), "ready");
        await comparedAfter(p, 0);
        await p.getByTestId("compare-sentence").waitFor({ state: "visible" });
        assert.equal(await p.getByTestId("compare-sentence").innerText(), sentence);
        assert.equal(await p.getByTestId("cmp-double-buffer").inputValue(), "off");
        // Clearing stops comparing and drops it from the link.
        await p.getByTestId("cmp-clear").click();
        await p.getByTestId("compare-sentence").waitFor({ state: "detached" });
        await p.waitForTimeout(400);
        assert.equal((await linkState(p)).compare, undefined);
        await p.context().close();
      },
    );
  }

  it(
    "compares the program as compiled with its KTIR edit, from a link",
    { timeout: 2 * T },
    async () => {
      const p = await newPage(SIZES[0]);
      await p.goto(`${server.url}#v=1&example=${SMALL}&view=passes&pass=ktir`, {
        waitUntil: "load",
      });
      assert.equal(await ready(p), "ready");
      const compiled = (await p.getByTestId("snapshot").textContent()) ?? "";
      assert.match(compiled, /func\.func @/);
      // An edit that changes no operation: both runs take the same cycles.
      const ktir = `${compiled}\n// reviewed\n`;
      await p.goto(
        await linkWith(
          JSON.stringify({ example: SMALL, ktir, view: "compare", compare: { ktirEdit: true } }),
        ),
        { waitUntil: "load" },
      );
      await p.reload({ waitUntil: "load" });
      assert.equal(await ready(p), "ready");
      await comparedAfter(p, 0);
      // Both runs finish before the sentence shows; alongside the full-model tests that
      // can take longer than the default wait.
      await p.getByTestId("compare-sentence").waitFor({ state: "visible", timeout: 90_000 });
      assert.equal(
        await p.getByTestId("compare-sentence").innerText(),
        "the KTIR edit: the same cycles.",
      );
      assert.match(await p.getByTestId("compare-table").innerText(), /as compiled\s+edited/);
      assert.ok(await p.getByTestId("cmp-ktir-edit").isChecked());
      assert.ok(await p.getByTestId("cmp-machine").isDisabled());
      await p.context().close();
    },
  );

  it(
    "compares two machines and says how the bottleneck and cycles move",
    { timeout: 2 * T },
    async () => {
      const p = await newPage(SIZES[0]);
      await p.goto(`${server.url}#v=1&example=${SMALL}&view=compare`, { waitUntil: "load" });
      assert.equal(await ready(p), "ready");
      const machines = await p
        .getByTestId("cmp-machine")
        .locator("option")
        .evaluateAll((os) => os.map((o) => o.getAttribute("value")).filter(Boolean));
      const other = machines.find((m) => m !== "spyre32");
      assert.ok(other, `no second machine among ${machines}`);
      await p.getByTestId("cmp-machine").selectOption(other);
      const n = await compares(p);
      await p.getByTestId("cmp-run").click();
      await comparedAfter(p, n);
      const sentence = await p.getByTestId("compare-sentence").innerText();
      assert.match(sentence, new RegExp(`^machine ${other}: `));
      assert.match(sentence, /cycles/);
      assert.match(
        await p.getByTestId("compare-table").innerText(),
        new RegExp(`machine\\s+spyre32\\s+${other}`),
      );
      assert.equal((await savedState(p)).compare?.machine, other);
      // The roofline draws both machines' roofs, each labelled, inside the chart.
      const chart = p.getByTestId("compare-roofline");
      assert.ok((await chart.getByTestId("cmp-roof-a").count()) > 0, "no roofs of spyre32");
      assert.ok((await chart.getByTestId("cmp-roof-b").count()) > 0, `no roofs of ${other}`);
      assert.equal(await chart.getByTestId("cmp-roof-label-a").textContent(), "spyre32 roofs");
      assert.equal(await chart.getByTestId("cmp-roof-label-b").textContent(), `${other} roofs`);
      const inside = await chart.evaluate((svg) => {
        const [, , w, h] = (svg.getAttribute("viewBox") ?? "").split(" ").map(Number);
        return [...svg.querySelectorAll(".rl-roof")].every(
          (l) =>
            ["y1", "y2"].every((a) => {
              const v = Number(l.getAttribute(a));
              return v >= 0 && v <= h;
            }) && ["x1", "x2"].every((a) => Number(l.getAttribute(a)) <= w),
        );
      });
      assert.ok(inside, "a roof lies outside the chart");
      await chart.scrollIntoViewIfNeeded();
      await shot(p, "compare-machines-1440x900.png");
      await p.context().close();
    },
  );

  it(
    "compares one card with tensor parallelism over two and names the change",
    { timeout: 3 * T },
    async () => {
      const p = await newPage(SIZES[0]);
      await p.goto(`${server.url}#v=1&example=llama_decoder_layer&view=compare`, {
        waitUntil: "load",
      });
      assert.equal(await ready(p), "ready");
      await p.getByTestId("cmp-tp").selectOption("2");
      const n = await compares(p);
      await p.getByTestId("cmp-run").click();
      await comparedAfter(p, n);
      const sentence = await p.getByTestId("compare-sentence").innerText();
      assert.match(sentence, /^TP 2: \d+(\.\d)?% fewer cycles/);
      const table = await p.getByTestId("compare-table").innerText();
      const cycles = [...table.matchAll(/cycles\s+([\d,]+)\s+([\d,]+)/g)][0];
      assert.ok(cycles, table);
      const [one, two] = [cycles[1], cycles[2]].map((x) => Number(x.replaceAll(",", "")));
      assert.ok(two < one, `TP 2 took ${two} cycles against one card's ${one}`);
      assert.equal((await savedState(p)).compare?.tp, 2);
      await shot(p, "compare-tp-1440x900.png");
      await p.context().close();
    },
  );
});
