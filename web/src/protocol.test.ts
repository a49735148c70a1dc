import { describe, expect, it, vi } from "vitest";
import type {
  WasmRun,
  RunOptions,
  RunProgress,
  SpyreModule,
  SpyreSession,
  TraceEvent,
} from "./api";
import { digestBuffers, digestRun, isDigest } from "./digest";
import { toColumns, type EventColumns } from "./events";
import { CancelledError, WorkerClient, WorkerHost, type Port } from "./client";
import { checkRun, createHandler, toPlain } from "./handler";
import { minimalResult, pageResult } from "./testResult";
import { textsPending, withPassTexts } from "./session";
import {
  errorMessage,
  LocatedError,
  parsePassTexts,
  parseProgress,
  parseRequest,
  parseResponse,
  hydrateRun,
  readKernels,
  readPass,
  sendKernels,
  sendPass,
  transferables,
  type RunResult,
  type WireRunResult,
  type WorkerRequest,
} from "./protocol";

/** What the Rust session returns for a KTIR module: its buffers as the graph's outputs. */
function ktirRun(): WasmRun {
  const r = minimalResult();
  const spec = {
    name: "x",
    elem: "f32",
    elements: 4,
    shape: [4],
    address: null,
    role: "inOut" as const,
  };
  return {
    ...r,
    kind: "ktir",
    graph: { ...r.graph, outputs: [{ name: "x", dtype: "f32", shape: [4] }] },
    passes: [],
    run: {
      ...r.run,
      totalCycles: 7,
      outputsChecked: false,
      passed: false,
      functions: ["k"],
      buffers: [[spec, [0, 0, 0, 0]]],
    },
  };
}

/** A stub session: KTIR when the bytes read as MLIR, like the Rust session's detection. */
function stubSession(
  bytes: Uint8Array,
  fileName: string,
  run: (bytes: Uint8Array, fileName: string, options: RunOptions) => unknown,
  counts: { runs: number },
): SpyreSession {
  const ktir = /^\s*(module|func\.func)/.test(new TextDecoder().decode(bytes));
  let ran: unknown = null;
  return {
    kind: ktir ? "ktir" : "graph",
    run: (options, progress) => {
      counts.runs++;
      // Like the wasm session: reports as it goes (a Map, as serde may hand one over).
      progress?.(
        new Map<string, unknown>([
          ["phase", "execute"],
          ["done", 5n],
          ["total", 10n],
        ]) as never,
      );
      progress?.({ phase: "schedule", done: 3, total: 3 });
      ran = ktir ? ktirRun() : run(bytes, fileName, options);
      return ran;
    },
    traceJson: () => {
      if (ran === null) throw new Error("nothing has run yet");
      return ktir ? '{"traceEvents":[1]}' : '{"traceEvents":[]}';
    },
    ktirInputs: () => ({
      buffers: [{ name: "x", elem: "f32", elements: 4, shape: [4], address: null, role: "inOut" }],
      scratchpads: [],
      scalars: [],
      tensors: [],
      missing: [],
    }),
    runWithInputs: (_options, names) => {
      counts.runs++;
      if (names.includes("bad"))
        throw Object.assign(new Error("bad.npy: shape"), { input: "bad", role: "input" });
      ran = ktirRun();
      return ran;
    },
    bufferNpy: (name) => new TextEncoder().encode(`npy:${name}`),
    graphIo: () => ({
      inputs: [{ name: "a", dtype: "f32", shape: [2] }],
      outputs: [{ name: "y", dtype: "f32", shape: [2] }],
    }),
    runGraphWithInputs: (options, inputNames, _inputFiles, expectedNames) => {
      counts.runs++;
      if (expectedNames.includes("z"))
        throw Object.assign(new Error("no output z"), { input: "z", role: "expected" });
      ran = run(bytes, fileName, { ...options, inputs: inputNames } as RunOptions);
      return ran;
    },
    outputNpy: (name) => new TextEncoder().encode(`out:${name}`),
  };
}

function stubModule(
  run: (bytes: Uint8Array, fileName: string, options: RunOptions) => unknown = () =>
    minimalResult(),
  counts = { runs: 0 },
): SpyreModule {
  return {
    version: () => "0.0.0-test",
    listExamples: () => [{ name: "one", description: "first" }],
    exampleSource: (name) => {
      if (name !== "one") throw new Error(`unknown example ${name}`);
      return "{}";
    },
    machinePresets: () => ["spyre32", "tiny4"],
    verifyKtir: (text: string) =>
      text.includes("bad")
        ? [{ severity: "error", message: "bad op", line: 2, column: 3, start: 5, end: 8 }]
        : [],
    open: (bytes, fileName) => stubSession(bytes, fileName, run, counts),
  };
}

