// End-to-end: several cards on the page (issue 17): TP 2 picked in the options on the small
// Llama layer, the System tab, the host and card-link lanes, the overhead figures, the shard
// colours and the tensor-parallel pass, and the link restoring TP 2, at 1440x900 and 390x844.
// Screenshots go to test-artifacts/screenshots/. Run `bash scripts/build-web.sh` first.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  afterRun,
  linkState,
  noSidewaysScroll,
  open,
  ready,
  server,
  shot,
  showView,
  SIZES,
  suite,
  T,
} from "./harness.mjs";

/** The small Llama layer the CLI tests shard (8 heads, 2 key/value heads). */
const SMALL_LLAMA = "llama_decoder_layer";

describe("several cards on the page", { timeout: 10 * T }, () => {
  suite();

  for (const size of SIZES) {
    it(
      `runs the small Llama layer at TP 2 and shows the cards, lanes and overheads at ${size.width}x${size.height}`,
      { timeout: 3 * T },
      async () => {
        const p = await open(`${server.url}#v=1&example=${SMALL_LLAMA}`, size);
        // The one-card run first, so the TP run is the next one.
        await p.waitForFunction(() => Number(document.body.dataset.runs ?? 0) > 0, undefined, {
          timeout: 2 * T,
        });
        await p.getByTestId("run-options-summary").click();
        const tp = p.getByTestId("opt-tp");
        await tp.waitFor({ state: "visible" });
        assert.equal(await p.getByTestId("opt-system").isDisabled(), true);
        await afterRun(p, () => tp.selectOption("2"));
        assert.equal(await p.getByTestId("opt-flags").innerText(), "--tp 2");
        await p.keyboard.press("Escape");
        await p.getByTestId("tp-cycles").waitFor({ timeout: 2 * T });
        // The results name the numbers, the collective share and both overheads.
        assert.match(
          await p.getByTestId("tp-cycles").innerText(),
          /TP 2 on .*matches the TP-1 reference/,
        );
        assert.match(
          await p.getByTestId("tp-collective-share").innerText(),
          /collectives .*% of the time/,
        );
        assert.match(
          await p.getByTestId("tp-overhead-per-kernel").innerText(),
          /runtime overhead, launch per kernel: [\d.]+% \(\d+ launches\)/,
        );
        assert.match(
          await p.getByTestId("tp-overhead-per-block").innerText(),
          /runtime overhead, launch per block: [\d.]+% \(1 launch\)/,
        );
        // The System tab: two cards on the default switch, their links, figures and traffic.
        await showView(p, "system");
        const heading = p.getByTestId("system-heading");
        await heading.waitFor({ state: "visible" });
        assert.match(await heading.innerText(), /TP 2 uses 2/);
        assert.equal(await p.locator(".sys-card.used").count(), 2);
        assert.ok((await p.locator(".sys-card.used .sys-core").count()) >= 64, "core rings");
        const links = await p.getByTestId("system-links").innerText();
        assert.match(links, /assumed/);
        assert.match(links, /public/);
        assert.ok((await p.locator(".sys-link.card.busy").count()) >= 2, "busy card links");
        await noSidewaysScroll(p, `system view at ${size.width}`);
        await shot(p, `multicard-system-${size.width}x${size.height}.png`);
        // The timeline: host lanes in both regimes and a lane per busy card-link direction.
        await showView(p, "timeline");
        const lanes = p.getByTestId("tp-lanes");
        await lanes.waitFor({ state: "visible" });
        const bars = async (lane) =>
          Number(await p.locator(`[data-lane="${lane}"]`).getAttribute("data-bars"));
        const perKernel = await bars("host-per-kernel");
        const perBlock = await bars("host-per-block");
        assert.ok(perKernel > perBlock && perBlock === 1, `${perKernel} vs ${perBlock} launches`);
        assert.ok((await p.locator('[data-lanes="cards"] [data-lane^="link-"]').count()) >= 2);
        assert.match(await lanes.innerText(), /card link: collective transfers/);
        assert.match(await lanes.innerText(), /host: launch calls/);
        await noSidewaysScroll(p, `timeline at ${size.width}`);
        await shot(p, `multicard-timeline-${size.width}x${size.height}.png`);
        // The graph colours nodes by shard; the passes list has the tensor-parallel pass.
        await showView(p, "graph");
        await p.getByTestId("graph-shard-legend").waitFor({ state: "visible" });
        // Only nodes near the viewport are drawn; the view states the whole graph's counts.
        const shards = Object.fromEntries(
          ((await p.locator("#graph-scroll").getAttribute("data-shards")) ?? "")
            .split(" ")
            .filter(Boolean)
            .map((kv) => [kv.split(":")[0], Number(kv.split(":")[1])]),
        );
        assert.ok((shards.column ?? 0) >= 5, JSON.stringify(shards));
        assert.equal(shards.row, 2, JSON.stringify(shards));
        assert.ok((await p.locator(".gnode[data-shard]").count()) > 0, "no drawn node has a shard");
        await showView(p, "passes");
        // On a phone the pass list is a drawer: open it, then tap the pass as a reader would.
        const pass = p.locator('[data-pass="tensor-parallel"]');
        if (size.touch) {
          await p.locator("#passes-drawer").tap();
          await pass.tap();
        } else await pass.click();
        await p.waitForFunction(() =>
          (document.querySelector("#diff")?.textContent ?? "").includes("shard:"),
        );
        await noSidewaysScroll(p, `passes at ${size.width}`);
        await shot(p, `multicard-passes-${size.width}x${size.height}.png`);
        // The link restores TP 2.
        await p.waitForFunction(() => location.hash.includes("s="));
        await p.waitForTimeout(400);
        const state = await linkState(p);
        assert.equal(state.tp, 2, JSON.stringify(state));
        await p.reload({ waitUntil: "load" });
        await ready(p);
        await p.waitForFunction(() => Number(document.body.dataset.runs ?? 0) > 0);
        await p.getByTestId("tp-cycles").waitFor({ timeout: 2 * T });
        await p.getByTestId("run-options-summary").click();
        assert.equal(await p.getByTestId("opt-tp").inputValue(), "2");
        await p.context().close();
      },
    );
  }
});
