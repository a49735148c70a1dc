// The page's compile cache: which stored entries are used, and how the worker arms the
// session with them, stores what a compile made, and carries on when the store fails.

import { describe, expect, it } from "vitest";
import type { SpyreModule, SpyreSession, WasmRun } from "./api";
import { type CompileCache, usableEntry } from "./compileCache";
import { digestRun } from "./digest";
import { createHandler, KEEP_TEXTS_ABOVE } from "./handler";
import type { PassTexts, RunResult, WireRunResult } from "./protocol";
import { runStatusText } from "./runStatus";
import { minimalResult, pageResult } from "./testResult";

/**
 * A graph session whose compile uses the armed bytes when they read "good", leaving the pass
 * texts apart in the store; `fillPasses` reads them from the snapshots entry given when it
 * reads "snaps" (else it compiles them again). A run asked for `textsApart` keeps its texts
 * back, as the wasm session does, and `fillPasses` gives them.
 */
function session(log: string[]): SpyreSession {
  let armed: Uint8Array | undefined | null = null;
  let outcome = "off";
  let apart = false;
  let made: Uint8Array | undefined;
  let madePasses: Uint8Array | undefined;
  const text = (b: Uint8Array | undefined): string => (b ? new TextDecoder().decode(b) : "");
  return {
    kind: "graph",
    run: (options) => {
      const textsApart = (options as { textsApart?: boolean } | undefined)?.textsApart === true;
      if (armed === null) outcome = "off";
      else if (text(armed) === "good") outcome = "hit";
      else {
        outcome = armed ? "rebuilt" : "miss";
        made = new TextEncoder().encode("good");
        madePasses = new TextEncoder().encode("snaps");
      }
      log.push(`run ${outcome}`);
      armed = null;
      apart = outcome === "hit";
      const r = minimalResult();
      return apart || textsApart
        ? { ...r, passesApart: true, passes: r.passes.map((p) => ({ ...p, text: null })) }
        : r;
    },
    traceJson: () => "{}",
    ktirInputs: () => null,
    runWithInputs: () => null,
    bufferNpy: () => new Uint8Array(),
    graphIo: () => ({ inputs: [], outputs: [] }),
    runGraphWithInputs: () => null,
    outputNpy: () => new Uint8Array(),
    compileKey: () => "k1",
    useArtifacts: (stored, storedPasses) => {
      armed = stored;
      if (storedPasses) log.push("snapshots read with the artifact");
    },
    compileCache: () => ({
      outcome,
      compileMs: 5,
      ...(outcome === "rebuilt" ? { reason: "corrupted" } : {}),
    }),
    takeArtifact: () => {
      const m = made;
      made = undefined;
      return m;
    },
    takePassesArtifact: () => {
      const m = madePasses;
      madePasses = undefined;
      return m;
    },
    fillPasses: (stored) => {
      let filled = "none";
      if (apart) {
        filled = text(stored) === "snaps" ? "hit" : stored ? "rebuilt" : "miss";
        if (filled !== "hit") madePasses = new TextEncoder().encode("snaps");
        apart = false;
      }
      log.push(`fill ${filled}`);
      return {
        texts: [{ name: "ktir", text: "func.func @k() {}" }],
        sdscLines: [{ op: "k", lines: { from: 1, to: 2 } }],
        outcome: filled,
        ...(filled === "rebuilt" ? { reason: "corrupted" } : {}),
      };
    },
  };
}

function module(log: string[]): SpyreModule {
  return {
    version: () => "t",
    compilerVersion: () => "c1",
    listExamples: () => [{ name: "one", description: "" }],
    exampleSource: () => "{}",
    machinePresets: () => ["spyre32"],
    verifyKtir: () => [],
    open: () => session(log),
  };
}

/** A cache in a Map, or one whose every call fails. */
function mapCache(entries: Map<string, Uint8Array>, failing = false): CompileCache {
  const fail = (): never => {
    throw new Error("quota exceeded");
  };
  return {
    get: async (k) => (failing ? fail() : (entries.get(k) ?? null)),
    put: async (k, b) => {
      if (failing) fail();
      entries.set(k, b);
    },
    clear: async () => (failing ? fail() : entries.clear()),
  };
}

const run = { target: { kind: "example", name: "one" }, options: {} };

