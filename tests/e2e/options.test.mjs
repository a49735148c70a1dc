// End-to-end: the compiler and simulator options on the page (issue 19): every CLI flag as a
// control, carried in the link and restored on reload, at 1440x900 and 390x844. Screenshots
// go to test-artifacts/screenshots/. Run `bash scripts/build-web.sh` first.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  SIZES,
  T,
  afterRun,
  linkState,
  newPage,
  noSidewaysScroll,
  ready,
  server,
  shot,
  suite,
} from "./harness.mjs";

/** A gallery example whose kernels stream tiles through time loops (double-buffered). */
const STREAMED = "llama3_8b_layer";
/** A small gallery example. */
const EXAMPLE = "gelu_mlp";

const cycles = async (p) => (await p.getByTestId("total-cycles").innerText()).split(" cycles")[0];

describe("options on the page", { timeout: 10 * T }, () => {
  suite();

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
