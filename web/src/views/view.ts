// The interface every view of the page implements, and the shared page state views render.
//
// Data flows one way: the page (main.ts) owns the state, views render it in `update` and
// report what the user did through the context's actions. Views never call each other.

import type { Diagnostic, TraceEvent } from "../api";
import type { ErrorInfo, RunData, RunIo, RunResult, SourceRef } from "../protocol";
import type { LineRange } from "../ring/draw";
import type { CompareSpec } from "../compare";

/** Which editor of the IR view a line belongs to. */
export type IrKind = "ktir" | "sdsc";

/** The run on screen. */
export interface Loaded {
  target: SourceRef;
  /** Example name, or null for an opened file. */
  example: string | null;
  res: RunResult;
  /** The KTIR as compiled (or the .mlir file as opened). */
  originalKtir: string;
  /** The SDSC bundle as shown (pretty-printed JSON); "" while the pass texts are pending. */
  sdsc: string;
  /**
   * Why the pass texts could not be read, once asked (null: not failed). Whether they are
   * still to come is read from the run's passes (`textsPending`): a cache hit brings the
   * passes without their texts (and the ops without their SDSC lines), which wait in the
   * compile store until a view that shows one asks (`needPassTexts`).
   */
  textsFailed?: string | null;
  /** A remark for the results line ("edited KTIR"), or "". */
  note: string;
  /** The edited KTIR this run ran in place of the source's (null: as compiled or opened). */
  ktir: string | null;
  /** Run timing-only although the source could run with numbers (external data missing). */
  timingOnly?: boolean;
  /** Run with the user's tensors (the Run inputs panel). */
  withData?: boolean;
}

/**
 * A source that opened but did not run (a KTIR module missing scalar values), with what a
 * run of it takes: the Run inputs tab lists it, so the values can be given and run.
 */
export interface Unrun {
  target: SourceRef;
  /** Example name, or null for an opened file. */
  example: string | null;
  /** The edited KTIR that was run in place of the source, or null. */
  ktir: string | null;
  /** The file or example name, for headings. */
  name: string;
  io: RunIo;
  /** Why it did not run. */
  failure: ErrorInfo;
}

/** Compare mode: a second run beside the one on screen. */
export interface Comparison {
  /** What the second run changes. */
  spec: CompareSpec;
  /** The second run, once it has finished. */
  other: RunResult | null;
  /** Why the second run did not finish (null: it did, or is running). */
  error: string | null;
  running: boolean;
}

/** A request to highlight (and maybe scroll to) a line of one IR editor. */
export interface Reveal {
  kind: IrKind;
  /** 1-based line; null clears the highlight; left out: the highlight stays. */
  line?: number | null;
  scroll: boolean;
  /** Also switch the IR view to this editor. */
  show: boolean;
}

/** What every view may read; the page replaces it and tells views what changed. */
export interface PageState {
  readonly loaded: Loaded | null;
  /** The last run's source when it failed but could list its inputs (else null). */
  readonly unrun: Unrun | null;
  /** Id of the tab on screen. */
  readonly view: string;
  /** KTIR lines linked across views (tiles, events, graph node, editor). */
  readonly lines: LineRange | null;
  /** The last reveal asked for (acted on when "reveal" is in the changes). */
  readonly reveal: Reveal | null;
  /** The device op whose graph node is selected. */
  readonly op: string | null;
  readonly core: number | null;
  /** Simulated time shown, in cycles. */
  readonly time: number;
  readonly playing: boolean;
  /** The KTIR text in the editor (set from outside on load, restore and failed runs). */
  readonly ktir: string;
  /** A run is in progress. */
  readonly busy: boolean;
  /** Compare mode's second run (null: not comparing). */
  readonly compare: Comparison | null;
  /** The machine presets the wasm module offers. */
  readonly machines: readonly string[];
}

/** The parts of the page state an update is about. */
export type Change =
  | "run"
  | "unrun"
  | "view"
  | "lines"
  | "reveal"
  | "op"
  | "core"
  | "time"
  | "ktir"
  | "busy"
  | "compare"
  | "theme"
  | "passTexts";

