// The quantities a lesson's checks may name, read from one run (no DOM: unit-tested). The
// embedded playground computes them after each run and sends them to the page around it;
// the lessons page evaluates its checks on them.

import type { PipelineResult } from "../api";
import type { EventTable } from "../events";
import { layouts, passData, scratchPlan } from "../session";

/** What each quantity is, for the lesson page's readout and the lesson tests. */
export const QUANTITIES = {
  cycles: "modelled cycles of the whole run",
  machineCores: "cores of the machine it ran on",
  bottleneck: 'what limits the run: "memory", "compute" or "communication"',
  bound: 'which roofline bound applies to the program: "dram", "matmul" or "vector"',
  rooflineRatio: "achieved cycles over the roofline lower bound (1 is perfect)",
  rereadFactor: "DRAM bytes moved over unique bytes (1: every byte crossed once)",
  dramBytes: "bytes read from and written to DRAM",
  ringBytes: "bytes moved core to core over the ring (no memory stop)",
  busiestLink: "utilisation of the busiest ring link direction (0 to 1)",
  overlap: "share of compute (PT and SFP) time during which the same core's DMA also ran",
  matmulCores: "most cores any matmul (batchmatmul) kernel ran on",
  maxCores: "most cores any kernel ran on",
  kernels: "kernels (KTIR functions) that ran",
  restickifies: "restickify ops the layout pass inserted",
  paddingShare: "share of the laid-out tensor bytes that is stick padding (0 to 1)",
  scratchpadPeak: "peak scratchpad bytes per core the plan uses",
  scratchpadBuffers: "intermediate buffers the plan keeps in scratchpad",
  pagedWaste: "share of padded attention work that is padding under the serving rules, in %",
} as const;

/** A quantity's name. */
export type Quantity = keyof typeof QUANTITIES;

/** The quantities of one run; null where the run has none (a KTIR module has no passes). */
export type Metrics = { [K in Quantity]: number | string | null };

/** Whether `name` is a quantity checks may use. */
export function isQuantity(name: string): name is Quantity {
  return Object.prototype.hasOwnProperty.call(QUANTITIES, name);
}

/**
 * Share of the compute units' busy time during which the same core's DMA engine was busy too:
 * near 0 when loads and compute take turns, higher when loads run ahead (double buffering).
 */
export function dmaComputeOverlap(events: EventTable): number {
  const dma = new Map<number, [number, number][]>();
  const compute = new Map<number, [number, number][]>();
  for (let i = 0; i < events.length; i++) {
    const m = events.unit(i) === "dma" ? dma : compute;
    const core = events.core(i);
    let list = m.get(core);
    if (!list) m.set(core, (list = []));
    list.push([events.start(i), events.end(i)]);
  }
  let busy = 0;
  let both = 0;
  for (const [core, spans] of compute) {
    const c = merge(spans);
    const d = merge(dma.get(core) ?? []);
    for (const [s, e] of c) busy += e - s;
    // Both lists are sorted and disjoint: one sweep.
    let j = 0;
    for (const [s, e] of c) {
      while (j < d.length && d[j]![1] <= s) j++;
      for (let k = j; k < d.length && d[k]![0] < e; k++) {
        both += Math.max(0, Math.min(e, d[k]![1]) - Math.max(s, d[k]![0]));
      }
    }
  }
  return busy > 0 ? both / busy : 0;
}

function merge(spans: [number, number][]): [number, number][] {
  const sorted = [...spans].sort((a, b) => a[0] - b[0]);
  const out: [number, number][] = [];
  for (const [s, e] of sorted) {
    const last = out[out.length - 1];
    if (last && s <= last[1]) last[1] = Math.max(last[1], e);
    else out.push([s, e]);
  }
  return out;
}

/** The quantities of a run. */
export function lessonMetrics(res: PipelineResult): Metrics {
  const run = res.run;
  const program = run.roofline.program;
  const ops = res.sourceMap.ops;
  const kernelKind = (k: number): string | null => {
    const op = res.sourceMap.kernels[k]?.op;
    return op === null || op === undefined ? null : (ops[op]?.kind ?? null);
  };
  const kernels = run.roofline.kernels;
  const matmuls = kernels.filter((k) => kernelKind(k.kernel) === "batchmatmul");
  const graph = res.kind !== "ktir";
  let padding: number | null = null;
  const lay = layouts(passData(res.passes, "layout"));
  if (lay.size > 0) {
    let device = 0;
    let host = 0;
    for (const l of lay.values()) {
      device += l.deviceBytes;
      const elemBytes = l.elemsPerStick > 0 ? 128 / l.elemsPerStick : 0;
      host += l.hostShape.reduce((a, b) => a * b, 1) * elemBytes;
    }
    padding = device > 0 ? Math.max(0, 1 - host / device) : 0;
  }
  const plan = scratchPlan(passData(res.passes, "scratchpad"));
  return {
    cycles: run.totalCycles,
    machineCores: run.machine.cores,
    bottleneck: run.summary.bottleneck,
    bound: program.bounds?.bound ?? null,
    rooflineRatio: program.bounds ? program.ratio : null,
    rereadFactor: program.rereadFactor > 0 ? program.rereadFactor : null,
    dramBytes: program.dramReadBytes + program.dramWriteBytes,
    ringBytes: program.ringBytes,
    busiestLink: run.summary.links.reduce((m, l) => Math.max(m, l.utilisation), 0),
    overlap: dmaComputeOverlap(run.events),
    matmulCores: graph ? matmuls.reduce((m, k) => Math.max(m, k.coresUsed), 0) : null,
    maxCores: kernels.reduce((m, k) => Math.max(m, k.coresUsed), 0),
    kernels: kernels.length,
    restickifies: graph ? ops.filter((o) => o.kind === "restickify").length : null,
    paddingShare: padding,
    scratchpadPeak: plan ? plan.peak : null,
    scratchpadBuffers: plan ? plan.buffers.filter((b) => b.offset !== null).length : null,
    pagedWaste: run.padding.length > 0 ? Math.max(...run.padding.map((p) => p.wastePercent)) : null,
  };
}

/** A quantity as the lesson page shows it. */
export function formatQuantity(name: Quantity, v: number | string | null): string {
  if (v === null) return "—";
  if (typeof v === "string") return v;
  if (name === "overlap" || name === "paddingShare" || name === "busiestLink") {
    return `${(v * 100).toFixed(1)}%`;
  }
  if (name === "pagedWaste") return `${v.toFixed(1)}%`;
  if (name === "rooflineRatio" || name === "rereadFactor") return `${v.toFixed(2)}×`;
  return Math.round(v).toLocaleString("en-US");
}
