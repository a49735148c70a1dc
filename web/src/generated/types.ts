// Generated from the Rust types of crates/driver by ts-rs; do not edit.
// Regenerate with: UPDATE_EXPECT=1 cargo test -p driver --lib ts_types

export type UnitName = "dma" | "pt" | "sfp";

export type SourceKind = "graph" | "onnx" | "ktir";

export type Stage = "load" | "compile" | "ktir" | "simulate" | "machine";

export type DiagnosticView = { 
/**
 * "error" or "warning".
 */
severity: "error" | "warning", 
/**
 * What is wrong.
 */
message: string, 
/**
 * 1-based line.
 */
line: number, 
/**
 * 1-based column.
 */
column: number, 
/**
 * Byte offsets of the span.
 */
start: number, 
/**
 * End byte offset.
 */
end: number, };

export type DriverError = { 
/**
 * The stage.
 */
stage: Stage, 
/**
 * The message, including its location in words (line and column, node, core or op).
 */
message: string, 
/**
 * The file, when the source came from one.
 */
file: string | null, 
/**
 * 1-based line in the file (graph JSON or KTIR text).
 */
line: number | null, 
/**
 * 1-based column.
 */
column: number | null, 
/**
 * The graph node.
 */
node: string | null, 
/**
 * Every KTIR diagnostic, when a module did not verify.
 */
diagnostics: Array<DiagnosticView>, };

export type TensorView = { 
/**
 * Name.
 */
name: string, 
/**
 * Dtype name.
 */
dtype: string, 
/**
 * Host shape.
 */
shape: Array<number>, };

export type NodeView = { 
/**
 * Name.
 */
name: string, 
/**
 * ONNX op.
 */
op: string, 
/**
 * Input tensors.
 */
inputs: Array<string>, 
/**
 * Output tensors.
 */
outputs: Array<string>, };

export type ValueSummary = { 
/**
 * The first values in row-major order (at most [`ValueSummary::SAMPLES`]).
 */
samples: Array<number>, 
/**
 * Smallest value (0 for an empty tensor); NaN values are left out of min, max and mean.
 */
min: number, 
/**
 * Largest value (0 for an empty tensor).
 */
max: number, 
/**
 * Mean value (0 for an empty tensor).
 */
mean: number, 
/**
 * NaN values, which min, max and mean leave out.
 */
nans: number, };

export type InitializerView = { 
/**
 * Name.
 */
name: string, 
/**
 * Dtype name.
 */
dtype: string, 
/**
 * Shape.
 */
shape: Array<number>, 
/**
 * The values in summary; `None` when the run did not hold them (timing-only).
 */
values: ValueSummary | null, };

export type GraphView = { 
/**
 * Graph name.
 */
name: string, 
/**
 * One-line description.
 */
description: string, 
/**
 * Graph inputs.
 */
inputs: Array<TensorView>, 
/**
 * Graph outputs.
 */
outputs: Array<TensorView>, 
/**
 * Nodes in order.
 */
nodes: Array<NodeView>, 
/**
 * The graph's weights, in graph order.
 */
initializers: Array<InitializerView>, };

export type PassView = { 
/**
 * The pass name (see [`PASS_NAMES`]).
 */
name: string, 
/**
 * A title for the list.
 */
title: string, 
/**
 * The snapshot text; `None` while it waits in the compile store ([`Run::passes_apart`],
 * read by [`Session::fill_passes`]): a warm run brings the data the views read at once,
 * and the texts, most of a large model's snapshots, only when a view shows them.
 */
text: string | null, 
/**
 * The snapshot's structured data (layouts, core splits, scratchpad allocations).
 */
data: unknown, };

export type StopView = { 
/**
 * "core" or "memory".
 */
kind: "core" | "memory", 
/**
 * Core id for cores, position for memory stops.
 */
index: number, 
/**
 * A short label.
 */
label: string, };

export type MachineView = { 
/**
 * Preset or file name.
 */
name: string, 
/**
 * Core count.
 */
cores: number, 
/**
 * Clock, to turn cycles into time.
 */
clockGhz: number, 
/**
 * Stops in ring order.
 */
stops: Array<StopView>, 
/**
 * Every assumed number: (field, note).
 */
assumptions: Array<[string, string]>, };

