// End-to-end: the graph view for big models (issue 19, item 5): zoom (buttons, wheel, pinch),
// pan (drag, keys), collapse by block or layer, the minimap, search by node or tensor name,
// and weight details, on a gallery model and on the full 32-layer Llama, at 1440x900 and
// 390x844. Prints (does not assert) the time to first draw and frame times while panning.
// Screenshots go to test-artifacts/screenshots/graphview-*.png. Run
// `bash scripts/build-web.sh` first.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  ROOT,
  SIZES,
  open as openPage,
  runCount,
  server,
  shot as saveShot,
  showView,
  noSidewaysScroll,
  suite,
} from "./harness.mjs";

const T = 600_000;
const FULL = join(ROOT, "examples", "graphs", "full", "llama3_8b_seq128.json");

const open = (size, hash = "") => openPage(`${server.url}${hash}`, size);
const shot = (p, name) => saveShot(p, `graphview-${name}.png`);

/** Runs `fn` and waits (up to `timeout`) for the page to finish a run after it. */
async function afterRun(p, fn, timeout = 60_000) {
  const n = await runCount(p);
  await fn();
  await p.waitForFunction((n) => Number(document.body.dataset.runs ?? 0) > n, n, { timeout });
}

/** The camera, from the world group's transform. */
async function camera(p) {
  const t = await p.locator("#graph-world").getAttribute("transform");
  const m = /translate\(([-\d.e]+),([-\d.e]+)\) scale\(([-\d.e]+)\)/.exec(t ?? "");
  assert.ok(m, `no camera in ${t}`);
  return { tx: Number(m[1]), ty: Number(m[2]), k: Number(m[3]) };
}

/** Resolves after two animation frames, so a scheduled draw has happened. */
const frames = (p) =>
  p.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

async function box(p, sel) {
  const b = await p.locator(sel).boundingBox();
  assert.ok(b, `${sel} has no box`);
  return b;
}

/** Drags from (x, y) by (dx, dy) in `steps`: a mouse, or one finger on a touch screen. */
async function drag(p, size, x, y, dx, dy, steps = 10) {
  if (!size.touch) {
    await p.mouse.move(x, y);
    await p.mouse.down();
    for (let i = 1; i <= steps; i++) await p.mouse.move(x + (dx * i) / steps, y + (dy * i) / steps);
    await p.mouse.up();
    return;
  }
  const cdp = await p.context().newCDPSession(p);
  const at = (i) => [{ x: x + (dx * i) / steps, y: y + (dy * i) / steps, id: 1 }];
  await cdp.send("Input.dispatchTouchEvent", { type: "touchStart", touchPoints: at(0) });
  for (let i = 1; i <= steps; i++)
    await cdp.send("Input.dispatchTouchEvent", { type: "touchMove", touchPoints: at(i) });
  await cdp.send("Input.dispatchTouchEvent", { type: "touchEnd", touchPoints: [] });
  await cdp.detach();
}

/** Two fingers moving apart around (x, y). */
async function pinchOut(p, x, y) {
  const cdp = await p.context().newCDPSession(p);
  const at = (d) => [
    { x: x - d, y, id: 1 },
    { x: x + d, y, id: 2 },
  ];
  await cdp.send("Input.dispatchTouchEvent", { type: "touchStart", touchPoints: at(20) });
  for (let d = 30; d <= 90; d += 10)
    await cdp.send("Input.dispatchTouchEvent", { type: "touchMove", touchPoints: at(d) });
  await cdp.send("Input.dispatchTouchEvent", { type: "touchEnd", touchPoints: [] });
  await cdp.detach();
}

/** Frame intervals (ms) recorded while `fn` runs. */
async function frameTimes(p, fn) {
  await p.evaluate(() => {
    const w = /** @type {any} */ (window);
    w.__frames = [];
    let last = performance.now();
    const tick = (t) => {
      w.__frames.push(t - last);
      last = t;
      if (w.__frames) w.__raf = requestAnimationFrame(tick);
    };
    w.__raf = requestAnimationFrame(tick);
  });
  await fn();
  return p.evaluate(() => {
    const w = /** @type {any} */ (window);
    cancelAnimationFrame(w.__raf);
    const f = w.__frames.slice(1);
    w.__frames = null;
    const mean = f.reduce((a, b) => a + b, 0) / Math.max(f.length, 1);
    return { frames: f.length, mean: mean.toFixed(1), max: Math.max(...f).toFixed(1) };
  });
}

