// Every lesson file parses, names gallery examples that exist, and checks only quantities a run
// reports; and the pieces the lessons page is built from behave.

import { describe, expect, it } from "vitest";
import examplesRs from "../../../crates/driver/src/examples.rs?raw";
import type { PipelineResult, TraceEvent } from "../api";
import { embedUrl } from "../embed/url";
import { TABS } from "../views/registry";
import { evaluate, parseExpr, quantitiesOf, usesBaseline, type Expr } from "./check";
import { leadSentences, parseLesson, VIEW_IDS } from "./lesson";
import { parseInline, parseMarkdown, safeHref } from "./markdown";
import { dmaComputeOverlap, isQuantity, lessonMetrics, QUANTITIES, type Metrics } from "./metrics";
import { EventTable } from "../events";

// The same files the lessons page bundles.
const texts = import.meta.glob<string>("../../../lessons/*.md", {
  query: "?raw",
  import: "default",
  eager: true,
});
const files = Object.keys(texts)
  .map((p) => p.split("/").pop()!)
  .sort();
const text = (f: string): string => texts[`../../../lessons/${f}`]!;

/** The gallery's example names, from the table the wasm module is built with. */
const gallery = [...examplesRs.matchAll(/\(\s*"([\w.-]+)",\s*include_str!/g)].map((m) => m[1]!);

describe("lesson files", () => {
  it("there are six to eight, in order", () => {
    expect(files.length).toBeGreaterThanOrEqual(6);
    expect(files.length).toBeLessThanOrEqual(8);
    for (const f of files) expect(f).toMatch(/^\d\d-[a-z0-9-]+\.md$/);
    expect(gallery).toContain("matmul_add");
  });

  for (const f of files) {
    describe(f, () => {
      const lesson = parseLesson(f.replace(/\.md$/, ""), text(f));
      it("parses without problems", () => {
        expect(lesson.problems).toEqual([]);
        expect(lesson.title).not.toBe(lesson.id);
        expect(lesson.summary.length).toBeGreaterThan(40);
      });
      it("embeds examples the gallery has", () => {
        const ex = lesson.example!;
        expect(gallery).toContain(ex.settings.example);
        for (const c of ex.choices) expect(gallery).toContain(c);
        if (ex.choices.length > 0) expect(ex.controls).toContain("example");
      });
      it("checks known quantities, and asks the reader to change something", () => {
        expect(lesson.checks.length).toBeGreaterThan(0);
        for (const c of lesson.checks) {
          expect(c.quantities.length).toBeGreaterThan(0);
          for (const q of c.quantities) expect(isQuantity(q), q).toBe(true);
        }
        expect(lesson.example!.controls.length).toBeGreaterThan(0);
        for (const c of lesson.checks) {
          expect(Object.keys(c.solution).length, c.task).toBeGreaterThan(0);
          const ex = lesson.example!;
          for (const [k, v] of Object.entries(c.solution)) {
            if (k === "example") expect([ex.settings.example, ...ex.choices]).toContain(v);
            if (k === "machine") expect(["spyre32", "tiny4"]).toContain(v);
            if (k === "doubleBuffer") expect(["on", "off"]).toContain(v);
            if (k === "allocator") expect(["greedy", "first-fit", "best-fit"]).toContain(v);
            if (k === "attentionBlock") expect(v).toMatch(/^(\d+|all)$/);
          }
        }
      });
    });
  }

  it("the example views are the playground's tabs", () => {
    expect([...VIEW_IDS].sort()).toEqual(TABS.map((t) => t.id).sort());
  });
});

describe("lesson format", () => {
  it("reports what is wrong with a lesson", () => {
    const l = parseLesson(
      "x",
      "# T\n\ntext\n\n```spyre-example\nexample: a\nview: nowhere\nmachine: big\ncolour: red\nshow: speed\n```\n\n```spyre-check\ntask: t\nexpect: speed > 1\nsays: s\n```\n",
    );
    expect(l.problems.join("\n")).toMatch(/no view "nowhere"/);
    expect(l.problems.join("\n")).toMatch(/no machine "big"/);
    expect(l.problems.join("\n")).toMatch(/unknown key "colour"/);
    expect(l.problems.join("\n")).toMatch(/shows an unknown quantity "speed"/);
    expect(l.problems.join("\n")).toMatch(/unknown quantity "speed"/);
    expect(parseLesson("y", "no title").problems).toHaveLength(3);
  });
});

describe("lesson list", () => {
  it("shows the opening sentences of a lesson", () => {
    expect(
      leadSentences("Short. Still short. This sentence makes it long enough to stop. More."),
    ).toBe("Short. Still short. This sentence makes it long enough to stop.");
    expect(leadSentences("No full stop")).toBe("No full stop");
  });
});

describe("markdown", () => {
  it("keeps raw HTML as text", () => {
    const b = parseMarkdown("Text <script>alert(1)</script> and **bold** `code`");
    expect(b).toEqual([
      {
        kind: "para",
        children: [
          { kind: "text", text: "Text <script>alert(1)</script> and " },
          { kind: "strong", children: [{ kind: "text", text: "bold" }] },
          { kind: "text", text: " " },
          { kind: "code", text: "code" },
        ],
      },
    ]);
    // An HTML block (CommonMark) is one paragraph of its raw text.
    expect(parseMarkdown('<img src=x onerror="alert(1)">\n\nnext')).toEqual([
      { kind: "para", children: [{ kind: "text", text: '<img src=x onerror="alert(1)">' }] },
      { kind: "para", children: [{ kind: "text", text: "next" }] },
    ]);
  });
  it("reads headings, lists, fences and links", () => {
    const b = parseMarkdown("# A\n\n- one\n  more\n- two\n\n1. x\n\n```spyre-check\nk: v\n```\n");
    expect(b.map((x) => x.kind)).toEqual(["heading", "list", "list", "code"]);
    expect(b[1]).toMatchObject({
      ordered: false,
      items: [[{ text: "one more" }], [{ text: "two" }]],
    });
    expect(b[3]).toMatchObject({ info: "spyre-check", text: "k: v", line: 10 });
    expect(parseInline("[a](https://x.y/z) *e* snake_case_name")).toEqual([
      { kind: "link", href: "https://x.y/z", children: [{ kind: "text", text: "a" }] },
      { kind: "text", text: " " },
      { kind: "em", children: [{ kind: "text", text: "e" }] },
      { kind: "text", text: " snake_case_name" },
    ]);
  });
  it("follows only relative and http(s) links", () => {
    expect(safeHref("#lesson=01")).toBe(true);
    expect(safeHref("https://a.b")).toBe(true);
    expect(safeHref("javascript:alert(1)")).toBe(false);
    expect(safeHref(" data:text/html,x")).toBe(true); // relative: a path starting with a space
    expect(safeHref("DATA:text/html,x")).toBe(false);
  });
});

function metrics(over: Partial<Metrics>): Metrics {
  const m = Object.fromEntries(Object.keys(QUANTITIES).map((k) => [k, null])) as Metrics;
  return { ...m, ...over };
}

describe("checks", () => {
  const expr = (s: string): Expr => {
    const e = parseExpr(s);
    if (typeof e === "string") throw new Error(e);
    return e;
  };
  it("compares a run with the baseline", () => {
    const e = expr("cycles <= 0.9 * baseline.cycles and overlap >= 20%");
    expect(quantitiesOf(e).sort()).toEqual(["cycles", "overlap"]);
    expect(usesBaseline(e)).toBe(true);
    const base = metrics({ cycles: 1000, overlap: 0 });
    expect(evaluate(e, metrics({ cycles: 890, overlap: 0.3 }), base).passed).toBe(true);
    expect(evaluate(e, metrics({ cycles: 950, overlap: 0.3 }), base).passed).toBe(false);
    expect(evaluate(e, metrics({ cycles: 890, overlap: 0.1 }), base).passed).toBe(false);
    expect(evaluate(e, metrics({ cycles: 890 }), null).problem).toMatch(/baseline/);
  });
  it("compares text", () => {
    const e = expr('bound == "matmul"');
    expect(evaluate(e, metrics({ bound: "matmul" }), null).passed).toBe(true);
    expect(evaluate(e, metrics({ bound: "dram" }), null).passed).toBe(false);
    expect(evaluate(expr("bound > 1"), metrics({ bound: "dram" }), null).problem).toMatch(/text/);
    expect(evaluate(expr("ringBytes > 0"), metrics({}), null).problem).toMatch(/no ringBytes/);
  });
  it("rejects what is not a check", () => {
    expect(parseExpr("cycles")).toMatch(/comparison/);
    expect(parseExpr("cycles < ")).toMatch(/value/);
    expect(parseExpr("speed < 1")).toMatch(/unknown quantity "speed"/);
    expect(parseExpr("other.cycles < 1")).toMatch(/baseline/);
    expect(parseExpr("cycles < 1 or cycles > 2")).toMatch(/"and"/);
    expect(parseExpr("cycles < 1 ; x")).toMatch(/unexpected/);
    expect(parseExpr("(cycles + 1) / 2 < 3")).not.toBeTypeOf("string");
  });
});

describe("quantities", () => {
  const ev = (unit: TraceEvent["unit"], core: number, start: number, end: number): TraceEvent => ({
    unit,
    core,
    start,
    end,
    bytes: 0,
    srcStop: null,
    dstStop: null,
    route: [],
    op: "x",
    line: 1,
  });
  it("overlap is the share of compute time with the same core's DMA busy", () => {
    expect(dmaComputeOverlap(EventTable.from([]))).toBe(0);
    // Core 0: compute 0-10, DMA 5-20 (5 of 10); core 1: compute 0-10, DMA on core 0 only.
    const events = [
      ev("pt", 0, 0, 10),
      ev("dma", 0, 5, 20),
      ev("sfp", 1, 0, 10),
      ev("dma", 0, 0, 2),
    ];
    expect(dmaComputeOverlap(EventTable.from(events))).toBeCloseTo(7 / 20);
  });
});

describe("a run's quantities", () => {
  it("reads layouts, the scratchpad plan, kernels and the roofline", () => {
    const bounds = { dramCycles: 1, matmulCycles: 2, vectorCycles: 0, lowerBoundCycles: 2 };
    const res = {
      kind: "graph",
      passes: [
        {
          name: "layout",
          data: {
            layouts: {
              // 100 fp16 elements per row pad to 128: 56 of 256 bytes per row are padding.
              a: {
                dtype: "f16",
                hostShape: [2, 100],
                deviceSize: [2, 2, 64],
                deviceBytes: 512,
                elemsPerStick: 64,
              },
            },
          },
        },
        {
          name: "scratchpad",
          data: {
            plan: {
              capacityBytes: 1000,
              peakBytes: 384,
              buffers: [
                { tensor: "x", bytesPerCore: 128, offset: 0, start: 0, end: 1 },
                { tensor: "y", bytesPerCore: 128, offset: null, start: 0, end: 1 },
              ],
            },
          },
        },
      ],
      sourceMap: {
        nodes: [],
        ops: [
          { name: "m", kind: "batchmatmul", node: 0, kernel: 0, sdscLines: null },
          { name: "r", kind: "restickify", node: 0, kernel: 1, sdscLines: null },
        ],
        kernels: [
          { func: "k0", lines: { from: 1, to: 2 }, op: 0, events: [] },
          { func: "k1", lines: { from: 3, to: 4 }, op: 1, events: [] },
        ],
      },
      run: {
        totalCycles: 1234,
        machine: { cores: 32 },
        summary: { bottleneck: "memory", links: [{ utilisation: 0.25 }, { utilisation: 0.5 }] },
        events: [],
        padding: [],
        paged: [],
        roofline: {
          kernels: [
            { kernel: 0, coresUsed: 6 },
            { kernel: 1, coresUsed: 32 },
          ],
          program: {
            dramReadBytes: 100,
            dramWriteBytes: 50,
            ringBytes: 7,
            rereadFactor: 1.5,
            ratio: 3,
            bounds: { ...bounds, bound: "matmul" },
          },
        },
      },
    } as unknown as PipelineResult;
    expect(lessonMetrics(res)).toEqual({
      cycles: 1234,
      machineCores: 32,
      bottleneck: "memory",
      bound: "matmul",
      rooflineRatio: 3,
      rereadFactor: 1.5,
      dramBytes: 150,
      ringBytes: 7,
      busiestLink: 0.5,
      overlap: 0,
      matmulCores: 6,
      maxCores: 32,
      kernels: 2,
      restickifies: 1,
      paddingShare: 1 - 400 / 512,
      scratchpadPeak: 384,
      scratchpadBuffers: 1,
      pagedWaste: null,
    });
  });
});

describe("embedding", () => {
  const base = "https://docs.example/guide/page.html";
  it("passes run settings to the framed page", () => {
    expect(
      embedUrl(base, {
        example: "swiglu_mlp",
        machine: "tiny4",
        allocator: "best-fit",
        "attention-block": "32",
        "double-buffer": "off",
      }),
    ).toBe(
      "https://docs.example/guide/index.html#v=1&example=swiglu_mlp&machine=tiny4&allocator=best-fit&attentionBlock=32&noDoubleBuffer=1&embed=1",
    );
  });
  it("frames a lesson from the lessons page", () => {
    expect(embedUrl(base, { lesson: "05-double-buffering" })).toBe(
      "https://docs.example/guide/lessons.html#lesson=05-double-buffering&embed=1",
    );
    expect(embedUrl(base, { lesson: "01-a", src: "/play/index.html" })).toBe(
      "https://docs.example/play/lessons.html#lesson=01-a&embed=1",
    );
    expect(() => embedUrl(base, { lesson: "../x" })).toThrow(/lesson id/);
  });
});
