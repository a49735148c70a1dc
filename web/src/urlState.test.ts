// The URL state against bad links (each kind named), over-large ones, and random input: the
// reader never throws and always says what it could not use; valid states round-trip.
//
// The random cases come from a small seeded generator (below) rather than a property-testing
// library: the properties are simple, and a fixed seed keeps every run reproducible.

import { describe, expect, it } from "vitest";
import { NO_CHANGE } from "./compare";
import { LINK_RUN_BUDGET_MS, progressText, stoppedText } from "./runStatus";
import {
  checkNames,
  compress,
  describeLinkProblems,
  EMPTY_STATE,
  formatUrlState,
  inflateCapped,
  MAX_INFLATED_STATE_BYTES,
  MAX_URL_FILE_CHARS,
  MAX_URL_KTIR_CHARS,
  MAX_URL_STATE_CHARS,
  parseUrlState,
  readUrlState,
  type UrlState,
} from "./urlState";
import { TABS } from "./views/registry";

/** mulberry32: a tiny seeded PRNG, enough to drive the random cases reproducibly. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Gen {
  private readonly next: () => number;
  constructor(seed: number) {
    this.next = rng(seed);
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  bool(): boolean {
    return this.next() < 0.5;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(0, xs.length - 1)]!;
  }
  bytes(max: number): Uint8Array<ArrayBuffer> {
    const out = new Uint8Array(this.int(0, max));
    for (let i = 0; i < out.length; i++) out[i] = this.int(0, 255);
    return out;
  }
  /** Text from an alphabet that mixes URL syntax, base64url, controls and non-ASCII. */
  string(max: number): string {
    const alphabets = [
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
      "%&=#?+/ v2s",
      "\u0000\n\t\"'\\{}[]:,",
      "é✓😀\u202e\ud800",
    ];
    let s = "";
    const n = this.int(0, max);
    for (let i = 0; i < n; i++) {
      const a = this.pick(alphabets);
      s += a[this.int(0, a.length - 1)]!;
    }
    return s;
  }
  /** A non-empty string of well-formed characters (what a real session holds). */
  text(max: number): string {
    const chars = "abcxyz019 _-.%&=#\n\t\"'é✓😀{}";
    let s = "";
    const n = this.int(1, max);
    for (let i = 0; i < n; i++) s += [...chars][this.int(0, [...chars].length - 1)];
    return s;
  }
  maybe<T>(f: () => T): T | null {
    return this.bool() ? f() : null;
  }
}