describe("message parsing", () => {
  it("accepts well-formed requests and rejects the rest", () => {
    expect(parseRequest({ id: 1, method: "init", params: {} })).toEqual({
      id: 1,
      method: "init",
      params: {},
    });
    expect(
      parseRequest({ id: 2, method: "run", params: { target: { kind: "example", name: "x" } } }),
    ).not.toBeNull();
    const bytes = new Uint8Array([123, 125]);
    expect(
      parseRequest({
        id: 3,
        method: "run",
        params: {
          target: { kind: "file", bytes, fileName: "a.json" },
          options: { machine: "tiny4" },
        },
      }),
    ).toEqual({
      id: 3,
      method: "run",
      params: {
        target: { kind: "file", bytes, fileName: "a.json" },
        options: { machine: "tiny4" },
      },
    });
    expect(
      parseRequest({ id: 4, method: "run", params: { target: { kind: "file", bytes: "{}" } } }),
    ).toBeNull();
    expect(
      parseRequest({
        id: 4,
        method: "run",
        params: { target: { kind: "example", name: "x" }, options: { seed: -1 } },
      }),
    ).toBeNull();
    const compile = {
      allocator: "best-fit",
      attentionBlock: 32,
      doubleBuffer: false,
      outOfBounds: "mask",
      places: { a: 64 },
      tp: 2,
      system: "ring4",
      allreduce: "tree",
    };
    expect(
      parseRequest({
        id: 4,
        method: "run",
        params: { target: { kind: "example", name: "x" }, options: compile },
      }),
    ).toMatchObject({ params: { options: compile } });
    for (const bad of [
      { attentionBlock: 0 },
      { doubleBuffer: "no" },
      { outOfBounds: "wrap" },
      { places: { a: -1 } },
      { allocator: 1 },
      { tp: 0 },
      { tp: 1.5 },
      { system: 4 },
      { allreduce: "star" },
    ]) {
      expect(
        parseRequest({
          id: 4,
          method: "run",
          params: { target: { kind: "example", name: "x" }, options: bad },
        }),
      ).toBeNull();
    }
    expect(parseRequest({ id: 4, method: "verifyKtir", params: { text: 1 } })).toBeNull();
    expect(parseRequest({ id: 4, method: "verifyKtir", params: { text: "x" } })).not.toBeNull();
    expect(parseRequest({ id: 5, method: "nope", params: {} })).toBeNull();
    expect(parseRequest({ method: "init", params: {} })).toBeNull();
    expect(parseRequest(null)).toBeNull();
    expect(parseRequest("init")).toBeNull();
  });

  it("parses responses, filling a message for a malformed error", () => {
    expect(parseResponse({ id: 1, ok: true, result: 5 })).toEqual({ id: 1, ok: true, result: 5 });
    expect(parseResponse({ id: 2, ok: false, error: {} })).toEqual({
      id: 2,
      ok: false,
      error: { message: "unknown worker error" },
    });
    expect(parseResponse({ id: "x", ok: true })).toBeNull();
  });

  it("turns anything thrown into a message", () => {
    expect(errorMessage(new Error("at line 3: bad"))).toBe("at line 3: bad");
    expect(errorMessage("plain")).toBe("plain");
    expect(errorMessage({ message: "obj" })).toBe("obj");
    expect(errorMessage(42)).toBe("42");
    expect(errorMessage(undefined)).toBe("undefined");
  });
});

describe("result normalisation", () => {
  it("converts Maps and BigInts to plain data", () => {
    expect(
      toPlain(
        new Map<string, unknown>([
          ["a", 1n],
          ["b", [new Map([["c", 2]])]],
        ]),
      ),
    ).toEqual({
      a: 1,
      b: [{ c: 2 }],
    });
  });

  it("trusts the typed run and checks only its outline", () => {
    const r = checkRun(minimalResult());
    expect(r.run.summary.totalCycles).toBe(10);
    expect(() => checkRun({ passes: [] })).toThrow(/unexpected result/);
    expect(() => checkRun(null)).toThrow(/unexpected result/);
    const noSummary = minimalResult() as unknown as { run: { summary: unknown } };
    noSummary.run.summary = null;
    expect(() => checkRun(noSummary)).toThrow(/run.summary is missing/);
  });
});