export type OutputCheck = { 
/**
 * The graph output.
 */
name: string, 
/**
 * Its dtype.
 */
dtype: string, 
/**
 * Its host shape.
 */
shape: Array<number>, 
/**
 * Largest `|sim - ref|`.
 */
maxAbsError: number, 
/**
 * Largest `|sim - ref| / |ref|` over elements whose reference is not tiny.
 */
maxRelError: number, 
/**
 * Absolute tolerance.
 */
atol: number, 
/**
 * Relative tolerance.
 */
rtol: number, 
/**
 * Whether every element is within tolerance.
 */
passed: boolean, 
/**
 * Elements where both sides hold the same infinity, or both a NaN: these match, and
 * take no part in the errors above.
 */
specialMatches: number, };

export type EventView = { 
/**
 * "dma", "pt" or "sfp".
 */
unit: UnitName, 
/**
 * The core whose unit ran it.
 */
core: number, 
/**
 * Start, in cycles.
 */
start: number, 
/**
 * End, in cycles.
 */
end: number, 
/**
 * Bytes moved (transfers).
 */
bytes: number, 
/**
 * Ring stop the data left (transfers).
 */
srcStop: number | null, 
/**
 * Ring stop the data reached (transfers).
 */
dstStop: number | null, 
/**
 * The ring stops a transfer passes, from `srcStop` to `dstStop` inclusive, in order
 * (the scheduler's route; empty for compute).
 */
route: Array<number>, 
/**
 * The KTIR op.
 */
op: string, 
/**
 * Its line in the KTIR text.
 */
line: number, };

export type UnitUsageView = { 
/**
 * Cycles the unit was busy.
 */
busyCycles: number, 
/**
 * `busy_cycles / total_cycles` (0 for an empty schedule).
 */
utilisation: number, 
/**
 * Tasks it ran.
 */
tasks: number, };

export type CoreView = { 
/**
 * Core id.
 */
core: number, 
/**
 * The DMA engine.
 */
dma: UnitUsageView, 
/**
 * The PT (matrix) array.
 */
pt: UnitUsageView, 
/**
 * The SFP (vector) unit.
 */
sfp: UnitUsageView, 
/**
 * Bytes moved by this core's DMA engine.
 */
dmaBytes: number, };

export type LinkView = { 
/**
 * Dense link index (`2 * fromStop`, +1 counter-clockwise).
 */
index: number, 
/**
 * `s<from>-cw` / `s<from>-ccw`.
 */
name: string, 
/**
 * The stop the link leaves.
 */
fromStop: number, 
/**
 * The stop it reaches.
 */
toStop: number, 
/**
 * Bytes carried.
 */
bytes: number, 
/**
 * `bytes / (link bandwidth * total_cycles)`.
 */
utilisation: number, };

export type SummaryView = { 
/**
 * Machine name.
 */
machine: string, 
/**
 * Modelled cycles.
 */
totalCycles: number, 
/**
 * The assumed clock.
 */
clockGhz: number, 
/**
 * `totalCycles` converted with the clock.
 */
timeUs: number, 
/**
 * Per core.
 */
cores: Array<CoreView>, 
/**
 * Every link, in index order.
 */
links: Array<LinkView>, 
/**
 * Bytes read from DRAM.
 */
dramReadBytes: number, 
/**
 * Bytes written to DRAM.
 */
dramWriteBytes: number, 
/**
 * Fraction of the run during which DRAM delivered its effective bandwidth.
 */
dramUtilisation: number, 
/**
 * What limits the run.
 */
bottleneck: "memory" | "compute" | "communication", 
/**
 * One line explaining the choice.
 */
bottleneckReason: string, };

export type Role = "in" | "out" | "inOut" | "unused";

export type BufferSpec = { 
/**
 * The argument name (without `%`), the `--place` name, or for views at constant
 * addresses the name of the constant the lowest view's address comes from.
 */
name: string, 
/**
 * Element type of the views over it.
 */
elem: string, 
/**
 * Elements needed to hold every view over it.
 */
elements: number, 
/**
 * The shape of the largest view over it (for `.npy` files).
 */
shape: Array<number>, 
/**
 * Its DRAM address in elements, when fixed (a constant in the program or
 * `--place`); `None` for argument buffers the runner places.
 */
address: number | null, 
/**
 * Whether the kernels load it, store it, or both.
 */
role: Role, };

