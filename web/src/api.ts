// The contract of the wasm module built from crates/wasm (wasm-pack --target web,
// out-name "spyre"). Only the worker calls the module; everything else sees these
// plain-data types, delivered through worker messages.

export interface ExampleInfo {
  name: string;
  description: string;
  /** Too large to run with numbers: run timing-only. */
  timingOnly?: boolean;
}

export interface TensorInfo {
  name: string;
  dtype: string;
  shape: number[];
}

export interface GraphNode {
  name: string;
  op: string;
  inputs: string[];
  outputs: string[];
}

export interface GraphInfo {
  name: string;
  description: string;
  inputs: TensorInfo[];
  outputs: TensorInfo[];
  nodes: GraphNode[];
}

/** One pass snapshot, in pipeline order ("import", ..., "sdsc" (JSON), "ktir" (MLIR text)). */
export interface PassSnapshot {
  name: string;
  title: string;
  text: string;
  /** The snapshot's structured data (layouts, core splits, scratchpad plan); null if none. */
  data?: unknown;
}

export type StopKind = "core" | "memory";

/** A ring stop, in ring order. For cores, `index` is the core id. */
export interface RingStop {
  kind: StopKind;
  index: number;
  label: string;
}

export interface MachineInfo {
  name: string;
  cores: number;
  clockGhz: number;
  stops: RingStop[];
}

export interface OutputCheck {
  name: string;
  maxAbsError: number;
  maxRelError: number;
  atol: number;
  rtol: number;
  passed: boolean;
}

export type EventUnit = "dma" | "pt" | "sfp";

/**
 * One trace event; times are in cycles. `srcStop`/`dstStop` are ring stop positions
 * (indexes into `MachineInfo.stops`) for transfers, null for compute.
 */
export interface TraceEvent {
  unit: EventUnit;
  core: number;
  start: number;
  end: number;
  bytes: number;
  srcStop: number | null;
  dstStop: number | null;
  op: string;
  line: number;
}

export interface UnitUsage {
  busy_cycles: number;
  utilisation: number;
  tasks: number;
}

export interface CoreSummary {
  core: number;
  dma: UnitUsage;
  pt: UnitUsage;
  sfp: UnitUsage;
  dma_bytes: number;
}

export interface LinkSummary {
  name: string;
  from_stop: number;
  to_stop: number;
  bytes: number;
  utilisation: number;
}

export interface RunSummary {
  machine: string;
  total_cycles: number;
  clock_ghz: number;
  time_us: number;
  cores: CoreSummary[];
  links: LinkSummary[];
  dram_read_bytes: number;
  dram_write_bytes: number;
  dram_utilisation: number;
  bottleneck: string;
  bottleneck_reason: string;
}

export interface RunInfo {
  machine: MachineInfo;
  totalCycles: number;
  /** Null for a standalone KTIR run (no reference to compare with). */
  passed: boolean | null;
  /** The run computed timing only (absent from older results). */
  timingOnly?: boolean;
  /** What a timing-only run assumed in place of values it did not compute. */
  assumptions?: string[];
  outputs: OutputCheck[];
  events: TraceEvent[];
  summary: RunSummary | null;
}

/** A verifier diagnostic; line and column are 1-based. */
export interface Diagnostic {
  severity: "error" | "warning";
  message: string;
  line: number;
  column: number;
  start: number;
  end: number;
}

export interface BufferSpec {
  name: string;
  elem: string;
  elements: number;
  shape: number[];
}

/** What `runKtir` returns for a standalone KTIR module. */
export interface KtirRunRaw {
  machine: MachineInfo;
  functions: string[];
  buffers: [BufferSpec, number[]][];
  totalCycles: number;
  events: TraceEvent[];
  summary: RunSummary;
  warnings: string[];
}

/** Options of a run; every field optional. */
export interface RunOptions {
  machine?: string;
  seed?: number;
  ktir?: string;
  /** Timing only: tensors carry shapes, no numbers are computed or checked. */
  timingOnly?: boolean;
}

export interface PipelineResult {
  graph: GraphInfo;
  passes: PassSnapshot[];
  ktir: string;
  run: RunInfo;
}

/** The functions the wasm module exports (besides its default `init`). */
export interface SpyreModule {
  version(): string;
  listExamples(): ExampleInfo[];
  exampleSource(name: string): string;
  machinePresets(): string[];
  /** Throws an Error whose message names a location on bad input. */
  runPipelineWith(bytes: Uint8Array, fileName: string, options: RunOptions): unknown;
  verifyKtir(text: string): unknown;
  runKtir(text: string, options: RunOptions): unknown;
  pipelineTrace(bytes: Uint8Array, fileName: string, options: RunOptions): string;
  ktirTrace(text: string, options: RunOptions): string;
}
