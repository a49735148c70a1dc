// End-to-end: serving on the page (issue 18). The compile cache in IndexedDB: a reload
// compiles from the cache and shows the same KTIR, a corrupted entry (the artifact or the pass
// snapshots stored apart from it) is rebuilt, Options clears the cache; the 32-layer model's
// cold and warm starts are printed, the warm run the same as the cold one. The Serving tab on
// paged_decode: the batch, the block tables, the pages each core reads and the padding waste,
// and a padding rule set in Options that reaches the link; a mixed step opened from a file,
// its decoding and prefilling sequences told apart. At 1440x900 and 390x844; screenshots go to test-artifacts/screenshots/.
// Run `bash scripts/build-web.sh` first.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  afterRun,
  linkState,
  linkWith,
  ROOT,
  noSidewaysScroll,
  open,
  ready,
  server,
  settled,
  shot,
  showView,
  SIZES,
  suite,
  T,
} from "./harness.mjs";

const FULL = join(ROOT, "examples", "graphs", "full", "llama3_8b_seq128.json");
const MIXED = join(ROOT, "examples", "graphs", "serving", "mixed_batch.json");

/** The KTIR in the editor (the whole document, not only the lines drawn), once the editor
 * holds the view's text (it goes in when the editor is measured on screen). */
async function editorText(p) {
  // The IR view gets a run's text when shown (a view left for another may still be the
  // link's when the page reloads).
  if (await p.locator("#view-ir").isHidden()) await showView(p, "ir");
  await p.locator("#ktir-editor:not([data-pending])").waitFor({ state: "attached" });
  return p.evaluate(() =>
    document.querySelector("#ktir-editor .cm-content").cmTile.root.view.state.doc.toString(),
  );
}

/** Waits for the page's first run to finish. */
const firstRun = (p) =>
  p.waitForFunction(() => Number(document.body.dataset.runs ?? 0) > 0, undefined, {
    timeout: 2 * T,
  });

/** What the compile cache did in the last run ("hit", "miss", "rebuilt", ...). */
const cacheOutcome = (p) => p.evaluate(() => document.body.dataset.compileCache ?? null);

/**
 * Flips one byte near the end of every stored entry whose key ends with `suffix` (inside its
 * body); the count of entries changed.
 */
const corruptCache = (p, suffix = "") =>
  p.evaluate(
    (suffix) =>
      new Promise((resolve, reject) => {
        const r = indexedDB.open("spyre-compile-cache", 1);
        r.onerror = () => reject(r.error);
        r.onsuccess = () => {
          const tx = r.result.transaction("artifacts", "readwrite");
          const store = tx.objectStore("artifacts");
          const all = store.getAll();
          let n = 0;
          all.onsuccess = () => {
            for (const e of all.result) {
              if (!e.key.endsWith(suffix)) continue;
              const bytes = new Uint8Array(e.bytes);
              bytes[bytes.length - 2] ^= 0x5a;
              store.put({ ...e, bytes });
              n++;
            }
          };
          tx.oncomplete = () => resolve(n);
          tx.onerror = () => reject(tx.error);
        };
      }),
    suffix,
  );

/** The names of the passes the Passes view lists. */
const passNames = (p) =>
  p.locator("#pass-list [data-pass]").evaluateAll((l) => l.map((e) => e.dataset.pass));

/** Whether the run's pass texts were asked for: null (not yet), "loading", "loaded", "failed". */
const passTexts = (p) => p.evaluate(() => document.body.dataset.passTexts ?? null);

/** Waits until the pass texts asked for have come (or failed). */
const textsCame = (p) =>
  p.waitForFunction(
    () => ["loaded", "failed"].includes(document.body.dataset.passTexts ?? ""),
    undefined,
    { timeout: 4 * T },
  );

/** Shows each listed pass in turn (the hidden ones too): its snapshot's text, and whether
 * the diff beside it is still waiting. A pass's texts are asked for when it is shown: this
 * waits until they came or failed. */