export type ScratchpadSpec = { 
/**
 * The view's name (without `%`).
 */
name: string, 
/**
 * The function that builds it.
 */
function: string, 
/**
 * Element type.
 */
elem: string, 
/**
 * The view's sizes.
 */
shape: Array<number>, 
/**
 * Its base, in elements of the scratchpad.
 */
address: number, 
/**
 * Its strides.
 */
strides: Array<number>, 
/**
 * The cores whose scratchpad it is (`ct_id`, or every core of the grid).
 */
cores: Array<number>, 
/**
 * Loaded from, stored to, or both.
 */
role: Role, };

export type ScalarSpec = { 
/**
 * The argument name (without `%`).
 */
name: string, 
/**
 * Its type as written (`index`, `f32`, `!ktdp.runtime_arg<index, ...>` as `index`).
 */
dtype: string, 
/**
 * The functions taking it.
 */
functions: Array<string>, 
/**
 * The value it will get, when given.
 */
value: string | null, };

export type TensorArgSpec = { 
/**
 * The argument name.
 */
name: string, 
/**
 * Element type.
 */
elem: string, 
/**
 * Shape (from the type).
 */
shape: Array<number>, };

export type KtirInputs = { 
/**
 * DRAM buffers: over arguments (address chosen at run time, or given with
 * `--place`) and at constant addresses.
 */
buffers: Array<BufferSpec>, 
/**
 * Scratchpad views whose initial contents may be given.
 */
scratchpads: Array<ScratchpadSpec>, 
/**
 * Scalar arguments.
 */
scalars: Array<ScalarSpec>, 
/**
 * Tensor arguments.
 */
tensors: Array<TensorArgSpec>, 
/**
 * What is missing before the module can run (scalars without a value, sizes that
 * depend on them), one line each.
 */
missing: Array<string>, };

export type Bound = "dram" | "matmul" | "vector";

export type Rates = { 
/**
 * DRAM bytes per cycle: peak times the one-way efficiency.
 */
dramBytesPerCycle: number, 
/**
 * Peak multiply-accumulates per cycle per core.
 */
macsPerCyclePerCore: number, 
/**
 * Element operations per cycle per core (SFP lanes of one corelet).
 */
elementwisePerCyclePerCore: number, 
/**
 * Cores of the machine.
 */
cores: number, };

export type Bounds = { 
/**
 * DRAM bytes / DRAM bytes per cycle.
 */
dramCycles: number, 
/**
 * MACs / (cores x MACs per cycle per core).
 */
matmulCycles: number, 
/**
 * Element operations / (cores x element operations per cycle per core).
 */
vectorCycles: number, 
/**
 * The largest of the three: no schedule of this work is faster.
 */
lowerBoundCycles: number, 
/**
 * Which one it is.
 */
bound: Bound, };

export type KernelRoofline = { 
/**
 * Index into `sourceMap.kernels`.
 */
kernel: number, 
/**
 * The KTIR function.
 */
func: string, 
/**
 * Multiply-accumulates.
 */
macs: number, 
/**
 * Element operations on the vector unit.
 */
elementwise: number, 
/**
 * Bytes read from DRAM.
 */
dramReadBytes: number, 
/**
 * Bytes written to DRAM.
 */
dramWriteBytes: number, 
/**
 * Bytes moved core to core over the ring (transfers that touch no memory stop).
 */
ringBytes: number, 
/**
 * Cores its events ran on.
 */
coresUsed: number, 
/**
 * Its bounds over the bytes it moved, on the cores it used.
 */
bounds: Bounds, 
/**
 * First event start to last event end.
 */
achievedCycles: number, 
/**
 * `achievedCycles / bounds.lowerBoundCycles` (0 when the bound is 0).
 */
ratio: number, };

