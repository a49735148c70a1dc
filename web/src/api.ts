// The contract of the wasm module built from crates/wasm (wasm-pack --target web,
// out-name "spyre"). Only the worker calls the module; everything else sees these
// plain-data types, delivered through worker messages.

export interface ExampleInfo {
  name: string;
  description: string;
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

export interface RunInfo {
  machine: MachineInfo;
  totalCycles: number;
  passed: boolean;
  outputs: OutputCheck[];
  events: TraceEvent[];
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
  /** Throws an Error whose message names a location on bad input. */
  runPipeline(source: string, fileName: string): PipelineResult;
}
