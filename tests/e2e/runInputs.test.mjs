// End-to-end: the Run inputs tab (issues 14 and 15): a .npy per input of a KTIR module or a
// model graph, outputs downloaded as .npy, expected outputs compared, errors on the row they
// concern, and an ONNX model opened together with its external data file.
// Run `bash scripts/build-web.sh` first.

import { before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  ROOT,
  SIZES,
  T,
  newPage,
  problems,
  ready,
  runAfter,
  runCount,
  server,
  suite,
} from "./harness.mjs";

const EXTERNAL = join(ROOT, "tests", "graph", "onnx_external");

/** A KTIR module whose scalar argument %n has no value until the user gives one. */
const SCALE_KTIR = `func.func @scale(%x: index, %y: index, %n: index) attributes {grid = [2]} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %id = ktdp.get_compute_tile_id : index
  %r = arith.muli %id, %c4 : index
  %xv = ktdp.construct_memory_view %x, sizes: [8, 16], strides: [16, 1] {
    coordinate_set = affine_set<(d0, d1) : (d0 >= 0, 7 - d0 >= 0, d1 >= 0, 15 - d1 >= 0)>,
    memory_space = #ktdp.memory_space<global>
  } : memref<8x16xf32>
  %yv = ktdp.construct_memory_view %y, sizes: [8, 16], strides: [16, 1] {
    coordinate_set = affine_set<(d0, d1) : (d0 >= 0, 7 - d0 >= 0, d1 >= 0, 15 - d1 >= 0)>,
    memory_space = #ktdp.memory_space<global>
  } : memref<8x16xf32>
  %xt = ktdp.construct_access_tile %xv[%r, %c0] {
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0, 3 - d0 >= 0, d1 >= 0, 15 - d1 >= 0)>,
    access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<8x16xf32> -> !ktdp.access_tile<4x16xindex>
  %yt = ktdp.construct_access_tile %yv[%r, %c0] {
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0, 3 - d0 >= 0, d1 >= 0, 15 - d1 >= 0)>,
    access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<8x16xf32> -> !ktdp.access_tile<4x16xindex>
  %a = ktdp.load %xt : !ktdp.access_tile<4x16xindex> -> tensor<4x16xf32>
  %b = arith.addf %a, %a : tensor<4x16xf32>
  ktdp.store %b, %yt : tensor<4x16xf32>, !ktdp.access_tile<4x16xindex>
  return
}
`;

/** @type {import("playwright-core").Page} */ let page;

/**
 * A version-1 .npy file: `descr` a numpy dtype ("<f2", "<f4"), every element `value`.
 * The header is padded so the data starts at a multiple of 64 bytes, as numpy writes it.
 */
