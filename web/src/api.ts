// The contract of the wasm module built from crates/wasm (wasm-pack --target web,
// out-name "spyre"). Only the worker calls the module; everything else sees these
// plain-data types, delivered through worker messages.

export interface ExampleInfo {
  name: string;
  description: string;
  /** Too large to run with numbers: run timing-only. */
  timingOnly?: boolean;
}

// The data the wasm module returns: generated from the Rust types (web/src/generated,
// checked against them by the driver's tests), under the names the views use.
import type { EventColumns, EventTable } from "./events";
import type {
  BufferSpec,
  DiagnosticView,
  EventView,
  GraphView,
  KernelLink,
  MachineView,
  NodeView,
  OutputCheck,
  PassView,
  Run,
  RunResult,
  SourceMap,
  StopView,
  SummaryView,
  TensorView,
} from "./generated/types";

export type * from "./generated/types";
export type TensorInfo = TensorView;
export type GraphNode = NodeView;
export type GraphInfo = GraphView;
/** One pass snapshot, in pipeline order ("import", ..., "sdsc" (JSON), "ktir" (MLIR text)). */
export type PassSnapshot = PassView;
export type StopKind = StopView["kind"];
/** A ring stop, in ring order. For cores, `index` is the core id. */
export type RingStop = StopView;
export type MachineInfo = MachineView;
export type { OutputCheck, BufferSpec };
export type EventUnit = EventView["unit"];
/**
 * One trace event; times are in cycles. `srcStop`/`dstStop` are ring stop positions
 * (indexes into `MachineInfo.stops`) for transfers, null for compute.
 */
export type TraceEvent = EventView;
export type RunSummary = SummaryView;
/**
 * The simulation of a graph or a KTIR module; `passed` means something only when
 * `outputsChecked`. Its events are a table of columns (events.ts), not a list of objects.
 */
export type RunInfo = Omit<RunResult, "events"> & { events: EventTable };
/** A verifier diagnostic; line and column are 1-based. */
export type Diagnostic = DiagnosticView;
/**
 * One run of a graph or a KTIR module, as the session returns it: the wasm module gives the
 * events as columns; a result made by hand (tests) may list them.
 */
export type WasmRun = Omit<Run, "run"> & {
  run: Omit<RunResult, "events"> & { events: RunResult["events"] | EventColumns };
};
/**
 * A pass snapshot as the worker sends it: its structured data as JSON text, read on the page
 * the first time a view reads `data`. A full model's snapshots hold some 600,000 values: as
 * objects they took the page's thread a third of a second to receive.
 */
export type WirePassView = Omit<PassView, "data"> & { dataJson: string };
/** Lists packed in one array, by transfer: list `i` is `items[starts[i] .. starts[i + 1]]`. */
export interface PackedLists {
  starts: Uint32Array;
  items: Int32Array;
}
/**
 * A source map as the worker sends it: each kernel's event indexes (a full model's 200,000,
 * in a thousand lists) packed in `kernelEvents`, which took the page a tenth of a second to
 * receive as lists. A kernel may also come with its list, as the session made it.
 */
export type WireSourceMap = Omit<SourceMap, "kernels"> & {
  kernels: (KernelLink | Omit<KernelLink, "events">)[];
  kernelEvents?: PackedLists;
};
/**
 * One run of a graph or a KTIR module, as the worker sends it: events as columns, each
 * pass's data as text (a pass may also come as the session made it) and the kernels' events
 * packed.
 */
export type WirePipelineResult = Omit<Run, "run" | "passes" | "sourceMap"> & {
  passes: (PassView | WirePassView)[];
  sourceMap: WireSourceMap;
  run: Omit<RunResult, "events"> & { events: EventColumns };
};
/** One run of a graph or a KTIR module, as the page holds it. */
export type PipelineResult = Omit<Run, "run"> & { run: RunInfo };

/** Options of a run; every field optional. */
export interface RunOptions {
  machine?: string;
  seed?: number;
  ktir?: string;
  /** Timing only: tensors carry shapes, no numbers are computed or checked. */
  timingOnly?: boolean;
  /** KTIR modules: scalar argument values as text, by name (typed by the signature). */
  args?: Record<string, string>;
  /** Model graphs: the scratchpad allocator ("greedy", "first-fit", "best-fit"). */
  allocator?: string;
  /** Model graphs: online-softmax attention over blocks of this many keys. */
  attentionBlock?: number;
  /** Model graphs: double-buffer the loads of time loops (default true). */
  doubleBuffer?: boolean;
  /** Model graphs: fuse runs of elementwise ops into one kernel (default true). */
  fuse?: boolean;
  /** KTIR modules: "error" (default) or "mask" for points outside their views. */
  outOfBounds?: string;
  /** KTIR modules: fixed DRAM element addresses of buffers, by name. */
  places?: Record<string, number>;
  /** Model graphs: also run tensor-parallel over this many cards (`result.tp`). */
  tp?: number;
  /** With `tp`: a system preset name or a system description's JSON text. */
  system?: string;
  /** With `tp`: "auto" (default), "ring" or "tree". */
  allreduce?: string;
  /** Model graphs: padding rule, queries padded to this many tokens (default 32). */
  queryAlign?: number;
  /** Model graphs: padding rule, KV length aligned to this (default 256). */
  kvAlign?: number;
  /** Model graphs: padding rule, the alignment of decode-only batches (default 1). */
  decodeAlign?: number;
  /**
   * Leave the pass snapshot texts out of the result (`passesApart`), for `fillPasses` to give
   * when a view asks: the worker's runs for the page set it, the page never does.
   */
  textsApart?: boolean;
}