async function checkLabels(p) {
  for (const id of [
    "graph-zoom-in",
    "graph-zoom-out",
    "graph-fit",
    "graph-collapse",
    "graph-expand",
  ])
    assert.ok(await p.locator(`#${id}`).getAttribute("aria-label"), `#${id} has no label`);
  assert.ok(await p.locator("#graph-minimap").getAttribute("aria-label"));
  assert.ok(await p.locator("#graph-scroll").getAttribute("aria-label"));
  assert.ok(await p.locator("#graph-filter").getAttribute("aria-label"));
  const unlabelled = await p.evaluate(
    () =>
      [
        ...document.querySelectorAll("#graph-scroll [data-node], #graph-scroll [data-group]"),
      ].filter((n) => !n.getAttribute("aria-label")).length,
  );
  assert.equal(unlabelled, 0);
}

/** Opens the details drawer on a phone so the selected node's details show. */
async function showDetails(p, size) {
  if (size.touch) {
    await p.locator("#details-drawer").click();
    await p.locator("#node-details").waitFor({ state: "visible" });
  }
}

async function closeDetails(p, size) {
  if (!size.touch) return;
  await p.keyboard.press("Escape");
  // The drawer slides out (a short transition): wait until no details pane covers the view,
  // or a drag meant for the minimap lands on the sliding pane.
  await p.waitForFunction(() =>
    [...document.querySelectorAll(".split > .details")].every((d) => {
      const r = d.getBoundingClientRect();
      return r.width === 0 || r.left >= window.innerWidth;
    }),
  );
}

