// End-to-end: the page as a teaching instrument (issue 19): the small fixes, Share with opened
// files and session files, invalid files in the editor, phones (390x844) as well as desktops
// (1440x900), and the details of tiles and timeline bars. Screenshots of every view at both
// sizes go to test-artifacts/screenshots/. Run `bash scripts/build-web.sh` first.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  DIST,
  ROOT,
  SIZES,
  T,
  afterRun,
  newPage,
  noSidewaysScroll,
  open,
  serveStatic,
  server,
  shot,
  showView,
  suite,
} from "./harness.mjs";

const VIEWS = ["graph", "passes", "ir", "ring", "timeline", "cores", "roofline"];

/** The KTIR in the editor's document, once the editor holds the view's text (it goes in
 * when the editor is measured on screen). */
async function editorText(p) {
  await p.locator("#ktir-editor:not([data-pending])").waitFor({ state: "attached" });
  return p.evaluate(() =>
    document.querySelector("#ktir-editor .cm-content").cmTile.root.view.state.doc.toString(),
  );
}

describe("the page as a teaching instrument", { timeout: 30 * T }, () => {
  suite({ need: ["index.html", "spyre-playground.js"] });

  // The narrowest phones too (360 px), besides the two sizes every other test uses.
  for (const size of [...SIZES, { name: "small", width: 360, height: 740, touch: true }]) {
    it(
      `shows every view at ${size.width}x${size.height} without sideways scroll`,
      { timeout: T },
      async () => {
        const p = await open(server.url, size);
        for (const v of VIEWS) {
          await showView(p, v);
          await p.waitForTimeout(150);
          await noSidewaysScroll(p, `${v} at ${size.width}`);
          await shot(p, `${v}-${size.width}x${size.height}.png`);
        }
        // The ring and the timeline fill the width they have.
        for (const [v, canvas] of [
          ["ring", "#ring-canvas"],
          ["timeline", "#timeline-canvas"],
        ]) {
          await showView(p, v);
          const box = await p.locator(canvas).boundingBox();
          assert.ok(box && box.height > 150, `${v} canvas is ${box?.height} px high`);
          const want = size.width < 760 ? size.width - 4 : size.width * 0.5;
          assert.ok(box.width >= want, `${v} canvas is ${box.width} px wide at ${size.width}`);
        }
        await p.context().close();
      },
    );
  }

  it(
    "opens the pass list and side panel as drawers on a phone, and taps pick cores",
    { timeout: T },
    async () => {
      const p = await open(`${server.url}#view=ring`, SIZES[1]);
      const passList = p.locator("#pass-list");
      const inView = async (loc) => {
        const b = await loc.boundingBox();
        return b !== null && b.x >= 0 && b.x + b.width <= 390 + 1;
      };
      assert.equal(await inView(passList), false, "the pass list is on screen before it is opened");
      await p.getByTestId("passes-drawer").tap();
      await p.waitForTimeout(300);
      assert.ok(await inView(passList), "the passes drawer did not open");
      assert.equal(await p.getByTestId("passes-drawer").getAttribute("aria-expanded"), "true");
      await shot(p, "drawer-passes-390x844.png");
      await p.locator("#drawer-backdrop").tap({ position: { x: 370, y: 400 } });
      await p.waitForTimeout(300);
      assert.equal(await inView(passList), false, "the passes drawer did not close");
      // Tap a core: its details fill the side panel, which opens as a drawer.
      await p.getByTestId("play-toggle").tap();
      const box = await p.locator("#ring-canvas").boundingBox();
      // The cores at three o'clock sit near the canvas's right edge: tap along it until one
      // is picked.
      let picked = false;
      for (let dy = -40; dy <= 40 && !picked; dy += 4) {
        for (let dx = 0; dx < 70 && !picked; dx += 4) {
          const x = box.x + box.width - 20 - dx;
          const y = box.y + box.height / 2 + dy;
          await p.touchscreen.tap(x, y);
          picked = await p.evaluate(() =>
            /core \d+/i.test(document.getElementById("core-details").textContent),
          );
        }
      }
      assert.ok(picked, "no tap on the ring picked a core");
      await p.getByTestId("details-drawer").tap();
      await p.waitForTimeout(300);
      assert.ok(await inView(p.locator("#core-details")), "the details drawer did not open");
      await shot(p, "drawer-details-390x844.png");
      await p.context().close();
    },
  );

  it("pinches and drags the timeline with touch", { timeout: T }, async () => {
    const p = await open(`${server.url}#view=timeline`, SIZES[1]);
    const canvas = p.locator("#timeline-canvas");
    await p.locator("#tl-fit").tap();
    const before = await canvas.getAttribute("data-window");
    const span = (w) =>
      w
        .split("-")
        .map(Number)
        .reduce((a, b) => b - a);
    // Two fingers moving apart (touch pointer events, as a phone sends them).
    await canvas.evaluate((c) => {
      const r = c.getBoundingClientRect();
      const y = r.top + 100;
      const fire = (type, id, x) =>
        c.dispatchEvent(
          new PointerEvent(type, {
            pointerId: id,
            pointerType: "touch",
            clientX: r.left + x,
            clientY: y,
            bubbles: true,
            isPrimary: id === 1,
          }),
        );
      fire("pointerdown", 1, 150);
      fire("pointerdown", 2, 200);
      fire("pointermove", 2, 300);
      fire("pointerup", 2, 300);
      fire("pointerup", 1, 150);
    });
    const zoomed = await canvas.getAttribute("data-window");
    assert.ok(span(zoomed) < span(before ?? "0-1") / 1.5, `pinch: ${before} -> ${zoomed}`);
    // One finger drags the zoomed window sideways.
    const box = await canvas.boundingBox();
    await canvas.evaluate(
      (c, [x0, y]) => {
        for (const [type, x] of [
          ["pointerdown", x0],
          ["pointermove", x0 - 60],
          ["pointermove", x0 - 120],
          ["pointerup", x0 - 120],
        ])
          c.dispatchEvent(
            new PointerEvent(type, {
              pointerId: 3,
              pointerType: "touch",
              clientX: x,
              clientY: y,
              bubbles: true,
            }),
          );
      },
      [box.x + 250, box.y + 100],
    );
    const panned = await canvas.getAttribute("data-window");
    assert.notEqual(panned, zoomed, "a drag did not pan");
    await p.context().close();
  });

  it("fixes the small bugs of issue 19", { timeout: 2 * T }, async () => {
    const p = await open(server.url, SIZES[0]);
    // One time format: the results and the timeline summary show the same run time.
    const total = await p.getByTestId("total-cycles").innerText();
    const time = /\(([\d.e+-]+ (?:ns|µs|ms|s)) at/.exec(total)?.[1];
    assert.ok(time, total);
    await showView(p, "timeline");
    assert.ok((await p.getByTestId("util-summary").innerText()).includes(`(${time})`));
    // Results say which tolerance passed.
    const tol = await p.getByTestId("tolerance").first().innerText();
    assert.match(tol, /(≤ atol|≤ rtol|atol .* \+ rtol).*: ok$/);
    // The status is never cut off: it wraps and carries its text as a title.
    const status = p.getByTestId("status");
    assert.equal(await status.getAttribute("title"), await status.innerText());
    assert.notEqual(await status.evaluate((s) => getComputedStyle(s).whiteSpace), "nowrap");
    // Accessibility: tabs control panels; canvases and graph nodes have labels.
    for (const tab of await p.locator('#view-tabs [role="tab"]').all()) {
      const panel = await tab.getAttribute("aria-controls");
      assert.ok(panel, "a tab without aria-controls");
      assert.equal(await p.locator(`#${panel}`).getAttribute("role"), "tabpanel");
      assert.equal(
        await p.locator(`#${panel}`).getAttribute("aria-labelledby"),
        await tab.getAttribute("id"),
      );
    }
    for (const c of await p.locator("canvas").all()) assert.ok(await c.getAttribute("aria-label"));
    await showView(p, "graph");
    const nodes = p.locator("#graph-scroll [data-node]");
    assert.ok((await nodes.count()) > 0);
    for (const n of await nodes.all()) assert.ok(await n.getAttribute("aria-label"));

    // Undo after a failed Run takes one press.
    await showView(p, "ir");
    const original = await editorText(p);
    await p.locator("#ktir-editor .cm-content").click();
    await p.keyboard.press("Control+End");
    await p.keyboard.type(" bogus");
    const edited = await editorText(p);
    assert.notEqual(edited, original);
    await afterRun(p, () => p.locator("#ktir-run").click());
    assert.ok(await p.locator("#error-banner").isVisible(), "the bad KTIR ran");
    assert.equal(await editorText(p), edited, "a failed Run lost the edit");
    await p.locator("#ktir-editor .cm-content").click();
    await p.keyboard.press("Control+z");
    assert.equal(await editorText(p), original, "one undo did not take the edit back");
    await p.context().close();
  });

  it("keeps the small fixes of issue 19 on a phone", { timeout: T }, async () => {
    const p = await open(server.url, SIZES[1]);
    // The same run time in the results and the timeline summary (read as text: on a phone
    // the results sit in a drawer).
    const total = (await p.getByTestId("total-cycles").textContent()) ?? "";
    const time = /\(([\d.e+-]+ (?:ns|µs|ms|s)) at/.exec(total)?.[1];
    assert.ok(time, total);
    await showView(p, "timeline");
    assert.ok(((await p.getByTestId("util-summary").textContent()) ?? "").includes(`(${time})`));
    assert.match(
      (await p.getByTestId("tolerance").first().textContent()) ?? "",
      /(≤ atol|≤ rtol|atol .* \+ rtol).*: ok$/,
    );
    // The status wraps inside the window.
    const status = p.getByTestId("status");
    assert.equal(await status.getAttribute("title"), await status.textContent());
    const box = await status.boundingBox();
    assert.ok(box && box.x >= 0 && box.x + box.width <= SIZES[1].width, "the status runs off");
    // Tabs control labelled panels; canvases and graph nodes have labels.
    for (const tab of await p.locator('#view-tabs [role="tab"]').all()) {
      const panel = await tab.getAttribute("aria-controls");
      assert.equal(await p.locator(`#${panel}`).getAttribute("role"), "tabpanel");
    }
    for (const c of await p.locator("canvas").all()) assert.ok(await c.getAttribute("aria-label"));
    await showView(p, "graph");
    const nodes = p.locator("#graph-scroll [data-node]");
    await nodes.first().waitFor();
    for (const n of await nodes.all()) assert.ok(await n.getAttribute("aria-label"));
    await noSidewaysScroll(p, "small fixes on a phone");
    await shot(p, "small-fixes-390x844.png");
    await p.context().close();
  });

  it("labels a KTIR module's loaded-only buffers as graph inputs", { timeout: T }, async () => {
    const p = await open(server.url, SIZES[0]);
    const text = readFileSync(join(ROOT, "tests/ktir/valid/matmul_k_loop.mlir"), "utf8");
    await afterRun(p, () =>
      p.getByTestId("file-input").setInputFiles({
        name: "matmul_k_loop.mlir",
        mimeType: "text/plain",
        buffer: Buffer.from(text),
      }),
    );
    await showView(p, "graph");
    const kinds = await p.evaluate(() =>
      [...document.querySelectorAll("#graph-scroll [data-node]")].map((g) =>
        g.getAttribute("class"),
      ),
    );
    assert.equal(kinds.filter((k) => /\binput\b/.test(k)).length, 2, kinds.join());
    assert.equal(kinds.filter((k) => /\boutput\b/.test(k)).length, 1, kinds.join());
    assert.match(await p.locator("#graph-meta").innerText(), /2 inputs · 1 outputs/);
    await p.context().close();
  });

  it("keeps the Cores view's labels inside their boxes", { timeout: T }, async () => {
    const p = await open(server.url, SIZES[0]);
    const examples = await p.$$eval("#example-picker option:not([disabled])", (o) =>
      o.map((x) => x.value),
    );
    const name = examples.find((e) => /gqa_attention$|attention/.test(e)) ?? examples[0];
    await afterRun(p, () => p.getByTestId("example-picker").selectOption(name));
    await showView(p, "cores");
    // The scratchpad chart is drawn a task after the grids.
    await p.locator("#scratchpad svg").waitFor();
    const cellsOut = await p.evaluate(
      () =>
        [...document.querySelectorAll(".wd-cell > span")].filter((s) => {
          const c = s.parentElement.getBoundingClientRect();
          const r = s.getBoundingClientRect();
          return r.left < c.left - 0.5 || r.right > c.right + 0.5;
        }).length,
    );
    assert.equal(cellsOut, 0, "slice coordinates overflow their cells");
    const labelsOut = await p.evaluate(() => {
      const svg = document.querySelector("#scratchpad svg");
      if (!svg) return 0;
      const w = svg.viewBox.baseVal.width;
      return [...svg.querySelectorAll("text")].filter((t) => {
        const b = t.getBBox();
        return b.x + b.width > w + 1;
      }).length;
    });
    assert.equal(labelsOut, 0, "scratchpad labels run off the chart");
    await shot(p, `cores-${name}-1440x900.png`);
    await p.context().close();
  });

  it(
    "ships spyre-playground.js: the demo snippet works in a page outside the project",
    { timeout: T },
    async () => {
      // The demo page names the script the build writes.
      const demoHtml = readFileSync(join(DIST, "demo.html"), "utf8");
      assert.match(demoHtml, /src="[^"]*spyre-playground\.js"/);
      // A page on another origin loads the script from the playground's server.
      const dir = mkdtempSync(join(tmpdir(), "spyre-embed-"));
      writeFileSync(
        join(dir, "index.html"),
        `<!doctype html><html><head><link rel="icon" href="data:,"></head><body><h1>Docs</h1>
<script type="module" src="${server.url}spyre-playground.js"></script>
<spyre-playground example="matmul_add" view="timeline" height="420px"></spyre-playground>
</body></html>`,
      );
      const other = await serveStatic(dir);
      try {
        const p = await newPage(SIZES[0]);
        await p.goto(other.url, { waitUntil: "load" });
        await p.waitForFunction(
          () => {
            const f = document
              .querySelector("spyre-playground")
              ?.shadowRoot?.querySelector("iframe");
            return typeof f?.src === "string" && f.src.includes("embed=1");
          },
          undefined,
          { timeout: 30_000 },
        );
        const src = await p.evaluate(
          () => document.querySelector("spyre-playground").shadowRoot.querySelector("iframe").src,
        );
        assert.ok(src.startsWith(`${server.url}index.html#`), src);
        const frame = await (async () => {
          for (let i = 0; i < 100; i++) {
            const f = p.frames().find((f) => f.url().startsWith(server.url));
            if (f) return f;
            await p.waitForTimeout(100);
          }
          return null;
        })();
        assert.ok(frame, "the embedded playground did not load");
        await frame.waitForFunction(() => document.body.dataset.state === "ready", undefined, {
          timeout: 60_000,
        });
        // The embedded timeline shows its controls and its summary.
        assert.ok(await frame.locator("#tl-zoom-in").isVisible(), "no zoom controls");
        assert.ok(await frame.locator("#tl-legend").isVisible(), "no legend");
        assert.ok(await frame.getByTestId("bottleneck").isVisible(), "no summary");
        await p.waitForTimeout(300);
        await shot(p, "embed-outside-1440x900.png");
        await p.context().close();
      } finally {
        await other.close();
      }
    },
  );

  it("shares an opened .onnx file in the link", { timeout: T }, async () => {
    const p = await open(server.url, SIZES[0]);
    const bytes = readFileSync(join(ROOT, "tests/graph/onnx/mlp_opset13.onnx"));
    await afterRun(p, () =>
      p.getByTestId("file-input").setInputFiles({
        name: "mlp_opset13.onnx",
        mimeType: "application/octet-stream",
        buffer: bytes,
      }),
    );
    assert.equal(await p.locator("#error-banner").isVisible(), false);
    await p.locator("#share").click();
    await p.waitForFunction(() => /link/.test(document.getElementById("status").textContent));
    const url = p.url();
    await p.context().close();
    const q = await open(url, SIZES[0]);
    assert.equal(await q.getByTestId("source-name").innerText(), "mlp_opset13.onnx");
    assert.equal(await q.locator("#notice").isVisible(), false);
    assert.match(await q.locator("#results").innerText(), /cycles/);
    await q.context().close();
  });

  it(
    "offers a session file for a file too large for a link, and reopens it",
    { timeout: T },
    async () => {
      const p = await open(server.url, SIZES[0]);
      // A graph padded past the link limit (64 KiB) with whitespace JSON ignores.
      const graph = readFileSync(join(ROOT, "examples/graphs/matmul_add.json"), "utf8");
      const big = graph.replace(/\}\s*$/, `${" ".repeat(70 * 1024)}}\n`);
      await afterRun(p, () =>
        p.getByTestId("file-input").setInputFiles({
          name: "big_matmul_add.json",
          mimeType: "application/json",
          buffer: Buffer.from(big),
        }),
      );
      assert.equal(await p.locator("#error-banner").isVisible(), false);
      await showView(p, "cores");
      await p.locator("#share").click();
      const notice = p.getByTestId("notice");
      await notice.waitFor({ state: "visible" });
      assert.match(await notice.innerText(), /too large for a link/);
      await shot(p, "share-too-large-1440x900.png");
      const [download] = await Promise.all([
        p.waitForEvent("download"),
        p.getByTestId("notice-action").click(),
      ]);
      assert.equal(download.suggestedFilename(), "big_matmul_add.spyre-session.json");
      const path = await download.path();
      const session = readFileSync(path);
      await p.context().close();
      // A fresh page opens the session file: the file and the view come back.
      const q = await open(server.url, SIZES[0]);
      await afterRun(q, () =>
        q.getByTestId("file-input").setInputFiles({
          name: "big_matmul_add.spyre-session.json",
          mimeType: "application/json",
          buffer: session,
        }),
      );
      assert.equal(await q.getByTestId("source-name").innerText(), "big_matmul_add.json");
      await q.locator("#view-cores").waitFor({ state: "visible" });
      assert.equal(await q.locator("#error-banner").isVisible(), false);
      await q.context().close();
    },
  );

  it(
    "opens an invalid .mlir file in the editor with its errors marked",
    { timeout: T },
    async () => {
      const p = await open(server.url, SIZES[0]);
      const good = readFileSync(join(ROOT, "tests/ktir/valid/matmul_k_loop.mlir"), "utf8");
      const bad = good.replace("ktdp.load %at", "ktdp.lod %at");
      await afterRun(p, () =>
        p.getByTestId("file-input").setInputFiles({
          name: "broken.mlir",
          mimeType: "text/plain",
          buffer: Buffer.from(bad),
        }),
      );
      assert.ok(await p.locator("#error-banner").isVisible());
      await p.locator("#view-ir").waitFor({ state: "visible" });
      assert.equal(await editorText(p), bad, "the editor does not hold the opened file");
      await p.waitForFunction(
        () => Number(document.getElementById("ktir-diagnostics").dataset.count ?? 0) > 0,
      );
      const badLine = bad.split("\n").findIndex((l) => l.includes("ktdp.lod")) + 1;
      const lines = await p.$$eval("#ktir-diagnostics li", (li) =>
        li.map((l) => Number(l.dataset.line)),
      );
      assert.ok(lines.includes(badLine), `diagnostics on ${lines}, not ${badLine}`);
      await shot(p, "invalid-mlir-1440x900.png");
      // Fixed in place, it runs as that file.
      await p.evaluate(
        ([from, to]) => {
          const view = document.querySelector("#ktir-editor .cm-content").cmTile.root.view;
          const doc = view.state.doc.toString();
          const at = doc.indexOf(from);
          view.dispatch({ changes: { from: at, to: at + from.length, insert: to } });
        },
        ["ktdp.lod %at", "ktdp.load %at"],
      );
      await afterRun(p, () => p.locator("#ktir-run").click());
      assert.equal(await p.locator("#error-banner").isVisible(), false);
      assert.match(await p.getByTestId("source-name").innerText(), /broken\.mlir/);
      await p.context().close();
    },
  );

  for (const size of SIZES) {
    it(
      `explains timeline bars and ring tiles at ${size.width}x${size.height}`,
      { timeout: T },
      async () => {
        const p = await open(`${server.url}#view=timeline`, size);
        assert.ok(await p.getByTestId("tl-legend").isVisible(), "no timeline legend");
        const legend = await p.getByTestId("tl-legend").innerText();
        for (const u of ["DMA", "PT", "SFP"]) assert.ok(legend.includes(u), legend);
        // Find a DMA bar: the first core's DMA lane, scanned left to right.
        const c = await p.locator("#timeline-canvas").boundingBox();
        const box = p.getByTestId("bar-details");
        let found = false;
        for (let x = c.x + 62; x < c.x + c.width - 4 && !found; x += 6) {
          const y = c.y + 20 + 3;
          if (size.touch) await p.touchscreen.tap(x, y);
          else await p.mouse.click(x, y);
          found = await box.isVisible();
        }
        assert.ok(found, "no bar showed its details");
        const text = await box.innerText();
        for (const what of ["tensor slice", "bytes", "from → to", "kernel", "KTIR line", "time"])
          assert.ok(text.includes(what), `the details lack ${what}: ${text}`);
        await shot(p, `timeline-details-${size.width}x${size.height}.png`);
        // "Show in KTIR" opens the event's line.
        await p.getByTestId("bar-details-ktir").click();
        await p.locator("#view-ir").waitFor({ state: "visible" });

        // Ring tiles: pause with transfers in flight and tap or click a tile.
        await showView(p, "ring");
        const r = await p.locator("#ring-canvas").boundingBox();
        const tileBox = p.getByTestId("tile-details");
        let hit = false;
        // Step time until tiles are in flight, then scan the ring's lanes for one.
        const total = Number(await p.getByTestId("time-scrubber").getAttribute("max"));
        for (const frac of [0.1, 0.25, 0.4, 0.6, 0.8]) {
          if (hit) break;
          await p.getByTestId("time-scrubber").evaluate(
            (s, v) => {
              s.value = String(v);
              s.dispatchEvent(new Event("input", { bubbles: true }));
            },
            Math.round(total * frac),
          );
          await p.waitForTimeout(100);
          const points = await p.evaluate(() => {
            const c = document.getElementById("ring-canvas");
            const ctx = c.getContext("2d");
            const img = ctx.getImageData(0, 0, c.width, c.height).data;
            const load = getComputedStyle(document.documentElement)
              .getPropertyValue("--ring-load")
              .trim();
            const rgb = [1, 3, 5].map((i) => parseInt(load.slice(i, i + 2), 16));
            const out = [];
            const s = c.width / c.getBoundingClientRect().width;
            for (let y = 0; y < c.height && out.length < 8; y += 2)
              for (let x = 0; x < c.width && out.length < 8; x += 2) {
                const i = (y * c.width + x) * 4;
                if (
                  Math.abs(img[i] - rgb[0]) +
                    Math.abs(img[i + 1] - rgb[1]) +
                    Math.abs(img[i + 2] - rgb[2]) <
                  12
                )
                  out.push([x / s, y / s]);
              }
            return out;
          });
          for (const [x, y] of points) {
            if (size.touch) await p.touchscreen.tap(r.x + x, r.y + y);
            else await p.mouse.click(r.x + x, r.y + y);
            if (await tileBox.isVisible()) {
              hit = true;
              break;
            }
          }
        }
        assert.ok(hit, "no tile showed its details");
        const tileText = await tileBox.innerText();
        assert.ok(tileText.includes("DMA transfer") && tileText.includes("from → to"), tileText);
        await shot(p, `ring-tile-details-${size.width}x${size.height}.png`);
        await noSidewaysScroll(p, `ring details at ${size.width}`);
        await p.context().close();
      },
    );
  }
});