describe("worker handler", () => {
  it("takes the session's events as columns and sends them on without packing them again", async () => {
    const events = toColumns([
      {
        unit: "dma",
        core: 0,
        start: 0,
        end: 4,
        bytes: 128,
        srcStop: 1,
        dstStop: 0,
        route: [1, 0],
        op: "ktdp.load",
        line: 3,
      },
    ]);
    const base = minimalResult();
    const session = { ...base, run: { ...base.run, events } };
    expect(checkRun(session).run.events).toEqual(events);
    const handle = createHandler(async () => stubModule(() => session));
    const res = await handle({
      id: 1,
      method: "run",
      params: { target: { kind: "example", name: "one" }, options: {} },
    });
    expect(res.ok).toBe(true);
    const sent = res.ok
      ? ((res.result as RunResult).result.run.events as unknown as EventColumns)
      : null;
    // The same typed arrays: neither copied field by field nor rebuilt from objects.
    expect(sent?.start).toBe(events.start);
    expect(sent?.route).toBe(events.route);
    expect(sent?.ops).toEqual(["ktdp.load"]);
    const broken = { ...base, run: { ...base.run, events: { ...events, count: 2 } } };
    expect(() => checkRun(broken)).toThrow(/neither a list nor columns/);
  });

  it("answers init, run (example, graph file, KTIR file), verifyKtir and trace", async () => {
    const counts = { runs: 0 };
    const handle = createHandler(async () => stubModule(undefined, counts));
    const init = await handle({ id: 1, method: "init", params: {} });
    expect(init).toEqual({
      id: 1,
      ok: true,
      result: {
        version: "0.0.0-test",
        examples: [{ name: "one", description: "first" }],
        machines: ["spyre32", "tiny4"],
      },
    });
    const ex = await handle({
      id: 2,
      method: "run",
      params: { target: { kind: "example", name: "one" }, options: {} },
    });
    expect(ex.ok).toBe(true);
    const exr = ex.ok ? (ex.result as RunResult) : null;
    expect(exr?.fileName).toBe("one.json");
    expect(exr?.kind).toBe("graph");
    expect(exr?.source).toBe("{}");
    const bytes = new TextEncoder().encode("{}");
    const src = await handle({
      id: 3,
      method: "run",
      params: { target: { kind: "file", bytes, fileName: "a.json" }, options: {} },
    });
    expect(src.id).toBe(3);
    expect(src.ok).toBe(true);
    const mlir = await handle({
      id: 4,
      method: "run",
      params: {
        target: { kind: "file", bytes: new TextEncoder().encode("module {}"), fileName: "k.mlir" },
        options: {},
      },
    });
    const kr = mlir.ok ? (mlir.result as RunResult) : null;
    expect(kr?.kind).toBe("ktir");
    expect(kr?.result.passes).toEqual([]);
    expect(kr?.result.run.outputsChecked).toBe(false);
    expect(kr?.result.run.totalCycles).toBe(7);
    expect(kr?.result.graph.outputs[0]?.name).toBe("x");
    // A trace of what just ran reads the session's stored schedule: nothing runs again.
    const runs = counts.runs;
    const ktirTrace = await handle({
      id: 9,
      method: "trace",
      params: {
        target: { kind: "file", bytes: new TextEncoder().encode("module {}"), fileName: "k.mlir" },
        options: {},
      },
    });
    expect(ktirTrace).toEqual({ id: 9, ok: true, result: { json: '{"traceEvents":[1]}' } });
    expect(counts.runs).toBe(runs);
    const diags = await handle({ id: 5, method: "verifyKtir", params: { text: "a\nbad" } });
    expect(diags).toMatchObject({ ok: true, result: [{ line: 2, column: 3, severity: "error" }] });
    const trace = await handle({
      id: 6,
      method: "trace",
      params: { target: { kind: "example", name: "one" }, options: {} },
    });
    expect(trace).toEqual({ id: 6, ok: true, result: { json: '{"traceEvents":[]}' } });
    // Another source than the last run's is opened and run first.
    expect(counts.runs).toBe(runs + 1);
  });

  it("keeps the run on screen for trace and outputs when a comparison runs aside", async () => {
    const counts = { runs: 0 };
    const handle = createHandler(async () => stubModule(undefined, counts));
    const mlir = {
      kind: "file" as const,
      bytes: new TextEncoder().encode("module {}"),
      fileName: "k.mlir",
    };
    expect((await handle({ id: 1, method: "run", params: { target: mlir, options: {} } })).ok).toBe(
      true,
    );
    const aside = {
      id: 2,
      method: "run",
      params: {
        target: { kind: "example", name: "one" },
        options: { machine: "tiny4" },
        aside: true,
      },
    };
    expect(parseRequest(aside)).toMatchObject({ params: { aside: true } });
    expect((await handle(aside)).ok).toBe(true);
    const runs = counts.runs;
    // The KTIR module's buffer (not the graph's output) is what a download gets.
    expect(await handle({ id: 3, method: "outputNpy", params: { name: "x" } })).toMatchObject({
      ok: true,
      result: { bytes: new TextEncoder().encode("npy:x") },
    });
    // Its trace reads the stored schedule: nothing runs again.
    const trace = await handle({ id: 4, method: "trace", params: { target: mlir, options: {} } });
    expect(trace).toEqual({ id: 4, ok: true, result: { json: '{"traceEvents":[1]}' } });
    expect(counts.runs).toBe(runs);
  });

  it("runs with the user's data, lists what a run takes and hands outputs over as .npy", async () => {
    const counts = { runs: 0 };
    let opened: unknown = null;
    const module = stubModule(undefined, counts);
    const open = module.open;
    module.open = (bytes, fileName, extra) => {
      opened = extra?.map((f) => f.name);
      return open(bytes, fileName, extra);
    };
    const handle = createHandler(async () => module);
    const npy = new Uint8Array([0x93, 1, 2]);
    const graph = await handle({
      id: 1,
      method: "run",
      params: {
        target: {
          kind: "file",
          bytes: new TextEncoder().encode("{}"),
          fileName: "m.onnx",
          extra: [{ name: "w.bin", bytes: npy }],
        },
        options: {},
        data: { inputs: [{ name: "a", bytes: npy }], expected: [{ name: "y", bytes: npy }] },
      },
    });
    expect(opened).toEqual(["w.bin"]);
    const gr = graph.ok ? (graph.result as RunResult) : null;
    expect(gr?.io).toEqual({
      kind: "graph",
      inputs: [{ name: "a", dtype: "f32", shape: [2] }],
      outputs: [{ name: "y", dtype: "f32", shape: [2] }],
    });
    expect(await handle({ id: 2, method: "outputNpy", params: { name: "y" } })).toEqual({
      id: 2,
      ok: true,
      result: { bytes: new TextEncoder().encode("out:y") },
    });
    const bad = await handle({
      id: 3,
      method: "run",
      params: {
        target: { kind: "file", bytes: new TextEncoder().encode("{}"), fileName: "m.json" },
        options: {},
        data: { inputs: [], expected: [{ name: "z", bytes: npy }] },
      },
    });
    expect(bad).toMatchObject({ ok: false, error: { input: "z", role: "expected" } });
    const mlir = new TextEncoder().encode("module {}");
    const k = await handle({
      id: 4,
      method: "run",
      params: {
        target: { kind: "file", bytes: mlir, fileName: "k.mlir" },
        options: { args: { n: "4" } },
        data: { inputs: [{ name: "x", bytes: npy }], expected: [] },
      },
    });
    const kr = k.ok ? (k.result as RunResult) : null;
    expect(kr?.io?.kind).toBe("ktir");
    expect(await handle({ id: 5, method: "outputNpy", params: { name: "x" } })).toMatchObject({
      ok: true,
      result: { bytes: new TextEncoder().encode("npy:x") },
    });
    // Malformed data is refused before anything runs.
    expect(
      parseRequest({
        id: 6,
        method: "run",
        params: {
          target: { kind: "example", name: "one" },
          options: {},
          data: { inputs: [{ name: 1 }], expected: [] },
        },
      }),
    ).toBeNull();
    expect(
      parseRequest({
        id: 7,
        method: "run",
        params: { target: { kind: "example", name: "one" }, options: { args: { n: 4 } } },
      }),
    ).toBeNull();
  });

  it("passes timingOnly to the module and a timing-only run's flag and assumptions back", async () => {
    let seen: unknown = null;
    const handle = createHandler(async () =>
      stubModule((_b, _f, options) => {
        seen = options;
        const r = minimalResult();
        return {
          ...r,
          run: { ...r.run, passed: false, timingOnly: true, assumptions: ["ids: identity"] },
        };
      }),
    );
    const res = await handle({
      id: 1,
      method: "run",
      params: { target: { kind: "example", name: "one" }, options: { timingOnly: true } },
    });
    expect(seen).toMatchObject({ timingOnly: true });
    const run = res.ok ? (res.result as RunResult).result.run : null;
    expect(run?.timingOnly).toBe(true);
    expect(run?.assumptions).toEqual(["ids: identity"]);
    expect(
      parseRequest({
        id: 2,
        method: "run",
        params: { target: { kind: "example", name: "one" }, options: { timingOnly: "yes" } },
      }),
    ).toBeNull();
  });

  it("returns thrown errors as error responses with the same id", async () => {
    const handle = createHandler(async () =>
      stubModule((_b: Uint8Array, fileName: string) => {
        throw new Error(`${fileName}:1:2: expected '{'`);
      }),
    );
    expect(
      await handle({
        id: 7,
        method: "run",
        params: {
          target: { kind: "file", bytes: new Uint8Array([120]), fileName: "b.json" },
          options: {},
        },
      }),
    ).toEqual({
      id: 7,
      ok: false,
      // The file opened: what a run of it takes comes with the failure.
      error: {
        message: "b.json:1:2: expected '{'",
        io: {
          kind: "graph",
          inputs: [{ name: "a", dtype: "f32", shape: [2] }],
          outputs: [{ name: "y", dtype: "f32", shape: [2] }],
        },
      },
    });
    expect(
      await handle({
        id: 8,
        method: "run",
        params: { target: { kind: "example", name: "zzz" }, options: {} },
      }),
    ).toEqual({
      id: 8,
      ok: false,
      error: { message: "unknown example zzz" },
    });
    expect(await handle({ id: 9, method: "bogus" })).toMatchObject({ id: 9, ok: false });
  });

  it("sends what a KTIR module takes with a run that fails for want of a scalar", async () => {
    const module = stubModule();
    const open = module.open;
    module.open = (bytes, fileName, extra) => {
      const session = open(bytes, fileName, extra);
      const inputs = (options: RunOptions): unknown => ({
        buffers: [],
        scratchpads: [],
        scalars: [{ name: "n", dtype: "index", functions: ["k"], value: options.args?.n ?? null }],
        tensors: [],
        missing: options.args?.n ? [] : ["--arg n=VALUE (index; an argument of @k)"],
      });
      session.ktirInputs = inputs;
      session.run = (options) => {
        if (!options.args?.n) {
          throw Object.assign(new Error("missing inputs (1):\n  --arg n=VALUE"), {
            stage: "ktir",
          });
        }
        return ktirRun();
      };
      return session;
    };
    const handle = createHandler(async () => module);
    const target = {
      kind: "file",
      bytes: new TextEncoder().encode("func.func @k(%n: index) {}"),
      fileName: "k.mlir",
    };
    const failed = await handle({ id: 1, method: "run", params: { target, options: {} } });
    expect(failed).toMatchObject({
      id: 1,
      ok: false,
      error: {
        message: expect.stringMatching(/missing inputs/),
        stage: "ktir",
        io: {
          kind: "ktir",
          inputs: {
            scalars: [{ name: "n", value: null }],
            missing: ["--arg n=VALUE (index; an argument of @k)"],
          },
        },
      },
    });
    // The page side keeps the list on the error it raises.
    const res = parseResponse(structuredClone(failed));
    expect(res && !res.ok && res.error.io?.kind).toBe("ktir");
    const err = new LocatedError(res && !res.ok ? res.error : { message: "" });
    expect(err.io?.kind === "ktir" && err.io.inputs.missing).toHaveLength(1);
    expect(err.location).toEqual({ stage: "ktir" });
    // With the value, it runs and lists it as given.
    const ok = await handle({
      id: 2,
      method: "run",
      params: { target, options: { args: { n: "4" } } },
    });
    const io = ok.ok ? (ok.result as RunResult).io : null;
    expect(io?.kind === "ktir" && io.inputs.scalars[0]?.value).toBe("4");
    expect(io?.kind === "ktir" && io.inputs.missing).toEqual([]);
    // A source that does not open has nothing to list; a malformed list is dropped.
    expect(
      parseResponse({ id: 3, ok: false, error: { message: "x", io: { kind: "ktir" } } }),
    ).toEqual({ id: 3, ok: false, error: { message: "x" } });
  });

  it("says plainly when the wasm module traps", async () => {
    const handle = createHandler(async () =>
      stubModule(() => {
        throw new WebAssembly.RuntimeError("unreachable");
      }),
    );
    const res = await handle({
      id: 1,
      method: "run",
      params: { target: { kind: "example", name: "one" }, options: {} },
    });
    expect(!res.ok && res.error.message).toMatch(/wasm module crashed \(unreachable\)/);
  });

  it("reports a module that fails to load, and retries on the next request", async () => {
    let attempts = 0;
    const handle = createHandler(async () => {
      attempts++;
      if (attempts === 1) throw new Error("404 spyre_bg.wasm");
      return stubModule();
    });
    const first = await handle({ id: 1, method: "init", params: {} });
    expect(first).toMatchObject({ ok: false });
    expect(!first.ok && first.error.message).toMatch(/could not load the wasm module: 404/);
    expect(await handle({ id: 2, method: "init", params: {} })).toMatchObject({ ok: true });
  });
});