/**
 * What the compile cache did in a graph's run: "hit" (no pass ran), "miss" (compiled and
 * stored), "rebuilt" (the stored entry was stale or corrupted, `reason`), "bypassed" (not
 * cacheable, `reason`) or "off" (the run did not use the cache).
 */
export interface CompileCacheReport {
  outcome: "hit" | "miss" | "rebuilt" | "bypassed" | "off";
  reason?: string;
  /** The compile's wall time in the worker, the cache included. */
  compileMs: number;
}

/**
 * How far a run has come: a model graph compiled (work of every pass), KTIR operations
 * executed (against an estimate), then tasks scheduled.
 */
export interface RunProgress {
  phase: "compile" | "execute" | "schedule";
  done: number;
  total: number;
  /** Compiling: the pass running ("decompose", ..., "ktir"). */
  pass?: string;
}

/** An opened source, held by the worker across runs and trace exports (the wasm `Session`). */
export interface SpyreSession {
  /** "graph", "onnx" or "ktir", from the content. */
  readonly kind: string;
  /**
   * Throws an Error whose message names a location on bad input, carrying `stage`, `file`,
   * `line`, `column`, `node` and `diagnostics`. `progress` is called as the run goes
   * (throttled) with `{ phase: "compile" | "execute" | "schedule", done, total, pass? }`.
   */
  run(options: RunOptions, progress?: (p: RunProgress) => void): unknown;
  /** The last run's Chrome trace, from its stored schedule. */
  traceJson(): string;
  /** KTIR modules: what a run takes (`KtirInputs`). */
  ktirInputs(options: RunOptions): unknown;
  /** KTIR modules: runs with `.npy` files filling the named buffers, views and arguments. */
  runWithInputs(
    options: RunOptions,
    names: string[],
    files: Uint8Array[],
    progress?: (p: RunProgress) => void,
  ): unknown;
  /** KTIR modules: a buffer of the last run as `.npy` bytes. */
  bufferNpy(name: string): Uint8Array;
  /** Model graphs: `{ inputs, outputs }` as `TensorView` lists. */
  graphIo(): unknown;
  /**
   * Model graphs: runs with the user's tensors (`.npy` or ONNX `.pb`) for some inputs, and
   * compares the named outputs with the expected ones. Errors about one file carry `input`
   * (its name) and `role` ("input" or "expected").
   */
  runGraphWithInputs(
    options: RunOptions,
    inputNames: string[],
    inputFiles: Uint8Array[],
    expectedNames: string[],
    expectedFiles: Uint8Array[],
    progress?: (p: RunProgress) => void,
  ): unknown;
  /** Model graphs: an output of the last run as `.npy` bytes. */
  outputNpy(name: string): Uint8Array;
  /** Model graphs: the key a compile with `options` is stored under (undefined: not cacheable). */
  compileKey?(options: RunOptions): string | undefined;
  /**
   * Arms the compile cache for the next run with what the store holds under the key and
   * under the snapshots' key (`passesKey`).
   */
  useArtifacts?(stored: Uint8Array | undefined, storedPasses?: Uint8Array): void;
  /** What the last run's compile cache did (undefined for KTIR). */
  compileCache?(): unknown;
  /** The artifact the last run's compile made, to store (undefined: none). */
  takeArtifact?(): Uint8Array | undefined;
  /** The snapshots entry the last run's compile made, to store (undefined: none). */
  takePassesArtifact?(): Uint8Array | undefined;
  /**
   * The last run's pass texts and device ops' SDSC lines (`{ texts, sdscLines, outcome,
   * reason? }`). A run whose texts stayed in the store reads them from `storedPasses` (what
   * the store holds under `passesKey`), compiling again when that is missing or unsound
   * (`outcome` "miss" or "rebuilt", the new entry then in `takePassesArtifact`).
   */
  fillPasses?(storedPasses: Uint8Array | undefined): unknown;
}

/** A file's name and bytes. */
export interface NamedBytes {
  name: string;
  bytes: Uint8Array;
}

/** The functions the wasm module exports (besides its default `init`). */
export interface SpyreModule {
  version(): string;
  /** The compiler version compile keys carry (absent: no compile cache). */
  compilerVersion?(): string;
  listExamples(): ExampleInfo[];
  exampleSource(name: string): string;
  machinePresets(): string[];
  verifyKtir(text: string): unknown;
  /**
   * Opens a file's bytes, with the files dropped with it (an ONNX model's external data);
   * throws on bytes that do not load.
   */
  open(bytes: Uint8Array, fileName: string, extra?: readonly NamedBytes[]): SpyreSession;
}