describe("the graph view for big models", { timeout: 20 * T }, () => {
  suite();

  for (const size of SIZES) {
    it(
      `zooms, pans, collapses, searches a gallery model (${size.name})`,
      { timeout: T },
      async () => {
        const p = await open(size, "#v=1&example=tiny_two_layer");
        await showView(p, "graph");
        await p.locator("#graph-scroll [data-node^='op:']").first().waitFor();
        await checkLabels(p);
        // One card: nothing is sharded, so the tensor-parallel legend stays out of the way.
        assert.equal(await p.getByTestId("graph-shard-legend").isVisible(), false);
        const view = await box(p, "#graph-scroll");
        const cx = view.x + view.width / 2;
        const cy = view.y + view.height / 2;

        // Zoom: buttons, wheel, and on a touch screen, pinch.
        let c = await camera(p);
        await p.locator("#graph-zoom-in").click();
        await frames(p);
        assert.ok((await camera(p)).k > c.k, "+ did not zoom in");
        c = await camera(p);
        if (size.touch) await pinchOut(p, cx, cy);
        else {
          // As in map-like views, ctrl + wheel zooms.
          await p.mouse.move(cx, cy);
          await p.keyboard.down("Control");
          await p.mouse.wheel(0, -400);
          await p.keyboard.up("Control");
        }
        await frames(p);
        assert.ok((await camera(p)).k > c.k, "pinch or ctrl + wheel did not zoom in");
        if (!size.touch) {
          // A plain wheel pans, never zooms; the view's label says so.
          c = await camera(p);
          await p.mouse.wheel(0, 120);
          await frames(p);
          const wheeled = await camera(p);
          assert.equal(wheeled.k, c.k, "a plain wheel zoomed");
          assert.ok(wheeled.ty < c.ty, `a plain wheel did not pan (${c.ty} -> ${wheeled.ty})`);
          assert.match(
            (await p.locator("#graph-scroll").getAttribute("aria-label")) ?? "",
            /ctrl\/cmd \+ wheel or pinch or \+ and - to zoom/,
          );
          assert.match(await p.getByTestId("graph-hint").innerText(), /wheel or drag: pan/);
        }
        await p.locator("#graph-zoom-out").click();
        await frames(p);

        // Pan: drag, then arrow keys.
        c = await camera(p);
        await drag(p, size, cx, cy, -80, -120);
        await frames(p);
        const dragged = await camera(p);
        assert.ok(Math.abs(dragged.ty - c.ty - -120) < 2, `drag moved ${dragged.ty - c.ty}`);
        await p.locator("#graph-scroll").focus();
        await p.keyboard.press("ArrowDown");
        await frames(p);
        assert.ok((await camera(p)).ty < dragged.ty, "↓ did not pan");
        await shot(p, `gallery-zoom-${size.name}`);
        await noSidewaysScroll(p, "zoomed graph");

        // Collapse by block or layer; a click on a group expands it.
        await p.locator("#graph-collapse").click();
        await p.locator("#graph-scroll [data-node='grp:layer1']").waitFor();
        assert.equal(await p.locator("#graph-scroll [data-node^='op:layer1.']").count(), 0);
        assert.match(
          (await p.locator("#graph-meta").textContent()) ?? "",
          /(\d+) of \1 groups collapsed/,
        );
        await shot(p, `gallery-collapse-${size.name}`);
        await p.locator("#graph-scroll [data-node='grp:layer1']").click();
        await p.locator("#graph-scroll [data-node^='op:layer1.']").first().waitFor();
        assert.equal(await p.locator("#graph-scroll [data-node='grp:layer1']").count(), 0);
        assert.equal(await p.locator("#graph-scroll [data-node='grp:layer0']").count(), 1);
        await checkLabels(p);

        // Search by a weight's name: jumps to its node, expanding its group, and shows it.
        await p.locator("#graph-collapse").click();
        await p.locator("#graph-filter").fill("layer0.attn.wq");
        await p.locator("#graph-filter").press("Enter");
        const sel = p.locator("#graph-scroll .gnode.selected");
        await sel.waitFor();
        assert.equal(await sel.getAttribute("data-node"), "op:layer0.attn.q_proj");
        assert.match(await p.locator("#graph-found").innerText(), /^1\/\d+$/);
        await shot(p, `gallery-search-${size.name}`);
        await showDetails(p, size);
        const weight = p.locator("#node-details [data-weight='layer0.attn.wq']");
        const text = await weight.innerText();
        assert.match(text, /weight layer0\.attn\.wq/);
        assert.match(text, /type\s+f\d+\[\d+×\d+\]/);
        assert.match(text, /first\s+-?\d/);
        assert.match(text, /min\s+-?\d[\s\S]*max\s+-?\d[\s\S]*mean\s+-?\d/);
        await shot(p, `gallery-initializer-${size.name}`);
        await closeDetails(p, size);

        // The minimap: a press centres the view there; dragging follows.
        await p.locator("#graph-fit").click();
        await p.locator("#graph-zoom-in").click();
        await p.locator("#graph-zoom-in").click();
        await frames(p);
        const mm = await box(p, "#graph-minimap");
        const before = await p.locator("#graph-minimap").getAttribute("data-view");
        c = await camera(p);
        await drag(p, size, mm.x + mm.width / 2, mm.y + 6, 0, mm.height - 12, 6);
        await frames(p);
        assert.notEqual((await camera(p)).ty, c.ty, "the minimap did not pan");
        assert.notEqual(await p.locator("#graph-minimap").getAttribute("data-view"), before);
        await shot(p, `gallery-minimap-${size.name}`);
        await noSidewaysScroll(p, "graph with the minimap");
        await p.context().close();
      },
    );

    it(`keeps the full 32-layer model responsive (${size.name})`, { timeout: T }, async () => {
      const p = await open(size);
      // Too large to run with numbers: timing-only, so no weight values are held.
      await p.getByTestId("run-options-summary").click();
      const timing = p.getByTestId("opt-timing-only");
      await timing.waitFor({ state: "visible" });
      await afterRun(p, () => timing.check());
      // On a phone the open form covers its own summary: close it as a script would.
      await p.getByTestId("run-options-summary").evaluate((s) => s.click());
      await showView(p, "graph");
      await afterRun(p, () => p.locator("#file-input").setInputFiles(FULL), 480_000);
      await p.locator("#graph-scroll [data-node='grp:layer0']").waitFor();
      const firstDraw = await p.locator("#graph-scroll").getAttribute("data-first-draw-ms");
      const meta = await p.locator("#graph-meta").textContent();
      assert.match(meta ?? "", /1193 nodes · .* (\d+) of \1 groups collapsed/);
      await checkLabels(p);
      const view = await box(p, "#graph-scroll");
      const cx = view.x + view.width / 2;
      const cy = view.y + view.height / 2;
      const panCollapsed = await frameTimes(p, () => drag(p, size, cx, cy, 30, -300, 40));
      await shot(p, `full-collapse-${size.name}`);

      // Every layer open: still only what is near the viewport is in the DOM.
      const t0 = Date.now();
      await p.locator("#graph-expand").click();
      await p.locator("#graph-scroll [data-node^='op:embed.']").first().waitFor();
      await frames(p);
      const expandMs = Date.now() - t0;
      const drawn = Number(await p.locator("#graph-scroll").getAttribute("data-drawn"));
      assert.ok(drawn > 0 && drawn < 1193, `${drawn} nodes in the DOM`);
      const layoutMs = await p.locator("#graph-scroll").getAttribute("data-layout-ms");
      const panExpanded = await frameTimes(p, () => drag(p, size, cx, cy, -40, -400, 40));
      await p.locator("#graph-fit").click();
      await frames(p);
      const panFitted = await frameTimes(p, () => drag(p, size, cx, cy, 20, 60, 30));
      const zoomed = await frameTimes(p, async () => {
        for (let i = 0; i < 5; i++) await p.locator("#graph-zoom-in").click();
      });
      console.log(
        `graph view, llama3_8b_seq128 (1193 nodes), ${size.name}: first draw ${firstDraw} ms; ` +
          `frames while panning collapsed ${JSON.stringify(panCollapsed)}; expand all ${expandMs} ms ` +
          `(layout ${layoutMs} ms, ${drawn} nodes drawn); panning expanded ${JSON.stringify(panExpanded)}; ` +
          `panning all in view ${JSON.stringify(panFitted)}; zooming ${JSON.stringify(zoomed)}`,
      );

      // Search a weight of layer 17 with every group collapsed: its group opens.
      await p.locator("#graph-collapse").click();
      await p.waitForFunction(() =>
        /(\d+) of \1 groups collapsed/.test(
          document.getElementById("graph-meta")?.textContent ?? "",
        ),
      );
      await p.locator("#graph-filter").fill("layer17.mlp.w_down");
      await p.locator("#graph-filter").press("Enter");
      const sel = p.locator("#graph-scroll .gnode.selected");
      await sel.waitFor();
      assert.equal(await sel.getAttribute("data-node"), "op:layer17.mlp.down_proj");
      assert.equal(await p.locator("#graph-scroll [data-node='grp:layer17']").count(), 0);
      const [folded, groups] = /(\d+) of (\d+) groups collapsed/
        .exec((await p.locator("#graph-meta").textContent()) ?? "")
        .slice(1)
        .map(Number);
      assert.equal(folded, groups - 1, "only layer17's group opened");
      await shot(p, `full-search-${size.name}`);
      await showDetails(p, size);
      const w = await p.locator("#node-details [data-weight='layer17.mlp.w_down']").innerText();
      assert.match(w, /type\s+f16\[14336×4096\]/);
      assert.match(w, /values not held/);
      await shot(p, `full-initializer-${size.name}`);
      await closeDetails(p, size);

      // The minimap pans across the whole model.
      const mm = await box(p, "#graph-minimap");
      const c = await camera(p);
      await drag(p, size, mm.x + mm.width / 2, mm.y + mm.height - 4, 0, -(mm.height - 8), 6);
      await frames(p);
      assert.notEqual((await camera(p)).ty, c.ty, "the minimap did not pan");
      await shot(p, `full-minimap-${size.name}`);
      await noSidewaysScroll(p, "full model graph");
      await p.context().close();
    });
  }
});