/** Connects a WorkerClient to a handler in-process, as the real worker would. */
class LoopbackPort implements Port {
  private messageListeners: ((ev: { data: unknown }) => void)[] = [];
  private errorListeners: ((ev: { message?: string }) => void)[] = [];
  sent: WorkerRequest[] = [];
  constructor(private readonly reply: ((req: WorkerRequest) => Promise<unknown>) | null) {}
  postMessage(message: WorkerRequest): void {
    this.sent.push(message);
    const reply = this.reply;
    if (reply) void reply(structuredClone(message)).then((r) => this.emit(structuredClone(r)));
  }
  emit(data: unknown): void {
    for (const l of this.messageListeners) l({ data });
  }
  fail(message: string): void {
    for (const l of this.errorListeners) l({ message });
  }
  addEventListener(type: "message" | "error", listener: (ev: never) => void): void {
    if (type === "message") this.messageListeners.push(listener as (ev: { data: unknown }) => void);
    else this.errorListeners.push(listener as (ev: { message?: string }) => void);
  }
}

describe("worker client", () => {
  it("round-trips typed calls with ids", async () => {
    const handle = createHandler(async () => stubModule());
    const port = new LoopbackPort(handle);
    const client = new WorkerClient(port, 1000);
    const [a, b] = await Promise.all([
      client.call("init", {}),
      client.call("run", { target: { kind: "example", name: "one" }, options: {} }),
    ]);
    expect(a.version).toBe("0.0.0-test");
    expect(b.result.passes[0]!.name).toBe("ktir");
    expect(b.layout.nodes).toEqual([]);
    expect(new Set(port.sent.map((m) => m.id)).size).toBe(2);
    expect(client.inFlight).toBe(0);
  });

  it("rejects with the worker's error message", async () => {
    const port = new LoopbackPort(createHandler(async () => stubModule()));
    const client = new WorkerClient(port, 1000);
    await expect(
      client.call("run", { target: { kind: "example", name: "zzz" }, options: {} }),
    ).rejects.toThrow("unknown example zzz");
  });

  it("ignores unknown ids and rejects everything when the worker dies", async () => {
    const port = new LoopbackPort(null);
    const client = new WorkerClient(port, 0);
    const p = client.call("init", {});
    port.emit({ id: 999, ok: true, result: 1 });
    port.emit("garbage");
    expect(client.inFlight).toBe(1);
    port.fail("SyntaxError in worker.js");
    await expect(p).rejects.toThrow(/worker failed: SyntaxError/);
    expect(client.inFlight).toBe(0);
  });

  it("times out a request that gets no answer", async () => {
    const client = new WorkerClient(new LoopbackPort(null), 20);
    await expect(client.call("init", {})).rejects.toThrow(/did not answer "init" within 20 ms/);
    expect(client.inFlight).toBe(0);
  });
});

