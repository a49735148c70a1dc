// End-to-end: the lessons page (issue 19, item 7). The list and one lesson at 1440x900 and
// 390x844: the reader does the lesson's task (turns double buffering on), the example reruns,
// and the checks pass; every lesson with the settings that do each of its tasks; a lesson
// embedded with <spyre-playground lesson=...>.
// Screenshots go to test-artifacts/screenshots/lessons-*.png. Run `bash scripts/build-web.sh`
// first.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  newPage as harnessPage,
  noSidewaysScroll,
  ROOT,
  server,
  shot,
  SIZES,
  suite,
  T,
} from "./harness.mjs";

const LESSON = "05-double-buffering";
const LESSON_FILES = readdirSync(join(ROOT, "lessons"))
  .filter((f) => f.endsWith(".md"))
  .sort();

/** A page with the longer default wait a lesson's embedded runs need. */
async function newPage(size) {
  const p = await harnessPage(size);
  p.setDefaultTimeout(30_000);
  return p;
}

/** Waits until the lesson's example has reported more than `n` runs. */
async function runsAbove(p, n) {
  await p.waitForFunction(
    (n) => Number(document.querySelector("[data-testid=lesson-example]")?.dataset.runs ?? 0) > n,
    n,
    { timeout: 90_000 },
  );
}

const status = (p, i) => p.getByTestId(`check-${i}`).getAttribute("data-status");

describe("lessons page", { timeout: 10 * T }, () => {
  suite({ need: ["index.html", "lessons.html"] });

  for (const size of SIZES) {
    it(
      `lists the lessons, and a task's check passes at ${size.width}x${size.height}`,
      { timeout: 3 * T },
      async () => {
        const p = await newPage(size);
        await p.goto(`${server.url}lessons.html`, { waitUntil: "load" });
        const links = p.getByTestId("lesson-list").locator("a");
        await links.first().waitFor();
        assert.equal(await links.count(), LESSON_FILES.length);
        await noSidewaysScroll(p, `lesson list at ${size.width}`);
        await shot(p, `lessons-list-${size.width}x${size.height}.png`);

        await p.getByTestId(`lesson-link-${LESSON}`).click();
        const example = p.getByTestId("lesson-example");
        await example.scrollIntoViewIfNeeded();
        // The embedded playground runs the lesson's own settings: the baseline.
        await runsAbove(p, 0);
        const player = p.getByTestId("lesson-player");
        assert.equal(await player.evaluate((e) => e.tagName.toLowerCase()), "spyre-playground");
        assert.equal(await player.getAttribute("double-buffer"), "off");
        assert.equal(await status(p, 0), "failed", "the check passed before the task was done");
        // The task: turn double buffering on; the example reruns and both checks pass.
        const box = p.getByTestId("lesson-set-doubleBuffer");
        assert.equal(await box.isChecked(), false);
        await box.check();
        await runsAbove(p, 1);
        await p.waitForFunction(
          () => document.querySelector("[data-testid=check-0]")?.dataset.status === "passed",
          undefined,
          { timeout: 30_000 },
        );
        assert.equal(await status(p, 1), "passed", await p.getByTestId("readout").innerText());
        const readout = await p.getByTestId("readout").innerText();
        assert.match(readout, /cycles/);
        assert.match(readout, /overlap/);
        await noSidewaysScroll(p, `lesson at ${size.width}`);
        await example.scrollIntoViewIfNeeded();
        await shot(p, `lessons-task-${size.width}x${size.height}.png`);
        await p.getByTestId("check-0").scrollIntoViewIfNeeded();
        await shot(p, `lessons-check-${size.width}x${size.height}.png`);
        // Reset goes back to the lesson's settings, where the check no longer holds.
        await p.getByTestId("lesson-reset").click();
        await runsAbove(p, 2);
        assert.equal(await status(p, 0), "failed");
        await p.context().close();
      },
    );
  }

  it(
    "every lesson's example loads, and each check's solution passes it",
    { timeout: 12 * T },
    async () => {
      const p = await newPage(SIZES[0]);
      for (const file of LESSON_FILES) {
        const id = file.replace(/\.md$/, "");
        const text = readFileSync(join(ROOT, "lessons", file), "utf8");
        const solutions = [...text.matchAll(/^solution:\s*(.*)$/gm)].map((m) =>
          m[1].split(/[\s,]+/).map((pair) => pair.split("=")),
        );
        await p.goto(`${server.url}lessons.html#lesson=${id}`, { waitUntil: "load" });
        // From one lesson to the next only the hash changes: until the page has handled the
        // hashchange, the previous lesson, with its run count, is still the one shown.
        await p.waitForFunction(
          (id) => document.querySelector("[data-testid=lesson]")?.dataset.lesson === id,
          id,
        );
        await p.getByTestId("lesson-example").scrollIntoViewIfNeeded();
        await runsAbove(p, 0);
        for (const [i, solution] of solutions.entries()) {
          const before = Number(await p.getByTestId("lesson-example").getAttribute("data-runs"));
          let changed = false;
          for (const [control, value] of solution) {
            const input = p.getByTestId(`lesson-set-${control}`);
            if (control === "doubleBuffer") {
              changed ||= (await input.isChecked()) !== (value === "on");
              await input.setChecked(value === "on");
            } else if (control === "attentionBlock") {
              const v = value === "all" ? "" : value;
              changed ||= (await input.inputValue()) !== v;
              await input.fill(v);
              await input.dispatchEvent("change");
            } else {
              changed ||= (await input.inputValue()) !== value;
              await input.selectOption(value);
            }
          }
          if (changed) await runsAbove(p, before);
          const readout = async () => p.getByTestId("readout").innerText();
          await p
            .waitForFunction(
              (i) =>
                document.querySelector(`[data-testid=check-${i}]`)?.dataset.status === "passed",
              i,
              { timeout: 30_000 },
            )
            .catch(async () => assert.fail(`${id} check ${i}: ${await readout()}`));
        }
      }
      await p.context().close();
    },
  );

  it("embeds a lesson with <spyre-playground lesson=...>", { timeout: 2 * T }, async () => {
    const p = await newPage(SIZES[0]);
    await p.goto(`${server.url}lessons.html`, { waitUntil: "load" });
    await p.getByTestId("lesson-list").waitFor();
    // The element comes with the lessons page (it embeds its examples with it).
    const src = await p.evaluate((lesson) => {
      const e = document.createElement("spyre-playground");
      e.setAttribute("lesson", lesson);
      e.setAttribute("height", "700px");
      document.querySelector("main").prepend(e);
      return e.iframe?.src ?? "";
    }, LESSON);
    assert.match(src, new RegExp(`/lessons\\.html#lesson=${LESSON}&embed=1$`));
    const frame = p.locator("main > spyre-playground iframe").first().contentFrame();
    await frame.getByTestId("lesson").waitFor();
    assert.equal(await frame.locator("body.embed").count(), 1);
    assert.equal(await frame.locator(".lessons-top").isVisible(), false);
    await shot(p, "lessons-embedded-1440x900.png");
    await p.context().close();
  });
});
