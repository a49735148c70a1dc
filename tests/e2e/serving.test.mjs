// End-to-end: serving on the page (issue 18). The compile cache in IndexedDB: a reload
// compiles from the cache and shows the same KTIR, a corrupted entry is rebuilt, Options
// clears the cache. The Serving tab on paged_decode: the batch, the block tables, the
// pages each core reads and the padding waste, and a padding rule set in Options that
// reaches the link. At 1440x900 and 390x844; screenshots go to test-artifacts/screenshots/.
// Run `bash scripts/build-web.sh` first.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  afterRun,
  linkState,
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

/** The KTIR in the editor (the whole document, not only the lines drawn). */
const editorText = (p) =>
  p.evaluate(() =>
    document.querySelector("#ktir-editor .cm-content").cmTile.root.view.state.doc.toString(),
  );

/** Waits for the page's first run to finish. */
const firstRun = (p) =>
  p.waitForFunction(() => Number(document.body.dataset.runs ?? 0) > 0, undefined, {
    timeout: 2 * T,
  });

/** What the compile cache did in the last run ("hit", "miss", "rebuilt", ...). */
const cacheOutcome = (p) => p.evaluate(() => document.body.dataset.compileCache ?? null);

/** Flips one byte near the end of every stored artifact (inside its body). */
const corruptCache = (p) =>
  p.evaluate(
    () =>
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

      assert.equal(await corruptCache(p), 1);
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
});
