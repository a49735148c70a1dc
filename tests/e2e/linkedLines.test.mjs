// End-to-end: linked lines in the Passes view (issue 19): pointing at an entity's line links
// it in the diff and in the previous and next pass; in the SDSC | KTIR side-by-side view a
// kernel's KTIR function and its SDSC entry highlight each other, both ways. At 1440x900 and
// 390x844; screenshots go to test-artifacts/screenshots/. Run `bash scripts/build-web.sh` first.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { SIZES, T, newPage, noSidewaysScroll, ready, server, shot, suite } from "./harness.mjs";

/** Selects a pass in the list (on a phone, through the pass drawer). */
async function pickPass(p, name, phone) {
  if (phone) await p.getByTestId("passes-drawer").click();
  await p.locator(`#pass-list [data-pass="${name}"]`).click();
  if (phone) {
    await p.keyboard.press("Escape");
    // The drawer slides out (a short transition): wait until it no longer covers the view.
    await p.waitForFunction(
      () => (document.querySelector(".pass-pane")?.getBoundingClientRect().right ?? 0) <= 0,
    );
  }
  await p.waitForFunction(
    (name) => document.querySelector('#pass-list [aria-selected="true"]')?.dataset.pass === name,
    name,
  );
}

/** Where line `line` (1-based) of a `pre` is on the page, scrolled into view first. */
async function linePoint(p, selector, line) {
  return p.evaluate(
    ([selector, line]) => {
      const pre = document.querySelector(selector);
      const cs = getComputedStyle(pre);
      const lh = parseFloat(cs.lineHeight);
      const pad = parseFloat(cs.paddingTop);
      // Bring the line into the middle of its scroller.
      let s = pre.parentElement;
      while (s && s.scrollHeight <= s.clientHeight) s = s.parentElement;
      const before = pre.getBoundingClientRect().top;
      if (s) {
        const box = s.getBoundingClientRect();
        s.scrollTop += before + pad + (line - 0.5) * lh - (box.top + box.height / 2);
      }
      const r = pre.getBoundingClientRect();
      return { x: r.left + Math.min(60, r.width / 2), y: r.top + pad + (line - 0.5) * lh };
    },
    [selector, line],
  );
}

/** Clicks (or taps) line `line` of a `pre`. */
async function pointAt(p, selector, line, touch) {
  const { x, y } = await linePoint(p, selector, line);
  if (touch) await p.touchscreen.tap(x, y);
  else await p.mouse.click(x, y);
}

/** The 1-based line of `pre` whose text starts with `prefix` (after its indent). */
const lineOf = (p, selector, prefix) =>
  p.evaluate(
    ([selector, prefix]) =>
      document
        .querySelector(selector)
        .textContent.split("\n")
        .findIndex((l) => l.trimStart().startsWith(prefix)) + 1,
    [selector, prefix],
  );

/** The bands drawn in a `pre`, as "from-to". */
const bands = (p, selector) =>
  p
    .locator(`${selector} .line-band`)
    .evaluateAll((bs) => bs.map((b) => `${b.dataset.from}-${b.dataset.to}`));

