// A minimal well-formed pipeline result: one machine with one core, no events, every report
// empty. Unit tests of the message plumbing and the worker's handler use it as it is; the
// ring benchmark's synthetic run starts from it.

import type { PipelineResult, WasmRun } from "./api";
import { EventTable, isColumns } from "./events";
import { emptyLatencyModel, emptyRoofline } from "./views/roofline";

/** The summary of a 10-cycle run on that machine. */
export const summary: WasmRun["run"]["summary"] = {
  machine: "m",
  totalCycles: 10,
  clockGhz: 1,
  timeUs: 0.01,
  cores: [],
  links: [],
  dramReadBytes: 0,
  dramWriteBytes: 0,
  dramUtilisation: 0,
  bottleneck: "memory",
  bottleneckReason: "",
};

/** A minimal well-formed result, only to exercise the message plumbing. */
export function minimalResult(): WasmRun {
  return {
    kind: "graph",
    graph: { name: "g", description: "", inputs: [], outputs: [], nodes: [], initializers: [] },
    passes: [{ name: "ktir", title: "KTIR", text: "func.func @k() {}", data: null }],
    passesApart: false,
    ktir: "func.func @k() {}",
    run: {
      machine: {
        name: "m",
        cores: 1,
        clockGhz: 1,
        stops: [{ kind: "core", index: 0, label: "0" }],
        assumptions: [],
      },
      totalCycles: 10,
      timingOnly: false,
      outputsChecked: true,
      passed: true,
      outputs: [],
      expected: [],
      maskedPoints: null,
      assumptions: [],
      events: [],
      eventsTotal: 0,
      summary,
      steps: 1,
      functions: [],
      buffers: [],
      warnings: [],
      roofline: emptyRoofline(),
      latencyModel: emptyLatencyModel(),
      layers: [],
      padding: [],
      paged: [],
    },
    sourceMap: { nodes: [], ops: [], kernels: [] },
    tp: null,
  };
}

/** A result as the page holds it (its events as a table). */
export function pageResult(r: WasmRun): PipelineResult {
  const events = r.run.events;
  return {
    ...r,
    run: { ...r.run, events: isColumns(events) ? new EventTable(events) : EventTable.from(events) },
  };
}