describe("progress", () => {
  it("parses progress reports and rejects malformed ones", () => {
    expect(parseProgress({ id: 3, progress: { phase: "execute", done: 1, total: 4 } })).toEqual({
      id: 3,
      progress: { phase: "execute", done: 1, total: 4 },
    });
    expect(
      parseProgress({
        id: 3,
        progress: { phase: "compile", done: 200, total: 700, pass: "layout" },
      }),
    ).toEqual({ id: 3, progress: { phase: "compile", done: 200, total: 700, pass: "layout" } });
    expect(
      parseProgress({ id: 3, progress: { phase: "compile", done: 0, total: 700, pass: 5 } }),
    ).toEqual({ id: 3, progress: { phase: "compile", done: 0, total: 700 } });
    expect(parseProgress({ id: 3, progress: { phase: "other", done: 1, total: 4 } })).toBeNull();
    expect(parseProgress({ id: 3, progress: { phase: "execute", done: -1, total: 4 } })).toBeNull();
    expect(parseProgress({ id: 3, ok: true, result: 1 })).toBeNull();
    expect(parseProgress(null)).toBeNull();
  });

  it("reaches the caller of a run before its answer, with the run's id", async () => {
    const handle = createHandler(async () => stubModule());
    const posted: unknown[] = [];
    await handle(
      { id: 7, method: "run", params: { target: { kind: "example", name: "one" }, options: {} } },
      (m) => posted.push(m),
    );
    expect(posted).toEqual([
      { id: 7, progress: { phase: "execute", done: 5, total: 10 } },
      { id: 7, progress: { phase: "schedule", done: 3, total: 3 } },
    ]);

    // Through a client: the progress callback of that call only.
    const port = new LoopbackPort(null);
    const client = new WorkerClient(port, 0);
    const seen: RunProgress[] = [];
    const run = client.call("run", { target: { kind: "example", name: "one" }, options: {} }, (p) =>
      seen.push(p),
    );
    const id = port.sent[0]!.id;
    port.emit({ id, progress: { phase: "execute", done: 1, total: 2 } });
    port.emit({ id: id + 1, progress: { phase: "execute", done: 2, total: 2 } });
    expect(seen).toEqual([{ phase: "execute", done: 1, total: 2 }]);
    expect(client.inFlight).toBe(1);
    port.emit({ id, ok: false, error: { message: "stop" } });
    await expect(run).rejects.toThrow("stop");
  });
});

