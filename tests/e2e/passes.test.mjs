// End-to-end: pass snapshots that diff (issue 19): every snapshot up to scratchpad is the
// whole program state, diffed entity by entity with a summary in words; SDSC and KTIR side
// by side; large models never "too large to diff". At 1440x900 and 390x844; screenshots go
// to test-artifacts/screenshots/. Run `bash scripts/build-web.sh` first.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { SIZES, T, newPage, noSidewaysScroll, ready, server, shot, suite } from "./harness.mjs";

/** The largest gallery model. */
const LARGE = "llama3_8b_layer";

const text = async (p, id) => (await p.locator(`#${id}`).textContent()) ?? "";

/** Selects a pass in the list (on a phone, through the pass drawer). */
async function pickPass(p, name, phone) {
  if (phone) await p.getByTestId("passes-drawer").click();
  await p.locator(`#pass-list [data-pass="${name}"]`).click();
  if (phone) await p.keyboard.press("Escape");
  await p.waitForFunction(
    (name) => document.querySelector('#pass-list [aria-selected="true"]')?.dataset.pass === name,
    name,
  );
}

describe("pass snapshots that diff", { timeout: 10 * T }, () => {
  suite();

  for (const size of SIZES) {
    const phone = size.touch;
    it(
      `diffs each pass's program state and summarises it at ${size.width}x${size.height}`,
      { timeout: 2 * T },
      async () => {
        const p = await newPage(size);
        await p.goto(`${server.url}#v=2&example=matmul_add&view=passes&pass=layout`, {
          waitUntil: "load",
        });
        await ready(p);
        await p.locator("#view-passes").waitFor({ state: "visible" });
        // Every snapshot before SDSC is the whole state: layout's still lists the graph.
        const snap = await text(p, "snapshot");
        assert.match(snap, /^program matmul_add: /);
        assert.match(snap, /\nnode matmul: MatMul\(A, B\) -> AB\n/);
        assert.match(snap, /\ntensor B: f16\[100,130\] \(initializer\)\n {2}layout: /);
        // The diff shows only what layout added, and says it in words.
        assert.match(await text(p, "diff-meta"), /^\+\d+ −0$/);
        assert.match(await text(p, "diff-summary"), /5 tensors laid out/);
        const diff = await text(p, "diff");
        assert.match(diff, /\+ {3}layout: f16\[100,130\]/);
        assert.doesNotMatch(diff, /^[+-] node /m, "unchanged graph nodes are not in the diff");
        await noSidewaysScroll(p, `passes at ${size.width}`);
        await shot(p, `passes-state-diff-${size.width}x${size.height}.png`);
        await pickPass(p, "work-division", phone);
        assert.match(await text(p, "diff-summary"), /2 ops divided, 2 split over up to 32 cores/);
        await pickPass(p, "scratchpad", phone);
        assert.match(await text(p, "diff-summary"), /5 tensors placed in DRAM/);
        // No pass of this model is a no-op: none is hidden (fusion makes the add the
        // matmul's epilogue).
        assert.equal(await p.getByTestId("show-unchanged").isVisible(), false);
        assert.equal(await p.locator("#pass-list [data-pass]:visible").count(), 8);
        await pickPass(p, "fusion", phone);
        // The bias add runs as the matmul's epilogue.
        assert.match(await text(p, "snapshot"), /fused matmul\+add_bias \[ops 0\.\.1\]/);
        assert.match(await text(p, "snapshot"), /matmul epilogue/);
        // SDSC and KTIR side by side.
        await pickPass(p, "ktir", phone);
        assert.equal(await text(p, "diff-title"), "SDSC beside KTIR");
        assert.match(await text(p, "diff"), /"ops"/);
        assert.match(await text(p, "snapshot"), /func\.func @/);
        await shot(p, `passes-ir-beside-${size.width}x${size.height}.png`);
        await p.context().close();
      },
    );
  }

  it("diffs a large model per entity, never too large", { timeout: 3 * T }, async () => {
    const p = await newPage(SIZES[0]);
    await p.goto(`${server.url}#v=2&example=${LARGE}&view=passes&pass=scratchpad`, {
      waitUntil: "load",
    });
    await ready(p);
    await p.locator("#view-passes").waitFor({ state: "visible" });
    for (const pass of ["decompose", "layout", "work-division", "scratchpad"]) {
      await pickPass(p, pass, false);
      const meta = await text(p, "diff-meta");
      assert.match(meta, /^\+\d+ −\d+$/, `${pass}: ${meta}`);
      assert.ok((await text(p, "diff-summary")).length > 0, `${pass} has no summary`);
    }
    await pickPass(p, "sdsc", false);
    assert.equal(await text(p, "diff-title"), "KTIR beside SDSC");
    await shot(p, "passes-large-1440x900.png");
    await p.context().close();
  });
});