export type ProgramRoofline = { 
/**
 * Multiply-accumulates.
 */
macs: number, 
/**
 * Element operations.
 */
elementwise: number, 
/**
 * Bytes read from DRAM.
 */
dramReadBytes: number, 
/**
 * Bytes written to DRAM.
 */
dramWriteBytes: number, 
/**
 * Every input, weight and output counted once (graphs), or every buffer (KTIR).
 */
uniqueDramBytes: number, 
/**
 * Core-to-core ring bytes.
 */
ringBytes: number, 
/**
 * Bounds over the unique bytes, on every core.
 */
bounds: Bounds | null, 
/**
 * Modelled cycles of the run.
 */
achievedCycles: number, 
/**
 * `achievedCycles / bounds.lowerBoundCycles`.
 */
ratio: number, 
/**
 * `(dramReadBytes + dramWriteBytes) / uniqueDramBytes`: how often data crossed the
 * DRAM interface (0 when unknown).
 */
rereadFactor: number, };

export type Roofline = { 
/**
 * The machine's rates (none before a run).
 */
rates: Rates | null, 
/**
 * One entry per kernel that ran, in source-map order.
 */
kernels: Array<KernelRoofline>, 
/**
 * The whole program.
 */
program: ProgramRoofline, 
/**
 * What the figures assume.
 */
assumptions: Array<string>, };

export type LatencyParamView = { 
/**
 * The reference interpreter's name for it (`hbm_bandwidth_tb_s`, ...).
 */
label: string, 
/**
 * Its value for this machine.
 */
value: number, 
/**
 * The machine-description field it is derived from.
 */
from: string, };

export type KernelLatency = { 
/**
 * Index into `sourceMap.kernels`.
 */
kernel: number, 
/**
 * The KTIR function.
 */
func: string, 
/**
 * Compute cycles of the model's critical core.
 */
computeCycles: number, 
/**
 * HBM cycles of the critical core.
 */
memoryCycles: number, 
/**
 * Ring communication cycles of the critical core.
 */
commCycles: number, 
/**
 * The model's time with no overlap (`compute + memory + comm`, slowest core): the
 * reference interpreter's cycle model.
 */
sequentialCycles: number, 
/**
 * The model's time with perfect overlap (`max` of the three, slowest core).
 */
overlappedCycles: number, 
/**
 * "compute", "memory" or "comm": the critical core's largest category.
 */
bottleneck: string, 
/**
 * Cycles the event-level schedule took (first event start to last event end).
 */
eventCycles: number, 
/**
 * `sequentialCycles - eventCycles`.
 */
differenceCycles: number, };

export type LatencyModelReport = { 
/**
 * The model's parameters (empty before a run).
 */
params: Array<LatencyParamView>, 
/**
 * One entry per kernel that ran, in source-map order.
 */
kernels: Array<KernelLatency>, 
/**
 * Sum of the kernels' sequential cycles (kernels run one after another).
 */
sequentialCycles: number, 
/**
 * Sum of the kernels' overlapped cycles.
 */
overlappedCycles: number, 
/**
 * The event-level model's cycles for the whole run.
 */
eventCycles: number, 
/**
 * What the model assumes and why it differs from the event-level one.
 */
notes: Array<string>, };

export type LayerCycles = { 
/**
 * The name prefix its nodes share: a node's name up to its first `.` or `/`
 * (`layer3`, `embed`, `final_norm`, `lm_head`).
 */
layer: string, 
/**
 * Kernels that ran for it.
 */
kernels: number, 
/**
 * The sum of its kernels' spans, in cycles.
 */
cycles: number, 
/**
 * `cycles` over the run's total (0 for an empty run).
 */
share: number, };

export type SequenceView = { 
/**
 * New (query) tokens.
 */
qLen: number, 
/**
 * KV length after the step.
 */
kvLen: number, 
/**
 * Query tokens after padding.
 */
paddedQ: number, 
/**
 * KV length after alignment.
 */
paddedKv: number, 
/**
 * The pages its block table names, in order.
 */
pages: Array<number>, };