describe("worker host", () => {
  it("restarts the worker, rejecting what was pending as cancelled", async () => {
    const ports: (LoopbackPort & { terminated: boolean })[] = [];
    const host = new WorkerHost(() => {
      const p = Object.assign(
        new LoopbackPort(ports.length === 0 ? null : createHandler(async () => stubModule())),
        {
          terminated: false,
          terminate(): void {
            p.terminated = true;
          },
        },
      );
      ports.push(p);
      return p;
    });
    const slow = host.call("init", {});
    expect(host.inFlight).toBe(1);
    host.restart();
    await expect(slow).rejects.toBeInstanceOf(CancelledError);
    expect(ports[0]!.terminated).toBe(true);
    expect(ports.length).toBe(2);
    await expect(host.call("init", {})).resolves.toMatchObject({ version: "0.0.0-test" });
    // A stop by the time budget says so.
    const budget = host.call("init", {});
    host.restart("time budget", "budget");
    await expect(budget).rejects.toMatchObject({ reason: "budget", message: "time budget" });
    expect(ports.length).toBe(3);
  });
});

describe("located errors", () => {
  it("carry the driver error's line and column to the page", async () => {
    const { LocatedError, describeLocation, parseResponse } = await import("./protocol");
    const res = parseResponse({
      id: 1,
      ok: false,
      error: { message: "ktir: bad", stage: "ktir", file: "k.mlir", line: 2, column: 8 },
    });
    expect(res).toEqual({
      id: 1,
      ok: false,
      error: { message: "ktir: bad", stage: "ktir", file: "k.mlir", line: 2, column: 8 },
    });
    if (!res || res.ok) throw new Error("expected an error");
    const err = new LocatedError(res.error);
    expect(err.message).toBe("ktir: bad");
    expect(describeLocation(err)).toBe("line 2, column 8");
    expect(describeLocation(new Error("no location"))).toBe("");
    expect(describeLocation({ line: 4 })).toBe("line 4");
  });
});