function npy(descr, shape, value = 0) {
  const dims = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(", ")})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${dims}, }`;
  while ((10 + header.length + 1) % 64 !== 0) header += " ";
  header += "\n";
  const count = shape.reduce((a, b) => a * b, 1);
  const size = descr === "<f2" ? 2 : 4;
  const out = Buffer.alloc(10 + header.length + count * size);
  out.write("\x93NUMPY", 0, "latin1");
  out[6] = 1;
  out[7] = 0;
  out.writeUInt16LE(header.length, 8);
  out.write(header, 10, "latin1");
  const data = 10 + header.length;
  for (let i = 0; i < count; i++) {
    // f16: 1.0 is 0x3c00 and 0.0 is 0; other values are not needed here.
    if (size === 2) out.writeUInt16LE(value === 1 ? 0x3c00 : 0, data + 2 * i);
    else out.writeFloatLE(value, data + 4 * i);
  }
  return out;
}

/** The header of a .npy file (its dtype and shape). */
function npyHeader(bytes) {
  assert.equal(bytes.subarray(0, 6).toString("latin1"), "\x93NUMPY");
  const len = bytes.readUInt16LE(8);
  return bytes.subarray(10, 10 + len).toString("latin1");
}

const runs = (p = page) => runCount(p);

/** Waits for the run after `count` or for the page to report a failure. */
const settle = (count, p = page) => runAfter(p, count);

async function showInputs(p = page) {
  await p.locator('#view-tabs [data-view="inputs"]').click();
  await p.locator("#view-inputs").waitFor({ state: "visible" });
}

async function bannerText(p = page) {
  return (await p.locator("#error-banner").isVisible())
    ? ((await p.locator("#error-message").textContent()) ?? "")
    : "";
}

/** Drops files (name and bytes) on the page, as a multi-file drag from the desktop does. */
async function dropFiles(files, p = page) {
  const payload = files.map((f) => ({ name: f.name, data: f.bytes.toString("base64") }));
  const dt = await p.evaluateHandle((list) => {
    const t = new DataTransfer();
    for (const f of list) {
      const bin = atob(f.data);
      const bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      t.items.add(new File([bytes], f.name));
    }
    return t;
  }, payload);
  await p.dispatchEvent("body", "drop", { dataTransfer: dt });
}

describe("Run inputs", { timeout: 10 * T }, () => {
  suite();

  before(
    async () => {
      page = await newPage(SIZES[0]);
      await page.goto(server.url, { waitUntil: "load" });
      assert.equal(await ready(page), "ready");
    },
    { timeout: T },
  );

  it(
    "runs a KTIR module on a .npy, offers its output as .npy and puts a wrong shape on its row",
    { timeout: T },
    async () => {
      const n = await runs();
      await page.locator("#example-picker").selectOption("add_rows.mlir");
      await settle(n);
      await showInputs();
      const tab = page.locator("#view-inputs");
      // Every buffer, with dtype, shape and role.
      const rowA = tab.getByTestId("input-row-a");
      assert.match(await rowA.innerText(), /a\s+f16\s+64×64/);
      assert.match(await tab.getByTestId("input-row-c").innerText(), /out/);
      assert.match(await tab.innerText(), /left empty keep the seeded random values/);
      // One input given as .npy; the rest stay random.
      await tab.getByTestId("npy-a").setInputFiles({
        name: "a.npy",
        mimeType: "application/octet-stream",
        buffer: npy("<f2", [64, 64], 1),
      });
      await rowA.getByText("a.npy").waitFor();
      const m = await runs();
      await tab.getByTestId("run-with-inputs").click();
      await settle(m);
      assert.equal(await bannerText(), "");
      // The output c comes back as a 64x64 float16 .npy.
      const [download] = await Promise.all([
        page.waitForEvent("download"),
        tab.getByTestId("download-c").click(),
      ]);
      assert.equal(download.suggestedFilename(), "c.npy");
      const bytes = readFileSync(await download.path());
      const header = npyHeader(bytes);
      assert.match(header, /'descr': '<f2'/);
      assert.match(header, /'shape': \(64, 64,? ?\)/);
      // A .npy of the wrong shape: the error is on a's row.
      await tab.getByTestId("npy-a").setInputFiles({
        name: "a.npy",
        mimeType: "application/octet-stream",
        buffer: npy("<f2", [32, 64], 1),
      });
      const k = await runs();
      await tab.getByTestId("run-with-inputs").click();
      await settle(k);
      const err = rowA.getByTestId("row-error");
      await err.waitFor();
      assert.match(await err.innerText(), /shape|elements/);
      // The previous run stays on screen, with its inputs listed.
      assert.equal(await tab.getByTestId("input-row-b").count(), 1);
    },
  );

  it(
    "opens an ONNX model dropped with its external data, runs it on .npy inputs and compares expected outputs",
    { timeout: T },
    async () => {
      const onnx = readFileSync(join(EXTERNAL, "mlp_external.onnx"));
      const weights = readFileSync(join(EXTERNAL, "weights.bin"));
      // The test before leaves its error on screen; settling would take that error for this
      // drop's outcome, so dismiss it first, as a reader would.
      if (await page.locator("#error-banner").isVisible())
        await page.locator("#error-dismiss").click();
      const n = await runs();
      await dropFiles([
        { name: "mlp_external.onnx", bytes: onnx },
        { name: "weights.bin", bytes: weights },
      ]);
      await settle(n);
      assert.equal(await bannerText(), "");
      assert.match(await page.locator("#results").innerText(), /PASS|pass|ok/i);
      await showInputs();
      const tab = page.locator("#view-inputs");
      assert.match(await tab.getByTestId("input-row-x").innerText(), /x\s+f32\s+4×64/);
      // x = 0 gives y = relu(0 @ w1) @ w2 = 0: an expected all-zero y passes.
      await tab.getByTestId("npy-x").setInputFiles({
        name: "x.npy",
        mimeType: "application/octet-stream",
        buffer: npy("<f4", [4, 64], 0),
      });
      await tab.getByTestId("expected-y").setInputFiles({
        name: "y.npy",
        mimeType: "application/octet-stream",
        buffer: npy("<f4", [4, 32], 0),
      });
      let m = await runs();
      await tab.getByTestId("run-with-inputs").click();
      await settle(m);
      assert.equal(await bannerText(), "");
      assert.match(await tab.getByTestId("compare-y").innerText(), /^PASS/);
      // The ONNX test data set's own input and output (TensorProto files) compare too; an
      // expected y of ones does not match.
      await tab.getByTestId("npy-x").setInputFiles(join(EXTERNAL, "test_data_set_0", "input_0.pb"));
      await tab
        .getByTestId("expected-y")
        .setInputFiles(join(EXTERNAL, "test_data_set_0", "output_0.pb"));
      m = await runs();
      await tab.getByTestId("run-with-inputs").click();
      await settle(m);
      assert.match(await tab.getByTestId("compare-y").innerText(), /^PASS/);
      await tab.getByTestId("expected-y").setInputFiles({
        name: "ones.npy",
        mimeType: "application/octet-stream",
        buffer: npy("<f4", [4, 32], 1),
      });
      m = await runs();
      await tab.getByTestId("run-with-inputs").click();
      await settle(m);
      assert.match(await tab.getByTestId("compare-y").innerText(), /^FAIL/);
      // The output as .npy.
      const [download] = await Promise.all([
        page.waitForEvent("download"),
        tab.getByTestId("download-y").click(),
      ]);
      assert.match(npyHeader(readFileSync(await download.path())), /'shape': \(4, 32,? ?\)/);
      // An expected output of the wrong shape: the error is on y's row.
      await tab.getByTestId("expected-y").setInputFiles({
        name: "y.npy",
        mimeType: "application/octet-stream",
        buffer: npy("<f4", [4, 16], 0),
      });
      m = await runs();
      await tab.getByTestId("run-with-inputs").click();
      await settle(m);
      const err = tab.getByTestId("output-row-y").getByTestId("row-error");
      await err.waitFor();
      assert.match(await err.innerText(), /shape/);
    },
  );

  it(
    "runs a model dropped without its external data timing-only, naming the missing file",
    { timeout: T },
    async () => {
      const n = await runs();
      await dropFiles([
        { name: "mlp_external.onnx", bytes: readFileSync(join(EXTERNAL, "mlp_external.onnx")) },
      ]);
      await page.waitForFunction(
        () => /weights\.bin/.test(document.getElementById("notice-text")?.textContent ?? ""),
        undefined,
        { timeout: 60_000 },
      );
      assert.ok((await runs()) > n);
      assert.match(await page.locator("#notice-text").innerText(), /timing-only/);
      assert.equal(await bannerText(), "");
    },
  );

  it(
    "lists a KTIR module's missing scalar when its run fails, and runs it with the value typed in",
    { timeout: T },
    async () => {
      // %n is neither a view's base nor given a value: the module cannot run without it.
      const module = SCALE_KTIR;
      const n = await runs();
      await dropFiles([{ name: "scale.mlir", bytes: Buffer.from(module) }]);
      await settle(n);
      const banner = await bannerText();
      assert.match(banner, /missing inputs/);
      assert.match(banner, /n=VALUE/);
      assert.match(banner, /Run inputs tab/);
      // The page opens the Run inputs tab on the module that did not run.
      await page.locator("#view-inputs").waitFor({ state: "visible" });
      const tab = page.locator("#view-inputs");
      const row = tab.getByTestId("input-row-n");
      assert.equal(await row.getAttribute("data-missing"), "true");
      assert.match(await row.innerText(), /n\s+index/);
      assert.match(await row.innerText(), /missing/);
      assert.match(await tab.getByTestId("inputs-missing").innerText(), /a value for n/);
      assert.match(await tab.getByTestId("input-row-x").innerText(), /x\s+f32\s+8×16/);
      assert.match(await tab.getByTestId("inputs-unrun").innerText(), /did not run/);
      // The value typed in runs it.
      await tab.getByTestId("scalar-n").fill("3");
      const m = await runs();
      await tab.getByTestId("run-with-inputs").click();
      await settle(m);
      assert.equal(await bannerText(), "");
      assert.ok((await runs()) > m);
      assert.match((await page.locator("#source-name").textContent()) ?? "", /scale\.mlir/);
      // Listed now as given, with its value, and the outputs of the run offered.
      assert.equal(await row.getAttribute("data-missing"), null);
      assert.equal(await tab.getByTestId("scalar-n").inputValue(), "3");
      assert.equal(await tab.getByTestId("inputs-missing").count(), 0);
      assert.equal(await tab.getByTestId("output-row-y").count(), 1);
    },
  );

  it("had no page errors", () => {
    assert.deepEqual(problems, []);
  });
});