export type PaddingCost = { 
/**
 * The graph node.
 */
node: string, 
/**
 * The rules: query alignment, KV alignment, decode-only alignment, head-size and
 * block-size multiples.
 */
queryAlign: number, kvAlign: number, decodeAlign: number, headMultiple: number, blockMultiple: number, 
/**
 * Whether every sequence brings one new token.
 */
decodeOnly: boolean, 
/**
 * The batch.
 */
sequences: Array<SequenceView>, 
/**
 * Head size and page size, as given and after the rules.
 */
headDim: number, paddedHeadDim: number, blockSize: number, paddedBlockSize: number, 
/**
 * Share of the padded attention work that is padding, in percent.
 */
wastePercent: number, 
/**
 * The same if decode-only batches had no exception.
 */
wastePercentWithoutDecodeAlignment: number, 
/**
 * Cycles the node's kernels took, ragged (alignment 1).
 */
cycles: number, 
/**
 * Cycles the padding would add (cycles taken as proportional to the work).
 */
wastedCycles: number, };

export type PageRead = { 
/**
 * The cache page (block) id the block table names.
 */
page: number, 
/**
 * The sequence's tokens held in it.
 */
tokens: number, 
/**
 * Cores whose kernels read its keys and values out of the cache.
 */
readers: Array<number>, 
/**
 * Cores whose kernels attend over it (scores against its keys, weights times its
 * values).
 */
users: Array<number>, };

export type PagedPlan = { 
/**
 * The graph node.
 */
node: string, 
/**
 * Pages in the cache.
 */
cachePages: number, 
/**
 * Tokens per page.
 */
blockSize: number, 
/**
 * Cores of the target.
 */
cores: number, 
/**
 * Per sequence, its pages in block-table order.
 */
sequences: Array<Array<PageRead>>, };

export type RunResult = { 
/**
 * The machine it ran on.
 */
machine: MachineView, 
/**
 * Modelled cycles from the first task to the last.
 */
totalCycles: number, 
/**
 * Whether the run computed timing only: no numbers, no reference, no comparison.
 */
timingOnly: boolean, 
/**
 * Whether the outputs were compared with the reference (false in timing-only mode).
 */
outputsChecked: boolean, 
/**
 * Whether every output is within tolerance (false when they were not checked).
 */
passed: boolean, 
/**
 * Per-output accuracy (empty when the outputs were not checked).
 */
outputs: Array<OutputCheck>, 
/**
 * Per-output accuracy against the values the user expects ([`RunOptions::expected`];
 * empty when none were given).
 */
expected: Array<OutputCheck>, 
/**
 * What a timing-only run assumed in place of values it did not compute.
 */
assumptions: Array<string>, 
/**
 * Timed events, in task order: the first [`EVENT_VIEW_LIMIT`] of the run's, a window
 * when there are more.
 */
events: Array<EventView>, 
/**
 * How many timed events the run has in all (more than `events` holds when it is a
 * window).
 */
eventsTotal: number, 
/**
 * Utilisation and bottleneck.
 */
summary: SummaryView, 
/**
 * KTIR operations executed over all cores.
 */
steps: number, 
/**
 * Functions run, in order (KTIR modules; empty for graphs).
 */
functions: Array<string>, 
/**
 * The buffers of a KTIR module and their final contents (empty contents in
 * timing-only mode; no buffers for graphs).
 */
buffers: Array<[BufferSpec, Array<number>]>, 
/**
 * Warnings the verifier gave (spec gaps the program touches).
 */
warnings: Array<string>, 
/**
 * Per kernel and for the whole program: work, bytes, lower bound and achieved cycles.
 */
roofline: Roofline, 
/**
 * Per kernel: the reference interpreter's per-unit roofline latency model beside the
 * event-level cycles (`--timing roofline`).
 */
latencyModel: LatencyModelReport, 
/**
 * Cycles per layer or block of a graph (from its nodes' name prefixes), in run order;
 * empty for KTIR modules.
 */
layers: Array<LayerCycles>, 
/**
 * What the serving stack's padding rules would cost each PagedAttention node (empty
 * without one).
 */
padding: Array<PaddingCost>, 
/**
 * Which cores read which KV-cache pages, per PagedAttention node, from the compiled
 * plan (empty without one).
 */
paged: Array<PagedPlan>, 
/**
 * Points outside their views that were masked (loads read 0, stores dropped), when
 * the run masked them (`--out-of-bounds mask`); `None` when such points are errors.
 */
maskedPoints: number | null, };