describe("pass texts kept in the compile store", () => {
  it("parses the request and the answer, dropping entries of the wrong shape", () => {
    expect(parseRequest({ id: 3, method: "passTexts", params: {} })).toEqual({
      id: 3,
      method: "passTexts",
      params: {},
    });
    expect(parseRequest({ id: 4, method: "passTexts", params: { names: ["sdsc"] } })).toEqual({
      id: 4,
      method: "passTexts",
      params: { names: ["sdsc"] },
    });
    expect(parseRequest({ id: 5, method: "passTexts", params: { names: "sdsc" } })).toBeNull();
    expect(parseRequest({ id: 6, method: "passTexts", params: { names: [1] } })).toBeNull();
    expect(
      parsePassTexts({
        texts: [{ name: "sdsc", text: "{}" }, { name: 1, text: "x" }, null],
        sdscLines: [
          { op: "a", lines: { from: 1, to: 4 } },
          { op: "b", lines: { from: "x", to: 2 } },
        ],
        outcome: "hit",
        note: "n",
      }),
    ).toEqual({
      texts: [{ name: "sdsc", text: "{}" }],
      sdscLines: [{ op: "a", lines: { from: 1, to: 4 } }],
      note: "n",
    });
    expect(parsePassTexts({ texts: [] })).toBeNull();
    expect(parsePassTexts(null)).toBeNull();
  });

  it("fills each pass without a text by name and each op's SDSC lines", () => {
    const r = minimalResult();
    const pass = (name: string, text: string | null) => ({
      name,
      title: name,
      text,
      data: { n: name },
    });
    const apart = pageResult({
      ...r,
      passesApart: true,
      passes: [
        pass("layout", null),
        pass("tensor-parallel", "shard"),
        pass("sdsc", null),
        pass("ktir", "k"),
      ],
      sourceMap: {
        ...r.sourceMap,
        ops: [
          { name: "a", kind: "matmul", node: null, kernel: null, sdscLines: null },
          { name: "b", kind: "add", node: null, kernel: null, sdscLines: null },
        ],
      },
    });
    expect(textsPending(apart)).toBe(true);
    const filled = withPassTexts(apart, {
      texts: [
        { name: "sdsc", text: "{ }" },
        { name: "layout", text: "program" },
        { name: "ktir", text: "other" },
      ],
      sdscLines: [{ op: "b", lines: { from: 2, to: 3 } }],
    });
    expect(textsPending(filled)).toBe(false);
    expect(filled.passesApart).toBe(false);
    // The texts go by name; a pass that had one (or the run added) keeps it; data stays.
    expect(filled.passes.map((p) => [p.name, p.text, p.data])).toEqual([
      ["layout", "program", { n: "layout" }],
      ["tensor-parallel", "shard", { n: "tensor-parallel" }],
      ["sdsc", "{ }", { n: "sdsc" }],
      ["ktir", "k", { n: "ktir" }],
    ]);
    expect(filled.sourceMap.ops.map((o) => o.sdscLines)).toEqual([null, { from: 2, to: 3 }]);
    // The run given is left as it was.
    expect(apart.passes[0]?.text).toBeNull();
    // A text the answer lacks stays pending.
    expect(textsPending(withPassTexts(apart, { texts: [], sdscLines: [] }))).toBe(true);
  });
});

