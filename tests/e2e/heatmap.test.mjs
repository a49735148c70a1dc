// End-to-end: the ring's per-core utilisation heatmap and the timeline's DRAM and link lanes
// (issue 19), at 1440x900 and 390x844, with screenshots in test-artifacts/screenshots/.
// Run `bash scripts/build-web.sh` first.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { SIZES, T, newPage, ready, server, shot, suite } from "./harness.mjs";

/** Opens `url` at `size` and waits until the page has run its example. */
async function open(url, size) {
  const p = await newPage(size);
  await p.goto(url, { waitUntil: "load" });
  assert.equal(await ready(p), "ready");
  return p;
}

/** A cheap fingerprint of a canvas's pixels. */
const pixels = (p, id) =>
  p.evaluate((id) => {
    const c = document.getElementById(id);
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let h = 0;
    for (let i = 0; i < d.length; i += 7) h = (h * 31 + d[i]) | 0;
    return h;
  }, id);

const percents = (s) => (s ?? "").split(",").filter(Boolean).map(Number);

describe("utilisation heatmap and shared timeline lanes", { timeout: 6 * T }, () => {
  suite();

  for (const size of SIZES) {
    const dims = `${size.width}x${size.height}`;

    it(`colours the ring's cores by their busy fraction at ${dims}`, { timeout: T }, async () => {
      const p = await open(`${server.url}#view=ring`, size);
      const legend = p.getByTestId("heat-legend");
      assert.ok(await legend.isVisible(), "no heatmap legend");
      const gradient = await p
        .locator("#heat-bar")
        .evaluate((b) => getComputedStyle(b).backgroundImage);
      assert.match(gradient, /linear-gradient/);
      // One figure per core, each a percentage, and some core busy but none busy always
      // while others idle (a plausible spread).
      const cores = Number(
        /(\d+) cores/.exec(await p.locator("#machine-meta").innerText())?.[1] ?? 0,
      );
      const compute = percents(await legend.getAttribute("data-compute"));
      const dma = percents(await legend.getAttribute("data-dma"));
      assert.equal(compute.length, cores, `${compute.length} figures for ${cores} cores`);
      assert.equal(dma.length, cores);
      for (const x of [...compute, ...dma]) assert.ok(x >= 0 && x <= 100, `${x}%`);
      assert.ok(
        compute.some((x) => x > 0),
        `no core was busy: ${compute}`,
      );
      assert.ok(
        dma.some((x) => x > 0),
        `no DMA engine was busy: ${dma}`,
      );

      // Paused, the heatmap alone changes the picture when it is switched off and on.
      await p.getByTestId("play-toggle").click();
      await p.waitForTimeout(150);
      const on = await pixels(p, "ring-canvas");
      await p.getByTestId("heat-metric").selectOption("off");
      await p.waitForTimeout(150);
      assert.notEqual(await pixels(p, "ring-canvas"), on, "the heatmap draws nothing");
      await p.getByTestId("heat-metric").selectOption("compute");
      await p.waitForTimeout(150);
      assert.equal(await pixels(p, "ring-canvas"), on, "the heatmap is not the same twice");

      // Hover (or tap) a core: its figures appear.
      const readout = p.getByTestId("heat-readout");
      const box = await p.locator("#ring-canvas").boundingBox();
      let core = "";
      for (let dy = -40; dy <= 40 && !core; dy += 4) {
        for (let dx = 0; dx < 70 && !core; dx += 4) {
          // The cores at three o'clock: the ring fits the canvas's shorter side.
          const x = box.x + box.width / 2 + Math.min(box.width, box.height) / 2 - 20 - dx;
          const y = box.y + box.height / 2 + dy;
          if (size.touch) await p.touchscreen.tap(x, y);
          else await p.mouse.move(x, y);
          core = (await readout.getAttribute("data-core")) ?? "";
        }
      }
      assert.ok(core, "no core showed its figures");
      const text = await readout.innerText();
      const m = /core (\d+): compute (\d+)% \(PT (\d+)%, SFP (\d+)%\) · DMA (\d+)%/.exec(text);
      assert.ok(m, text);
      assert.equal(Number(m[2]), compute[Number(m[1])], "the readout and the figures disagree");
      assert.ok(Number(m[2]) >= Math.max(Number(m[3]), Number(m[4])), text);
      await shot(p, `ring-heatmap-${dims}.png`);
      const [sw, iw] = await p.evaluate(() => [document.scrollingElement.scrollWidth, innerWidth]);
      assert.ok(sw <= iw, `the page is ${sw} px wide in a ${iw} px window`);
      await p.context().close();
    });

    it(`draws DRAM and ring-link lanes on the timeline at ${dims}`, { timeout: T }, async () => {
      const p = await open(`${server.url}#view=timeline`, size);
      const legend = await p.getByTestId("tl-legend").innerText();
      for (const what of ["DRAM", "ring links", "DMA", "PT", "SFP"])
        assert.ok(legend.includes(what), `the legend lacks ${what}: ${legend}`);
      const canvas = p.locator("#timeline-canvas");
      const lanes = (await canvas.getAttribute("data-lanes")).split(",").map((l) => {
        const [label, util, events] = l.split(":");
        return { label, util: Number(util), events: Number(events) };
      });
      assert.equal(lanes[0].label, "DRAM");
      assert.ok(lanes[0].events > 0, "no DRAM transfers");
      assert.ok(lanes[0].util > 0 && lanes[0].util <= 100, `DRAM ${lanes[0].util}%`);
      const links = lanes.slice(1);
      assert.ok(links.length >= 1 && links.length <= 4, `${links.length} link lanes`);
      for (const l of links) {
        assert.match(l.label, /^s\d+→\d+$/);
        assert.ok(l.events > 0 && l.util > 0 && l.util <= 100, JSON.stringify(l));
      }

      // The DRAM lane's bandwidth profile is drawn in its colour, below the cores.
      const box = await canvas.boundingBox();
      const laneH = Math.round(Math.max(14, Math.min(22, (box.height - 20) * 0.05)));
      const dramTop = box.height - lanes.length * laneH;
      const drawn = await p.evaluate(
        ([top, h]) => {
          const c = document.getElementById("timeline-canvas");
          const s = c.width / c.getBoundingClientRect().width;
          const col = getComputedStyle(document.documentElement)
            .getPropertyValue("--ring-memory-border")
            .trim();
          const rgb = [1, 3, 5].map((i) => parseInt(col.slice(i, i + 2), 16));
          const d = c
            .getContext("2d")
            .getImageData(
              Math.round(58 * s),
              Math.round(top * s),
              c.width - Math.round(58 * s),
              Math.round(h * s),
            ).data;
          let n = 0;
          for (let i = 0; i < d.length; i += 4)
            if (
              Math.abs(d[i] - rgb[0]) + Math.abs(d[i + 1] - rgb[1]) + Math.abs(d[i + 2] - rgb[2]) <
              12
            )
              n++;
          return n;
        },
        [dramTop, laneH],
      );
      assert.ok(drawn > 20, `the DRAM lane drew ${drawn} pixels of bandwidth`);

      // Pointing at the DRAM lane reads its bandwidth use, or a transfer's details on a tap.
      const y = box.y + dramTop + laneH / 2;
      if (size.touch) {
        const details = p.getByTestId("bar-details");
        let found = false;
        for (let x = box.x + 62; x < box.x + box.width - 4 && !found; x += 6) {
          await p.touchscreen.tap(x, y);
          found = await details.isVisible();
        }
        assert.ok(found, "no DRAM transfer showed its details");
        assert.match(await details.innerText(), /bytes/);
        // Close the pinned box so the screenshot shows the lanes.
        await details.locator(".event-box-head button").last().tap();
        await details.waitFor({ state: "hidden" });
      } else {
        let hover = "";
        for (let x = box.x + 62; x < box.x + box.width - 4 && !/DRAM: [1-9]/.test(hover); x += 6) {
          await p.mouse.move(x, y);
          hover = await p.getByTestId("tl-hover").innerText();
        }
        assert.match(hover, /DRAM: \d+% of [\d.]+ B\/cycle at cycle [\d,]+ · \d+% over the run/);
        await p.mouse.move(box.x + box.width / 2, y);
      }
      await shot(p, `timeline-lanes-${dims}.png`);
      await p.context().close();
    });
  }
});