export type LineRange = { 
/**
 * First line.
 */
from: number, 
/**
 * Last line.
 */
to: number, };

export type NodeLink = { 
/**
 * The node's name (as in `graph.nodes`, same order).
 */
name: string, 
/**
 * Indices into [`SourceMap::ops`] (none for nodes canonicalization folded away).
 */
ops: Array<number>, };

export type OpLink = { 
/**
 * The op's name (`node` or `node/step`), also its SDSC op's name.
 */
name: string, 
/**
 * The SDSC op kind ("batchmatmul", "add", ...).
 */
kind: string, 
/**
 * Index into [`SourceMap::nodes`] of the node it came from.
 */
node: number | null, 
/**
 * Index into [`SourceMap::kernels`] of the kernel that runs it (none when an edited
 * module dropped it).
 */
kernel: number | null, 
/**
 * Its SDSC op's lines in the SDSC pass text.
 */
sdscLines: LineRange | null, };

export type KernelLink = { 
/**
 * The function's name (without `@`).
 */
func: string, 
/**
 * Its lines in the module text the run carries (`ktir`).
 */
lines: LineRange, 
/**
 * Index into [`SourceMap::ops`] of the device op it implements (graphs only).
 */
op: number | null, 
/**
 * Indices into `run.events` of the events its operations caused.
 */
events: Array<number>, };

export type SourceMap = { 
/**
 * Graph nodes, in graph order.
 */
nodes: Array<NodeLink>, 
/**
 * Device ops, in execution order.
 */
ops: Array<OpLink>, 
/**
 * KTIR functions, in module order.
 */
kernels: Array<KernelLink>, };

export type Run = { 
/**
 * What was run.
 */
kind: SourceKind, 
/**
 * The graph (for a KTIR module: its name, functions and buffers, and no nodes).
 */
graph: GraphView, 
/**
 * Pass snapshots, in pass order (none for a KTIR module).
 */
passes: Array<PassView>, 
/**
 * The compile came from a store that keeps the snapshot texts apart: `passes` has each
 * pass's name, title and data but no text (the KTIR module's aside), and the source
 * map's ops have no SDSC lines, until [`Session::fill_passes`] reads them.
 */
passesApart: boolean, 
/**
 * The KTIR module that ran.
 */
ktir: string, 
/**
 * The simulation.
 */
run: RunResult, 
/**
 * Graph node <-> device op <-> kernel <-> KTIR lines <-> events.
 */
sourceMap: SourceMap, 
/**
 * The same graph run tensor-parallel over several cards, when asked for
 * ([`Session::run_with_tp`]); the rest of the run is the one-card run.
 */
tp: TpRun | null, };

export type OpSdscLines = { 
/**
 * The device op's name.
 */
op: string, 
/**
 * Its lines.
 */
lines: LineRange, };

export type PassText = { 
/**
 * The pass name.
 */
name: string, 
/**
 * Its snapshot's text.
 */
text: string, };

export type PassesApart = { 
/**
 * Snapshot texts by pass, in pass order.
 */
texts: Array<PassText>, 
/**
 * Each device op's lines in the `sdsc` snapshot's text (`OpLink::sdsc_lines`).
 */
sdscLines: Array<OpSdscLines>, };

export type LinkEventView = { 
/**
 * The link direction (`card0->switch`).
 */
channel: string, 
/**
 * Start and end in cycles from the start of the run.
 */
start: number, end: number, bytes: number, };

export type CollectiveView = { 
/**
 * The tensor reduced.
 */
tensor: string, 
/**
 * "all-reduce".
 */
kind: string, 
/**
 * "ring" or "tree".
 */
algorithm: string, 
/**
 * Why that algorithm.
 */
reason: string, 
/**
 * Bytes per card.
 */
bytes: number, 
/**
 * Start and modelled cycles.
 */
start: number, cycles: number, 
/**
 * The estimates (ring, tree).
 */
estimateRing: number, estimateTree: number, 
/**
 * The order the values were summed in.
 */
reductionOrder: string, };