describe("compile cache", () => {
  it("uses only entries stored under the key by this compiler version", () => {
    const bytes = new Uint8Array([1]);
    expect(usableEntry({ key: "k", version: "v", bytes }, "k", "v")).toBe(bytes);
    expect(usableEntry({ key: "k", version: "old", bytes }, "k", "v")).toBeNull();
    expect(usableEntry({ key: "other", version: "v", bytes }, "k", "v")).toBeNull();
    expect(usableEntry({ key: "k", version: "v", bytes: "x" }, "k", "v")).toBeNull();
    expect(usableEntry(null, "k", "v")).toBeNull();
  });

  it("compiles cold and stores, then hits; a corrupted entry is rebuilt and stored over", async () => {
    const log: string[] = [];
    const entries = new Map<string, Uint8Array>();
    const handle = createHandler(
      async () => module(log),
      () => mapCache(entries),
    );
    const first = await handle({ id: 1, method: "run", params: run });
    expect(first.ok && (first.result as RunResult).compileCache?.outcome).toBe("miss");
    expect(new TextDecoder().decode(entries.get("k1"))).toBe("good");
    const second = await handle({ id: 2, method: "run", params: run });
    expect(second.ok && (second.result as RunResult).compileCache?.outcome).toBe("hit");
    entries.set("k1", new TextEncoder().encode("garbage"));
    const third = await handle({ id: 3, method: "run", params: run });
    const r = third.ok ? (third.result as RunResult) : null;
    expect(r?.compileCache).toMatchObject({ outcome: "rebuilt", reason: "corrupted" });
    expect(new TextDecoder().decode(entries.get("k1"))).toBe("good");
    expect(log).toEqual(["run miss", "run hit", "run rebuilt"]);
    const cleared0 = await handle({ id: 7, method: "clearCache", params: {} });
    expect(cleared0.ok).toBe(true);
    const cleared = await handle({ id: 4, method: "clearCache", params: {} });
    expect(cleared).toEqual({ id: 4, ok: true, result: { note: null } });
    expect(entries.size).toBe(0);
  });

  it("reads a hit's pass texts from the store only when asked; a bad entry is compiled again", async () => {
    const log: string[] = [];
    const entries = new Map<string, Uint8Array>();
    const handle = createHandler(
      async () => module(log),
      () => mapCache(entries),
    );
    await handle({ id: 1, method: "run", params: run });
    expect(new TextDecoder().decode(entries.get("k1.passes"))).toBe("snaps");
    // A cold run has its texts: asking gives them, the stored entry unused.
    const cold = await handle({ id: 2, method: "passTexts", params: {} });
    expect(cold.ok && (cold.result as PassTexts).texts).toEqual([
      { name: "ktir", text: "func.func @k() {}" },
    ]);
    // Asked for one pass, a run's small texts come all together.
    const named = await handle({ id: 9, method: "passTexts", params: { names: ["sdsc"] } });
    expect(named.ok && (named.result as PassTexts).texts.map((t) => t.name)).toEqual(["ktir"]);
    const hit = await handle({ id: 3, method: "run", params: run });
    const r = hit.ok ? (hit.result as WireRunResult) : null;
    expect(r?.compileCache?.outcome).toBe("hit");
    expect(r?.result.passesApart).toBe(true);
    expect(r?.result.passes.every((p) => p.text === null)).toBe(true);
    const texts = await handle({ id: 4, method: "passTexts", params: {} });
    expect(texts.ok && (texts.result as PassTexts)).toEqual({
      texts: [{ name: "ktir", text: "func.func @k() {}" }],
      sdscLines: [{ op: "k", lines: { from: 1, to: 2 } }],
    });
    // A corrupted or missing entry is compiled again and stored over, with a note.
    for (const damage of ["corrupted", "missing"]) {
      if (damage === "corrupted") entries.set("k1.passes", new TextEncoder().encode("garbage"));
      else entries.delete("k1.passes");
      await handle({ id: 5, method: "run", params: run });
      const again = await handle({ id: 6, method: "passTexts", params: {} });
      const t = again.ok ? (again.result as PassTexts) : null;
      expect(t?.texts.length).toBe(1);
      if (damage === "corrupted") expect(t?.note).toMatch(/were corrupted: compiled again/);
      expect(new TextDecoder().decode(entries.get("k1.passes"))).toBe("snaps");
    }
    expect(log).toEqual([
      "run miss",
      "fill none",
      "fill none",
      "run hit",
      "fill hit",
      "run hit",
      "fill rebuilt",
      "run hit",
      "fill miss",
    ]);
    // A tensor-parallel run builds its pass on a stored text: it reads them with the artifact.
    const tp = { ...run, options: { tp: 2 } };
    await handle({ id: 8, method: "run", params: tp });
    expect(log.slice(-2)).toEqual(["snapshots read with the artifact", "run hit"]);
  });

  it("leaves the pass texts of the run on screen in the session until a view asks", async () => {
    const log: string[] = [];
    const big = "x".repeat(KEEP_TEXTS_ABOVE);
    const m = module(log);
    const open = m.open;
    const asked: unknown[] = [];
    // The session's run also snapshots a bundle over the limit.
    m.open = (...args) => {
      const s = open(...args);
      const runIt = s.run.bind(s);
      s.run = (o, p) => {
        asked.push(o);
        const r = runIt(o, p) as WasmRun;
        const apart = (o as { textsApart?: boolean }).textsApart === true;
        const sdsc = { name: "sdsc", title: "SDSC", text: apart ? null : big, data: null };
        return { ...r, passes: [...r.passes, sdsc] };
      };
      const fill = s.fillPasses?.bind(s);
      s.fillPasses = (stored) => {
        const f = fill?.(stored) as PassTexts;
        return { ...f, texts: [...f.texts, { name: "sdsc", text: big }] };
      };
      return s;
    };
    const handle = createHandler(async () => m);
    const res = await handle({ id: 1, method: "run", params: run });
    const r = res.ok ? (res.result as WireRunResult) : null;
    expect(asked).toEqual([{ textsApart: true }]);
    expect(r?.result.passesApart).toBe(true);
    expect(r?.result.passes.map((p) => [p.name, p.text])).toEqual([
      ["ktir", null],
      ["sdsc", null],
    ]);
    const ask = async (id: number, names?: string[]): Promise<[string, number][]> => {
      const res = await handle({ id, method: "passTexts", params: names ? { names } : {} });
      const t = res.ok ? (res.result as PassTexts) : null;
      return (t?.texts ?? []).map((x) => [x.name, x.text.length]);
    };
    // Together over the limit: only the texts asked for, from the session.
    expect(await ask(2, ["ktir"])).toEqual([["ktir", "func.func @k() {}".length]]);
    expect(await ask(3, ["sdsc"])).toEqual([["sdsc", big.length]]);
    expect(log).toEqual(["run off", "fill none", "fill none"]);
    // The next run's texts, all at once.
    await handle({ id: 5, method: "run", params: run });
    expect(await ask(6)).toEqual([
      ["ktir", "func.func @k() {}".length],
      ["sdsc", big.length],
    ]);
    // A run aside (compare mode) carries its texts: the page asks only of the run on screen.
    const aside = await handle({ id: 7, method: "run", params: { ...run, aside: true } });
    const a = aside.ok ? (aside.result as WireRunResult) : null;
    expect(asked.at(-1)).toEqual({});
    expect(a?.result.passes.find((p) => p.name === "sdsc")?.text).toBe(big);
  });

  it("gives every text of a run whose texts are small, so the next pass needs no trip", async () => {
    const log: string[] = [];
    const handle = createHandler(async () => module(log));
    await handle({ id: 1, method: "run", params: run });
    const res = await handle({ id: 2, method: "passTexts", params: { names: ["none-such"] } });
    const t = res.ok ? (res.result as PassTexts) : null;
    expect(t?.texts.map((x) => x.name)).toEqual(["ktir"]);
    expect(t?.sdscLines).toEqual([{ op: "k", lines: { from: 1, to: 2 } }]);
  });

  it("runs without the cache, quietly, when the store fails", async () => {
    const log: string[] = [];
    const handle = createHandler(
      async () => module(log),
      () => mapCache(new Map(), true),
    );
    const res = await handle({ id: 1, method: "run", params: run });
    expect(res.ok).toBe(true);
    const r = res.ok ? (res.result as RunResult) : null;
    expect(r?.compileCache?.outcome).toBe("off");
    expect(r?.compileCache?.note).toMatch(/compile cache unavailable \(quota exceeded\)/);
    expect(log).toEqual(["run off"]);
    const cleared = await handle({ id: 2, method: "clearCache", params: {} });
    expect(cleared.ok && (cleared.result as { note: string }).note).toMatch(/could not be cleared/);
  });

  it("says in the status line whether the compile hit the cache", () => {
    const result = pageResult(minimalResult());
    const res = (compileCache: RunResult["compileCache"]): RunResult => ({
      kind: "graph",
      fileName: "g.json",
      source: "",
      result,
      layout: { nodes: [], edges: [], width: 0, height: 0 } as never,
      digest: digestRun(result),
      io: null,
      ...(compileCache ? { compileCache } : {}),
    });
    expect(runStatusText(res({ outcome: "hit", compileMs: 12.4 }), 90)).toBe(
      "g · compiled (cache hit, 12 ms) and simulated in 90 ms",
    );
    expect(runStatusText(res({ outcome: "miss", compileMs: 1200 }), 2000)).toBe(
      "g · compiled (cold, 1200 ms) and simulated in 2000 ms",
    );
    expect(
      runStatusText(res({ outcome: "off", compileMs: 3, note: "compile cache unavailable" }), 9),
    ).toBe("g · compiled and simulated in 9 ms · compile cache unavailable");
    expect(runStatusText(res(undefined), 9)).toBe("g · compiled and simulated in 9 ms");
  });
});