function bytesToBase64Url(bytes: Uint8Array): string {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

async function deflate(bytes: Uint8Array<ArrayBuffer>): Promise<Uint8Array> {
  const body = new Blob([bytes]).stream().pipeThrough(new CompressionStream("deflate-raw"));
  return new Uint8Array(await new Response(body).arrayBuffer());
}

/** What every read must give: a whole state and a list of described problems. */
function expectWellFormed(r: Awaited<ReturnType<typeof readUrlState>>): void {
  expect(Object.keys(r.state).sort()).toEqual(Object.keys(EMPTY_STATE).sort());
  expect(Array.isArray(r.problems)).toBe(true);
  for (const p of r.problems) {
    expect(typeof p).toBe("string");
    expect(p.length).toBeGreaterThan(0);
  }
}

async function stateHash(obj: unknown): Promise<string> {
  return `#v=2&s=${await compress(JSON.stringify(obj))}`;
}

describe("run settings in links", () => {
  it("read each setting, and the defaults spelled out without a problem", async () => {
    const r = await readUrlState(
      await stateHash({
        allocator: "best-fit",
        attentionBlock: 64,
        noDoubleBuffer: true,
        noFuse: true,
        timingOnly: true,
        seed: 7,
        outOfBounds: "mask",
        places: { a: 0, b: 4096 },
      }),
    );
    expect(r.problems).toEqual([]);
    expect(r.state).toMatchObject({
      allocator: "best-fit",
      attentionBlock: 64,
      noDoubleBuffer: true,
      noFuse: true,
      timingOnly: true,
      seed: 7,
      outOfBounds: "mask",
      places: { a: 0, b: 4096 },
    });
    const d = await readUrlState(
      await stateHash({ allocator: "greedy", outOfBounds: "error", seed: 0 }),
    );
    expect(d.problems).toEqual([]);
    expect(d.state).toEqual(EMPTY_STATE);
  });

  it("drop bad settings and name them", async () => {
    const r = await readUrlState(
      await stateHash({
        allocator: "random",
        attentionBlock: 0,
        seed: -1,
        outOfBounds: "wrap",
        places: { "a=b": 1, __proto__: 2 },
      }),
    );
    expect(r.state).toEqual(EMPTY_STATE);
    for (const k of ["allocator", "attentionBlock", "seed", "outOfBounds", "places"])
      expect(r.problems.some((p) => p.includes(`field ${k} `))).toBe(true);
  });

  it("read plain parameters of a hand-written link", async () => {
    const r = await readUrlState("#v=2&noDoubleBuffer=1&attentionBlock=32&allocator=first-fit");
    expect(r.problems).toEqual([]);
    expect(r.state).toMatchObject({
      noDoubleBuffer: true,
      attentionBlock: 32,
      allocator: "first-fit",
    });
  });
});

describe("bad links", () => {
  it("say what was wrong with the state", async () => {
    const cases: [string, RegExp][] = [
      ["#v=2&s=garbage", /not deflate|not JSON|not UTF-8/],
      ["#v=2&s=%%%", /not base64url/],
      ["#v=2&s=a", /not base64url/],
      ["#v=99&example=x", /version "99" is not one this page reads/],
      ["#v=two", /version "two"/],
      ["#v=2&s=AAAAAAAA", /not/],
    ];
    for (const [hash, problem] of cases) {
      const r = await readUrlState(hash);
      expectWellFormed(r);
      expect(r.problems.join("; "), hash).toMatch(problem);
      expect(r.state.example).toBeNull();
    }
    const notJson = await readUrlState(`#v=2&s=${await compress("{example: matmul}")}`);
    expect(notJson.problems).toEqual(["the state is not JSON"]);
    const notObject = await readUrlState(`#v=2&s=${await compress("[1,2]")}`);
    expect(notObject.problems).toEqual(["the state is not a JSON object"]);
  });

  it("name each field of the wrong type, and keep the rest", async () => {
    const r = await readUrlState(
      await stateHash({
        example: "softmax",
        t: "soon",
        core: { n: 1 },
        view: "bogus",
        file: { name: 3, text: "x" },
        line: 12,
      }),
    );
    expect(r.state).toMatchObject({
      example: "softmax",
      line: 12,
      t: null,
      core: null,
      file: null,
    });
    const text = r.problems.join("; ");
    for (const f of ["t", "core", "view", "file"]) expect(text).toContain(`field ${f} `);
    expect(text).not.toContain("field example");
    expect(text).not.toContain("field line");
    // Plain parameters too.
    expect((await readUrlState("#v=1&example=x&t=abc")).problems).toEqual([
      'field t has an unusable value "abc"',
    ]);
    // Good links have no problems.
    expect((await readUrlState("#v=1&example=x&view=ring&t=5")).problems).toEqual([]);
    expect((await readUrlState("")).problems).toEqual([]);
    expect((await readUrlState("#v=2")).problems).toEqual([]);
  });

  it("drop unknown example and machine names", () => {
    const s: UrlState = { ...EMPTY_STATE, example: "nope", machine: "huge" };
    expect(checkNames(s, ["matmul_add"], ["spyre32"])).toEqual([
      'there is no example named "nope"',
      'there is no machine named "huge"',
    ]);
    expect(s).toMatchObject({ example: null, machine: null });
    const ok: UrlState = { ...EMPTY_STATE, example: "matmul_add", machine: "spyre32" };
    expect(checkNames(ok, ["matmul_add"], ["spyre32"])).toEqual([]);
    expect(ok.example).toBe("matmul_add");
  });

  it("are described with what is shown instead", () => {
    expect(describeLinkProblems([], "the example a")).toBe("");
    expect(describeLinkProblems(["the state is not JSON", "x"], "the example matmul_add")).toBe(
      "This link's state could not be read (the state is not JSON; x); showing the example matmul_add instead.",
    );
  });
});

describe("limits on links", () => {
  it("stop inflating past the cap, quickly", async () => {
    // About 5 KiB of deflate that inflates to 5 MiB.
    const bomb = await compress(JSON.stringify({ ktir: "a".repeat(5 * 1024 * 1024) }));
    expect(bomb.length).toBeLessThan(16 * 1024);
    const started = Date.now();
    const r = await readUrlState(`#v=2&s=${bomb}`);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(r.problems).toEqual([
      `the state inflates to more than ${MAX_INFLATED_STATE_BYTES / (1024 * 1024)} MiB`,
    ]);
    expect(r.state.ktir).toBeNull();
  });

  it("stops at the exact cap and keeps what fits", async () => {
    const text = new TextEncoder().encode("x".repeat(5000));
    const deflated = (await deflate(text)) as Uint8Array<ArrayBuffer>;
    expect((await inflateCapped(deflated, 5000)).length).toBe(5000);
    await expect(inflateCapped(deflated, 4999)).rejects.toThrow(/inflates to more than 4999/);
  });

  it("refuse an over-long compressed state before decoding it", async () => {
    const r = await readUrlState(`#v=2&s=${"A".repeat(MAX_URL_STATE_CHARS + 1)}`);
    expect(r.problems.join()).toMatch(/characters long; links hold at most/);
  });

  it("do not run KTIR or files over the size limits", async () => {
    const r = await readUrlState(
      await stateHash({
        example: "a",
        ktir: "x".repeat(MAX_URL_KTIR_CHARS + 1),
        file: { name: "big.mlir", text: "y".repeat(MAX_URL_FILE_CHARS + 1) },
      }),
    );
    expect(r.state).toMatchObject({ example: "a", ktir: null, file: null });
    expect(r.problems).toHaveLength(2);
    expect(r.problems[0]).toMatch(/KTIR is \d+ characters; a link runs at most/);
    expect(r.problems[1]).toMatch(/file "big.mlir" is \d+ characters/);
  });
});

describe("url state under random input", () => {
  it("never throws on random fragments", async () => {
    const g = new Gen(1);
    for (let i = 0; i < 300; i++) {
      const s = g.string(80);
      const hash = g.pick([s, `#${s}`, `#v=2&s=${s}`, `#v=1&${s}`, `#v=${s}`]);
      expectWellFormed(await readUrlState(hash));
    }
  });

  it("never throws on random bytes, raw or deflated, as the state", async () => {
    const g = new Gen(2);
    for (let i = 0; i < 300; i++) {
      const bytes = g.bytes(200);
      const payload = g.bool() ? bytes : await deflate(bytes);
      const r = await readUrlState(`#v=2&s=${bytesToBase64Url(payload)}`);
      expectWellFormed(r);
      // Random bytes are (almost) never a JSON object: something is described.
      if (r.problems.length === 0) expect(r.state).toEqual(EMPTY_STATE);
    }
  });

  it("never throws on random JSON values of the right shape but wrong types", async () => {
    const g = new Gen(3);
    const values = (): unknown =>
      g.pick<() => unknown>([
        () => g.string(10),
        () => g.int(-5, 5),
        () => g.bool(),
        () => null,
        () => [g.int(0, 3)],
        () => ({ name: g.string(4), text: g.int(0, 1) }),
        () => Number.MAX_VALUE,
      ])();
    for (let i = 0; i < 200; i++) {
      const o: Record<string, unknown> = {};
      for (const k of Object.keys(EMPTY_STATE)) if (g.bool()) o[k] = values();
      expectWellFormed(await readUrlState(await stateHash(o)));
    }
  });

  it("round-trips random valid states", async () => {
    const g = new Gen(4);
    const views = TABS.map((t) => t.id);
    for (let i = 0; i < 150; i++) {
      const s: UrlState = {
        ...EMPTY_STATE,
        example: g.maybe(() => g.text(20)),
        view: g.maybe(() => g.pick(views)),
        t: g.maybe(() => g.int(0, 1e9) / g.pick([1, 4])),
        machine: g.maybe(() => g.text(10)),
        ktir: g.maybe(() => g.text(300)),
        file: g.maybe(() => ({ name: g.text(12), text: g.text(300) })),
        line: g.maybe(() => g.int(1, 10_000)),
        core: g.maybe(() => g.int(0, 31)),
        embed: g.bool(),
        pass: g.maybe(() => g.text(10)),
        allocator: g.maybe(() => g.pick(["first-fit", "best-fit"] as const)),
        attentionBlock: g.maybe(() => g.int(1, 4096)),
        noDoubleBuffer: g.bool(),
        noFuse: g.bool(),
        timingOnly: g.bool(),
        seed: g.maybe(() => g.int(1, 1e9)),
        outOfBounds: g.maybe(() => "mask" as const),
        places: g.maybe(() => ({ [`b${g.int(0, 9)}`]: g.int(0, 1e6), x: g.int(0, 5) })),
        compare: g.maybe(() =>
          g.bool()
            ? { ...NO_CHANGE, ktirEdit: true }
            : {
                ...NO_CHANGE,
                machine: g.maybe(() => g.text(10)),
                allocator: g.maybe(() => g.pick(["greedy", "first-fit", "best-fit"] as const)),
                attentionBlock: g.int(0, 4096),
                doubleBuffer: g.maybe(() => g.bool()),
              },
        ),
      };
      const hash = await formatUrlState(s);
      const r = await readUrlState(hash);
      expect(r.problems).toEqual([]);
      expect(r.state).toEqual(s);
      expect(await parseUrlState(hash)).toEqual(s);
    }
  });
});

describe("run status", () => {
  it("shows the phase, a percentage and the time", () => {
    expect(progressText("compiling", null, 200)).toBe("compiling…");
    expect(progressText("compiling", null, 3400)).toBe("compiling… · 3 s");
    expect(progressText("x", { phase: "execute", done: 42, total: 100 }, 1000)).toBe(
      "executing 42% · 1 s",
    );
    // The estimate falls short: 99% until the phase ends, never over 100%.
    expect(progressText("x", { phase: "execute", done: 500, total: 100 }, 0)).toBe(
      "executing 100%",
    );
    expect(progressText("x", { phase: "execute", done: 99, total: 100 }, 0)).toBe("executing 99%");
    expect(progressText("x", { phase: "schedule", done: 0, total: 0 }, 0)).toBe("scheduling 0%");
  });

  it("shows a compile's pass and how far the compile has come", () => {
    const at = (pass: string, done: number) => ({
      phase: "compile" as const,
      done,
      total: 700,
      pass,
    });
    expect(progressText("compiling", at("canonicalize", 0), 0)).toBe(
      "compiling… pass canonicalize · 0%",
    );
    expect(progressText("compiling", at("layout", 280), 3400)).toBe(
      "compiling… pass layout · 40% · 3 s",
    );
    // The compile's end, and a report without a pass name.
    expect(progressText("compiling", at("ktir", 700), 0)).toBe("compiling… pass ktir · 100%");
    expect(progressText("compiling", { phase: "compile", done: 7, total: 14 }, 0)).toBe(
      "compiling… 50%",
    );
    // Still matches what the status said before the first report.
    expect(progressText("compiling", at("layout", 200), 0)).toMatch(/^compiling…/);
  });

  it("says why a run stopped", () => {
    expect(stoppedText("cancelled")).toBe("the run was cancelled");
    expect(stoppedText("budget")).toContain(`${LINK_RUN_BUDGET_MS / 1000} s time budget`);
  });
});