export type SegmentView = { 
/**
 * Graph nodes in it.
 */
nodes: number, 
/**
 * Kernels it compiled to (once for every card).
 */
kernels: number, 
/**
 * Start and modelled cycles on each card.
 */
start: number, cycles: number, 
/**
 * Card-segments simulated (1 when timing-only: the shards are identical).
 */
simulated: number, };

export type HostEventView = { 
/**
 * "host" (launch calls), "host-link" (copies) or "device" (the launched work).
 */
lane: string, 
/**
 * What it is (`launch (3 item(s))`, `copy in 4096 B`, a kernel's name).
 */
what: string, 
/**
 * Start and end in cycles from the input upload.
 */
start: number, end: number, };

export type HostView = { 
/**
 * "per-kernel" or "per-block".
 */
grouping: string, 
/**
 * How launches were grouped.
 */
note: string, 
/**
 * Launches per card.
 */
launches: number, 
/**
 * Input upload to output download, in cycles.
 */
endToEndCycles: number, 
/**
 * Kernels and collectives.
 */
deviceBusyCycles: number, 
/**
 * (end-to-end - device busy) / end-to-end.
 */
overhead: number, 
/**
 * Whether it is under the roadmap's 5%.
 */
under5Percent: boolean, 
/**
 * Open, allocations and the weight upload, before the timed run.
 */
setupCycles: number, 
/**
 * Host, host-link and device spans of the first block.
 */
events: Array<HostEventView>, };

export type SystemCardView = { 
/**
 * Its name in the system (`card0`).
 */
name: string, 
/**
 * Its machine description's name.
 */
machine: string, 
/**
 * Cores on its ring.
 */
cores: number, 
/**
 * Whether the run used it (card index below the TP degree).
 */
used: boolean, };

export type SystemLinkView = { 
/**
 * Endpoints: card names, `switch`, or `host`.
 */
from: string, to: string, 
/**
 * Bandwidth per direction and its status ("public" or "assumed").
 */
bytesPerCycle: number, bandwidthStatus: string, 
/**
 * Latency and its status.
 */
latencyCycles: number, latencyStatus: string, 
/**
 * Bytes the run moved from `from` to `to`, and back.
 */
bytesForward: number, bytesBack: number, };

export type SystemView = { 
/**
 * "pcie_switch" or "ring".
 */
topology: string, 
/**
 * Every card of the system.
 */
cards: Array<SystemCardView>, 
/**
 * Card-to-card (or card-to-switch) links.
 */
cardLinks: Array<SystemLinkView>, 
/**
 * Each card's host link (the same figures per card); bytes are per card for the
 * inputs, card 0's for the outputs.
 */
hostLinks: Array<SystemLinkView>, };

export type TpRun = { 
/**
 * Cards used.
 */
degree: number, 
/**
 * The system's name.
 */
system: string, 
/**
 * Its cards and links, with the bytes the run moved on each.
 */
systemView: SystemView, 
/**
 * How key/value heads were placed.
 */
kv: string, 
/**
 * The `tensor-parallel` pass snapshot.
 */
pass: PassView, 
/**
 * The segments of one card's program, in order.
 */
segments: Array<SegmentView>, 
/**
 * The all-reduces between them.
 */
collectives: Array<CollectiveView>, 
/**
 * Card-link transfers, for the timeline.
 */
linkEvents: Array<LinkEventView>, 
/**
 * Modelled device cycles: segments and collectives back to back.
 */
totalCycles: number, 
/**
 * Cycles in collectives.
 */
collectiveCycles: number, 
/**
 * Their share of the total.
 */
collectiveShare: number, 
/**
 * Whether numbers were computed (false: timing only).
 */
outputsChecked: boolean, 
/**
 * Every output against the TP-1 reference evaluator.
 */
outputs: Array<OutputCheck>, 
/**
 * Every output against the values the user expects ([`RunOptions::expected`]).
 */
expected: Array<OutputCheck>, 
/**
 * Whether every output is within tolerance (of the reference and of the expected).
 */
passed: boolean, 
/**
 * The host runtime in both launch regimes: per kernel, per block.
 */
host: Array<HostView>, 
/**
 * Figures the run assumed (system links, runtime), as "field: note".
 */
assumptions: Array<string>, };