/** The shared clock: simulated time, play / pause and speed (the transport bar). */
export interface Clock {
  readonly time: number;
  readonly isPlaying: boolean;
  readonly totalCycles: number;
  setTime(t: number): void;
  setPlaying(playing: boolean): void;
  stepSpeed(delta: number): void;
}

/** What a view may ask of the page. */
export interface ViewContext {
  readonly clock: Clock;
  /** Shows a tab. */
  setView(id: string): void;
  selectCore(core: number | null): void;
  /** A trace event was picked: link its line, core and time (and open the IR if asked). */
  selectEvent(e: TraceEvent, showIr?: boolean): void;
  /** A line of an IR editor was clicked. */
  selectLine(kind: IrKind, line: number): void;
  /** A graph node was clicked (id "op:NAME", ...; null: none). */
  selectNode(id: string | null): void;
  /** Opens a device op's kernel (KTIR) or bundle entry (SDSC) in the IR view. */
  openOp(kind: IrKind, op: string): void;
  /**
   * A view shows pass texts the run came without (`textsPending`): those of the passes
   * `names` (absent: all) are read from the compile store or the worker, then "passTexts"
   * changes. Asking again while they come is free.
   */
  needPassTexts(names?: readonly string[]): void;
  /** The KTIR editor's text changed (edited, reset or set). */
  ktirChanged(text: string): void;
  runKtir(text: string): void;
  /**
   * Runs what is loaded again with the user's tensors and KTIR scalar values; resolves with
   * the failure (its `input` naming the row it concerns), or null when the run went through.
   */
  runWithInputs(data: RunData, args: Record<string, string>): Promise<ErrorInfo | null>;
  /** An output (graph) or buffer (KTIR) of the last run as `.npy` bytes. */
  outputNpy(name: string): Promise<Uint8Array>;
  verify(text: string): Promise<Diagnostic[]>;
  /** Something kept in the URL changed. */
  save(): void;
  /** Compares the run on screen with a second run that changes `spec` (null: stop comparing). */
  compare(spec: CompareSpec | null): void;
}

/** A keyboard shortcut, listed in the help panel when it has a label. */
export interface Shortcut {
  /** `KeyboardEvent.key` values it answers (unique across the page). */
  keys: readonly string[];
  /** How the help panel writes the keys; no label: not listed. */
  label?: string;
  /** What it does, for the help panel. */
  does: string;
  /** Handles the key; false lets the browser have it. */
  run(ev: KeyboardEvent): boolean;
}

/**
 * A view's own fields in the URL state. They sit beside the page's fields in one flat,
 * versioned object (urlState.ts), so field names must be unique across the page.
 */
export interface UrlPart<T extends Record<string, unknown>> {
  /** Nothing to restore. */
  readonly empty: T;
  /** A value other than `empty`, for the round-trip test. */
  readonly sample: T;
  /** Its fields from a parsed state object (JSON, or plain v1 parameters): well-typed only. */
  decode(o: Readonly<Record<string, unknown>>): T;
  /** The fields to write; null or false fields are left out of the URL. */
  encode(value: T): Record<string, unknown>;
  /** The value from the mounted view. */
  read(): T;
  /** Restores a value before the page loads its source. */
  apply(value: T): void;
}

/** One view of the page. Construction must not touch the DOM (the registry is unit-tested). */
export interface View {
  /** Stable id: the `view=` URL value, the tab's data-view and the section's id `view-<id>`. */
  readonly id: string;
  /** Tab label. */
  readonly title: string;
  /** The key that shows the tab; a view without one is a fixed pane (mounted into `#<id>`). */
  readonly key?: string;
  /** Time runs and Space plays while this tab is shown. */
  readonly usesClock?: boolean;
  /**
   * Hears every change while hidden. A tab without it hears only "view" while hidden, and
   * the rest when shown, so a large run is digested by the tab on screen alone; a tab that
   * also draws outside its panel (the pass list beside every tab) needs it.
   */
  readonly eager?: boolean;
  readonly shortcuts?: readonly Shortcut[];
  readonly url?: UrlPart<Record<string, unknown>>;
  /** Builds (or takes over) its DOM inside `container`; called once, before any update. */
  mount(container: HTMLElement, ctx: ViewContext): void;
  /** Renders the parts of `state` named in `changed`. */
  update(state: PageState, changed: ReadonlySet<Change>): void;
}