async function everyPassText(p) {
  const out = {};
  for (const name of await passNames(p)) {
    await p.locator(`#pass-list [data-pass="${name}"]`).evaluate((b) => b.click());
    await p.waitForFunction(
      () =>
        document.querySelector("#snapshot")?.dataset.pending === undefined ||
        document.body.dataset.passTexts === "failed",
      undefined,
      { timeout: 4 * T },
    );
    out[name] = await p.evaluate(() => ({
      text: document.querySelector("#snapshot")?.textContent ?? "",
      pending: document.querySelector("#snapshot")?.dataset.pending !== undefined,
      diff: document.querySelector("#diff")?.dataset.mode ?? "",
    }));
  }
  return out;
}

/** The compile time the status line gives, in ms. */
const compileMs = async (p) =>
  Number(
    /compiled \((?:cold|cache hit), (\d+) ms/.exec(await p.getByTestId("status").innerText())?.[1],
  );

describe("serving on the page", { timeout: 12 * T }, () => {
  suite();

  it(
    "compiles a reload from the cache, rebuilds a corrupted entry and clears the cache",
    {
      timeout: 4 * T,
    },
    async () => {
      const p = await open(`${server.url}#v=1&example=matmul_add&view=ir`, SIZES[0]);
      await firstRun(p);
      assert.equal(await cacheOutcome(p), "miss");
      assert.match(await p.getByTestId("status").innerText(), /compiled \(cold, \d+ ms\)/);
      const cold = await editorText(p);
      assert.match(cold, /func\.func/);

      await p.reload({ waitUntil: "load" });
      await ready(p);
      await firstRun(p);
      assert.equal(await cacheOutcome(p), "hit");
      assert.match(await p.getByTestId("status").innerText(), /compiled \(cache hit, \d+ ms\)/);
      assert.equal(await editorText(p), cold, "the cached compile gives the same KTIR");

      const passes = await passNames(p);
      assert.ok(passes.length >= 8, `the Passes view lists the passes (${passes})`);
      // A hit brings the passes without their texts; nothing reads them until a view shows one.
      assert.equal(await passTexts(p), null, "no pass text read before a view shows one");
      await showView(p, "passes");
      await textsCame(p);
      assert.equal(await passTexts(p), "loaded");
      const texts = await everyPassText(p);
      for (const name of passes) {
        const t = texts[name];
        assert.ok(t && !t.pending && t.diff !== "pending", `${name}: its text came (${t?.diff})`);
        assert.ok(t.text.trim().length > 0 && !/loading pass texts/.test(t.text), name);
      }
      assert.match(texts.ktir.text, /func\.func/);
      assert.match(texts.sdsc.text, /"ops"/);
      await showView(p, "ir");

      // The snapshots are stored apart; a corrupted snapshot entry is found when its texts are
      // read, and compiled again, never used.
      assert.equal(await corruptCache(p, ".passes"), 1);
      await p.reload({ waitUntil: "load" });
      await ready(p);
      await firstRun(p);
      assert.equal(await cacheOutcome(p), "hit", "the run itself needs no snapshot text");
      assert.equal(await editorText(p), cold);
      assert.deepEqual(await passNames(p), passes, "the Passes view still lists every pass");
      await showView(p, "passes");
      await textsCame(p);
      assert.equal(await passTexts(p), "loaded");
      assert.match(await p.getByTestId("notice").innerText(), /pass texts were corrupted/);
      const rebuilt = await everyPassText(p);
      for (const name of passes) assert.equal(rebuilt[name]?.text, texts[name]?.text, name);
      await showView(p, "ir");

      assert.equal(await corruptCache(p), 2);
      await p.reload({ waitUntil: "load" });
      await ready(p);
      await firstRun(p);
      assert.equal(await cacheOutcome(p), "rebuilt", "a corrupted entry is never used");
      assert.match(await p.getByTestId("status").innerText(), /compiled \(cold, \d+ ms, stored/);
      assert.equal(await editorText(p), cold);

      await p.reload({ waitUntil: "load" });
      await ready(p);
      await firstRun(p);
      assert.equal(await cacheOutcome(p), "hit", "the rebuilt entry was stored over");

      await p.getByTestId("run-options-summary").click();
      await p.getByTestId("opt-clear-cache").click();
      await p.getByTestId("opt-cache-note").filter({ hasText: "cleared" }).waitFor();
      await p.keyboard.press("Escape");
      await p.reload({ waitUntil: "load" });
      await ready(p);
      await firstRun(p);
      assert.equal(await cacheOutcome(p), "miss");
      await p.context().close();
    },
  );

  it(
    "prints the cold and warm start of a 32-layer model; the warm one gives the same run",
    { timeout: 10 * T },
    async () => {
      // Timing only, so the compile (and its cache) is what the start waits on.
      const url = await linkWith(
        JSON.stringify({ example: "matmul_add", view: "ir", timingOnly: true }),
      );
      const start = async (p) => {
        const n = Number(await p.evaluate(() => document.body.dataset.runs ?? 0));
        const t0 = Date.now();
        await p.locator("#file-input").setInputFiles(FULL);
        await p.waitForFunction((n) => Number(document.body.dataset.runs ?? 0) > n, n, {
          timeout: 8 * T,
        });
        return {
          outcome: await cacheOutcome(p),
          compileMs: await compileMs(p),
          wallMs: Date.now() - t0,
          cycles: await p.getByTestId("total-cycles").first().innerText(),
          ktir: await editorText(p),
        };
      };
      const p = await open(url, SIZES[0]);
      await firstRun(p);
      const cold = await start(p);
      assert.equal(cold.outcome, "miss");
      await showView(p, "cores");
      await p.locator(".wd-cell").first().waitFor({ state: "attached" });
      cold.cells = await p.locator(".wd-cell").count();
      cold.passes = await passNames(p);
      await showView(p, "ir");
      await p.reload({ waitUntil: "load" });
      await ready(p);
      await firstRun(p);
      const warm = await start(p);
      assert.equal(warm.outcome, "hit");
      assert.equal(warm.cycles, cold.cycles, "the warm run takes the cold run's cycles");
      assert.ok(warm.ktir === cold.ktir, "the warm run runs the cold run's KTIR");
      // The views that read pass data work before any text is read: the Cores view draws
      // the work division of the cold run.
      assert.equal(await passTexts(p), null, "no pass text read yet");
      await showView(p, "cores");
      // (The cells are drawn in chunks: their count depends on when it is taken.)
      await p.locator(".wd-cell").first().waitFor({ state: "attached" });
      assert.ok(cold.cells > 0, "the cold Cores view draws the work division");
      assert.deepEqual(await passNames(p), cold.passes, "the Passes view lists every pass");
      // A state pass (not the SDSC, whose 74 MB text blocks the page for seconds when laid
      // out) brings the texts when shown.
      await p.locator('#pass-list [data-pass="layout"]').evaluate((b) => b.click());
      const asked = Date.now();
      await showView(p, "passes");
      await textsCame(p);
      const textsMs = Date.now() - asked;
      assert.equal(await passTexts(p), "loaded");
      await p.locator("#snapshot:not([data-pending])").waitFor({ state: "attached" });
      assert.match((await p.getByTestId("snapshot").textContent()) ?? "", /tensor /);
      console.log(
        `llama3_8b_seq128 timing-only: cold compile ${cold.compileMs} ms (run shown after ` +
          `${cold.wallMs} ms), warm compile ${warm.compileMs} ms (run shown after ` +
          `${warm.wallMs} ms), the warm run's pass texts ${textsMs} ms after the Passes view asked`,
      );
      await shot(p, "serving-warm-1440x900.png");
      await p.context().close();
    },
  );

  for (const size of SIZES) {
    it(
      `shows paged_decode's batch, block tables, page readers and padding at ${size.width}x${size.height}`,
      { timeout: 4 * T },
      async () => {
        const p = await open(`${server.url}#v=1&example=paged_decode`, size);
        await firstRun(p);
        await showView(p, "serving");
        const heading = p.getByTestId("serving-heading");
        await heading.waitFor({ state: "visible" });
        assert.match(
          await heading.innerText(),
          /8 sequences in one decode step, 65 pages of 64 tokens in a cache of 66; 32 cores/,
        );
        assert.equal(await p.locator(".srv-seq").count(), 8);
        assert.deepEqual(
          await p.locator(".srv-seq").evaluateAll((l) => l.map((e) => Number(e.dataset.tokens))),
          [17, 48, 130, 255, 400, 640, 960, 1500],
        );
        assert.equal(await p.locator(".srv-page").count(), 65);
        assert.equal(await p.locator(".srv-core").count(), 32);
        const reads = await p
          .locator(".srv-core")
          .evaluateAll((l) => l.reduce((a, e) => a + Number(e.dataset.reads), 0));
        assert.ok(reads >= 65, `every page is read by some core (${reads} reads)`);
        const padding = await p.getByTestId("serving-padding").innerText();
        assert.match(padding, /public: query 32, KV 256, decode 1 \(decode-only batch\)\s+0\.0%/);
        assert.match(padding, /without the decode exception.*\s+97\.5%/);
        await noSidewaysScroll(p, `serving view at ${size.width}`);
        await shot(p, `serving-${size.width}x${size.height}.png`);

        if (size.width > 1000) {
          // A decode alignment of 64 pads every sequence: waste, and the rule in the link.
          await p.getByTestId("run-options-summary").click();
          const decode = p.getByTestId("opt-decode-align");
          await decode.fill("64");
          await afterRun(p, () => decode.press("Enter").then(() => decode.blur()));
          assert.match(await p.getByTestId("opt-flags").innerText(), /--decode-align 64/);
          await p.keyboard.press("Escape");
          await settled(p).catch(() => {});
          const after = await p.getByTestId("serving-padding").innerText();
          assert.match(after, /decode 64 \(decode-only batch\)\s+[1-9]\d*\.\d%/);
          assert.equal((await linkState(p)).decodeAlign, 64);
        }
        await p.context().close();
      },
    );
  }

  it("shows a mixed batch's decoding and prefilling sequences", { timeout: 4 * T }, async () => {
    const p = await open(`${server.url}#v=1&example=matmul_add`, SIZES[0]);
    await firstRun(p);
    await afterRun(p, () => p.locator("#file-input").setInputFiles(MIXED), 4 * T);
    await showView(p, "serving");
    const heading = p.getByTestId("serving-heading");
    await heading.waitFor({ state: "visible" });
    assert.match(
      await heading.innerText(),
      /6 sequences in one mixed step \(4 decoding, 2 prefilling; 68 new tokens packed\), 44 pages/,
    );
    assert.deepEqual(
      await p.locator(".srv-seq").evaluateAll((l) => l.map((e) => Number(e.dataset.tokens))),
      [33, 300, 700, 1200, 24, 424],
    );
    // Each bar ends with its new tokens: a hairline for a decode token, the whole bar for a
    // prompt's first chunk.
    const widths = await p
      .locator(".srv-seq")
      .evaluateAll((l) =>
        l.map((g) =>
          [".srv-new", ".srv-len"].map((c) => Number(g.querySelector(c).getAttribute("width"))),
        ),
      );
    assert.ok(widths[0][0] < widths[5][0], `a decode token's mark is narrower: ${widths}`);
    assert.equal(widths[4][0], widths[4][1], "a first chunk is all new tokens");
    const padding = await p.getByTestId("serving-padding").innerText();
    assert.match(padding, /public: query 32, KV 256, decode 1\s+84\.9%/);
    await shot(p, "serving-mixed-1440x900.png");
    await p.context().close();
  });
});