describe("linked lines in the Passes view", { timeout: 8 * T }, () => {
  suite();

  for (const size of SIZES) {
    const phone = size.touch;
    const dims = `${size.width}x${size.height}`;
    it(
      `links an entity across passes, and SDSC with KTIR, at ${dims}`,
      { timeout: 2 * T },
      async () => {
        const p = await newPage(size);
        await p.goto(`${server.url}#v=2&example=matmul_add&view=passes&pass=layout`, {
          waitUntil: "load",
        });
        assert.equal(await ready(p), "ready");
        await p.locator("#view-passes").waitFor({ state: "visible" });
        // Click the line of tensor B in layout's snapshot.
        const at = await lineOf(p, "#snapshot", "tensor B:");
        assert.ok(at > 0, "no tensor B in the snapshot");
        await pointAt(p, "#snapshot", at, phone);
        const snapshot = p.getByTestId("snapshot");
        assert.equal(await snapshot.getAttribute("data-linked"), "tensor B");
        const [band] = await bands(p, "#snapshot");
        assert.match(band ?? "", new RegExp(`^${at}-\\d+$`));
        // Its rows in the diff, and its lines in the passes before and after.
        assert.ok(
          (await p.locator("#diff .dl.linked").count()) > 0,
          "the diff rows are not linked",
        );
        const linked = p.getByTestId("linked-entity");
        await linked.waitFor({ state: "visible" });
        assert.match(await p.getByTestId("linked-prev").innerText(), /decompose/);
        assert.match(await p.getByTestId("linked-next").innerText(), /work-division/);
        assert.match(
          await p.getByTestId("linked-prev-lines").innerText(),
          /^tensor B: f16\[100,130\] \(initializer\)$/,
        );
        assert.match(
          await p.getByTestId("linked-next-lines").innerText(),
          /^tensor B: .*\n {2}layout: /,
        );
        // Both buttons show without scrolling the box or the page (a phone has little room).
        const box = await linked.boundingBox();
        for (const id of ["linked-prev", "linked-next"]) {
          const b = await p.getByTestId(id).boundingBox();
          assert.ok(box && b, `${id} has no box`);
          assert.ok(
            b.y >= box.y && b.y + b.height <= box.y + box.height + 0.5,
            `${id} needs scrolling to reach (${JSON.stringify(b)} in ${JSON.stringify(box)})`,
          );
          assert.ok(b.y + b.height <= size.height, `${id} is below the window`);
        }
        await noSidewaysScroll(p, `linked lines at ${size.width}`);
        await shot(p, `passes-linked-${dims}.png`);
        // Going to the next pass keeps the entity linked, at its line there.
        await p.getByTestId("linked-next").click();
        await p.waitForFunction(
          () =>
            document.querySelector('#pass-list [aria-selected="true"]')?.dataset.pass ===
            "work-division",
        );
        assert.equal(await snapshot.getAttribute("data-linked"), "tensor B");
        const there = await lineOf(p, "#snapshot", "tensor B:");
        assert.match((await bands(p, "#snapshot"))[0] ?? "", new RegExp(`^${there}-\\d+$`));
        assert.match(await p.getByTestId("linked-prev").innerText(), /layout/);
        if (!phone) {
          // Hovering another entity links it while the pointer is there; leaving restores.
          const op = await lineOf(p, "#snapshot", "op matmul:");
          const { x, y } = await linePoint(p, "#snapshot", op);
          await p.mouse.move(x, y);
          await p.waitForFunction(
            () => document.getElementById("snapshot").dataset.linked === "op matmul",
          );
          await p.mouse.move(5, 5);
          await p.waitForFunction(
            () => document.getElementById("snapshot").dataset.linked === "tensor B",
          );
        }

        // SDSC beside KTIR: a kernel's function lines and its SDSC entry, both ways.
        await pickPass(p, "ktir", phone);
        const fn = await lineOf(p, "#snapshot", "func.func @");
        assert.ok(fn > 0, "no KTIR function");
        await pointAt(p, "#snapshot", fn + 1, phone);
        assert.match(await snapshot.getAttribute("data-linked"), /^kernel /);
        const [ktirBand] = await bands(p, "#snapshot");
        const [sdscBand] = await bands(p, '[data-testid="beside"]');
        assert.ok(ktirBand && sdscBand, `bands: KTIR ${ktirBand}, SDSC ${sdscBand}`);
        assert.equal(Number(ktirBand.split("-")[0]), fn);
        await shot(p, `passes-ir-linked-${dims}.png`);
        const kernel = await snapshot.getAttribute("data-linked");
        // The other way: a line inside another op's SDSC entry links that op's kernel.
        await pointAt(p, "#snapshot", 1, phone); // outside every kernel: unlinks
        const sdscFrom = Number(sdscBand.split("-")[0]);
        await pointAt(p, '[data-testid="beside"]', sdscFrom + 1, phone);
        assert.equal(await snapshot.getAttribute("data-linked"), kernel);
        assert.deepEqual(await bands(p, '[data-testid="beside"]'), [sdscBand]);
        assert.deepEqual(await bands(p, "#snapshot"), [ktirBand]);
        await p.context().close();
      },
    );
  }
});