describe("a run on the wire", () => {
  /** A run of `events` on a one-core machine, with two passes carrying data. */
  function wireOf(events: TraceEvent[]): WireRunResult {
    const r = minimalResult();
    const passes = [
      { name: "layout", title: "Layout", text: "l", data: { tensors: [1, 2] } },
      { name: "sdsc", title: "SDSC", text: null, data: null },
    ];
    return {
      kind: "graph",
      fileName: "g.json",
      source: "",
      result: {
        ...r,
        passes: passes.map(sendPass),
        run: { ...r.run, events: toColumns(events) },
      },
      layout: { nodes: [], edges: [], width: 0, height: 0 } as never,
      io: null,
    };
  }
  const events: TraceEvent[] = [0, 1, 2].map((i) => ({
    unit: i === 1 ? "pt" : "dma",
    core: 0,
    start: 10 - i,
    end: 20,
    bytes: 8,
    srcStop: null,
    dstStop: null,
    route: [0],
    op: "op",
    line: 1,
  }));

  it("reads each pass's data from its text once, when first read, and keeps it through the texts", () => {
    const page = hydrateRun(wireOf(events));
    const parse = vi.spyOn(JSON, "parse");
    try {
      const filled = withPassTexts(page.result, {
        texts: [{ name: "sdsc", text: "{}" }],
        sdscLines: [],
      });
      expect(parse).not.toHaveBeenCalled();
      expect(filled.passes.map((p) => [p.name, p.text, p.data])).toEqual([
        ["layout", "l", { tensors: [1, 2] }],
        ["sdsc", "{}", null],
      ]);
      expect(page.result.passes[0]?.data).toEqual({ tensors: [1, 2] });
      // Once per pass, whichever copy reads it.
      expect(parse).toHaveBeenCalledTimes(2);
    } finally {
      parse.mockRestore();
    }
    const bad = readPass({ name: "x", title: "x", text: null, dataJson: "{" });
    expect(bad.data).toBeNull();
  });

  it("moves the worker's digest by transfer and uses it when it fits the run's events", () => {
    const wire = wireOf(events);
    const page = pageResult({ ...minimalResult(), run: { ...minimalResult().run, events } });
    const digest = digestRun(page);
    expect([...digest.ring.transfers]).toEqual([2, 0]);
    const sent = { ...wire, digest };
    const buffers = transferables({ id: 1, ok: true, result: sent });
    for (const b of digestBuffers(digest)) expect(buffers).toContain(b);
    expect(hydrateRun(sent).digest).toBe(digest);
    // Made on the page when missing, or when it names events the run does not have.
    expect([...hydrateRun(wire).digest.ring.transfers]).toEqual([2, 0]);
    const wrong = { ...digest, ring: { ...digest.ring, transfers: Int32Array.from([7]) } };
    expect(isDigest(wrong, 3)).toBe(false);
    expect([...hydrateRun({ ...wire, digest: wrong }).digest.ring.transfers]).toEqual([2, 0]);
  });
});

describe("kernels' events on the wire", () => {
  const map = {
    nodes: [],
    ops: [],
    kernels: [
      { func: "a", lines: { from: 1, to: 2 }, op: null, events: [4, 1, 9] },
      { func: "b", lines: { from: 3, to: 4 }, op: null, events: [] },
      { func: "c", lines: { from: 5, to: 6 }, op: null, events: [2] },
    ],
  };

  it("packs every kernel's list in one array and reads each back when first read", () => {
    const wire = sendKernels(map);
    expect(wire.kernels.every((k) => !("events" in k))).toBe(true);
    expect([...(wire.kernelEvents?.starts ?? [])]).toEqual([0, 3, 3, 4]);
    const page = readKernels(wire);
    expect(page.kernels.map((k) => k.events)).toEqual([[4, 1, 9], [], [2]]);
    expect(page.kernels[0]?.events).toBe(page.kernels[0]?.events);
    expect(page.kernels.map((k) => k.func)).toEqual(["a", "b", "c"]);
    // A kernel that came with its list keeps it.
    expect(readKernels(map).kernels[2]?.events).toEqual([2]);
  });

  it("gives no events rather than wrong ones when the packed lists do not fit", () => {
    const wire = sendKernels(map);
    const short = { ...wire, kernels: wire.kernels.slice(0, 2) };
    expect(readKernels(short).kernels.map((k) => k.events)).toEqual([[], []]);
    const starts = Uint32Array.from([0, 3, 2, 4]);
    const bent = { ...wire, kernelEvents: { starts, items: wire.kernelEvents!.items } };
    expect(readKernels(bent).kernels.map((k) => k.events)).toEqual([[], [], []]);
  });
});
