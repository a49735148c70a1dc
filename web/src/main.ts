// Page entry: owns the page state and the worker, and drives the views listed in
// views/registry.ts. The page never calls wasm itself, and never calls a view directly:
// views render the state in `update` and report clicks through their context.

import type {
  Diagnostic,
  ExampleInfo,
  NamedBytes,
  PipelineResult,
  RunOptions,
  RunProgress,
  SourceMap,
  TraceEvent,
} from "./api";
import { CancelledError, WorkerHost, type StopReason } from "./client";
import { RUN_FAILED_MESSAGE, RUN_MESSAGE, type RunFailure, type RunReport } from "./embed/url";
import { lessonMetrics } from "./lessons/metrics";
import { byId, el, isEditableTarget } from "./dom";
import {
  describeLocation,
  errorLocation,
  errorMessage,
  hydrateRun,
  LocatedError,
  type ErrorInfo,
  type PassTexts,
  type RunData,
  type RunResult,
  type SourceRef,
} from "./protocol";
import type { LineRange } from "./ring/draw";
import { sceneCores, sceneCycles } from "./ring/model";
import { LINK_RUN_BUDGET_MS, progressText, runStatusText, stoppedText } from "./runStatus";
import {
  kernelAt,
  kernelOfOp,
  opNamed,
  opOfKernel,
  opsOfNode,
  sdscOpAt,
  withPassTexts,
} from "./session";
import { clockShortcuts, Transport } from "./transport";
import {
  checkNames,
  describeLinkProblems,
  EMPTY_STATE,
  formatUrlState,
  MAX_URL_FILE_CHARS,
  readUrlState,
  toUrlFile,
  urlFileBytes,
  type ReadUrlState,
  type UrlState,
} from "./urlState";
import { formatSessionFile, readSessionFile, sessionFileName } from "./sessionFile";
import { Drawers } from "./drawers";
import { sanitizeSettings, settingsOptions } from "./runSettings";
import { specOptions, type CompareSpec } from "./compare";
import { OptionsPanel } from "./views/options";
import { ErrorBanner } from "./views/errorBanner";
import { Notice } from "./views/notice";
import { Header } from "./views/header";
import { Help, helpRows, pageShortcuts } from "./views/help";
import { createViews } from "./views/registry";
import type {
  Change,
  Comparison,
  IrKind,
  Loaded,
  PageState,
  Reveal,
  Shortcut,
  Unrun,
  View,
  ViewContext,
} from "./views/view";

const DEFAULT_VIEW = "ring";
/** The change a hidden tab hears at once. */
const VIEW_ONLY: ReadonlySet<Change> = new Set(["view"]);
/** A run taking longer than this shows the Cancel button. */
const CANCEL_AFTER_MS = 300;

const banner = new ErrorBanner();
const notice = new Notice();

/** How a run ended: "ok", a failure (shown in the banner), stopped, or superseded by a newer one. */
type Outcome = "ok" | "failed" | StopReason | "superseded";

window.addEventListener("error", (ev) => {
  banner.show("Unexpected error", ev.message || errorMessage(ev.error));
});
window.addEventListener("unhandledrejection", (ev) => {
  banner.show("Unexpected error", errorMessage(ev.reason));
});

class App {
  private readonly host = new WorkerHost(
    () =>
      new Worker(new URL("./worker.ts", import.meta.url), { type: "module", name: "spyre-wasm" }),
  );
  private readonly header: Header;
  private readonly clock = new Transport();
  private readonly views: View[] = createViews();
  private readonly tabs: View[] = this.views.filter((v) => v.key !== undefined);
  private readonly tabButtons = new Map<string, HTMLButtonElement>();
  private readonly panels = new Map<string, HTMLElement>();
  /** What hidden tabs have not been told yet (they hear it when shown). */
  private readonly held = new Map<View, Set<Change>>();
  private readonly keys = new Map<string, Shortcut>();
  private readonly help: Help;
  private readonly drawers = new Drawers();
  private readonly optionsPanel = new OptionsPanel(
    () => {
      void this.rerun();
    },
    () => this.clearCompileCache(),
  );
  private readonly mainPane = document.querySelector<HTMLElement>(".main-pane")!;
  private readonly viewMeta = byId<HTMLSpanElement>("view-meta");
  private readonly cancelButton = byId<HTMLButtonElement>("cancel-run");
  private examples: ExampleInfo[] = [];
  private machines: string[] = [];
  private loaded: Loaded | null = null;
  /** The last run's source when it failed but listed what it takes (the Run inputs tab). */
  private unrun: Unrun | null = null;
  private view = DEFAULT_VIEW;
  private lines: LineRange | null = null;
  private reveal: Reveal | null = null;
  private op: string | null = null;
  private core: number | null = null;
  /** The KTIR text in the editor. */
  private ktir = "";
  private runSeq = 0;
  private running = 0;
  private embed = false;
  private saveTimer: ReturnType<typeof setTimeout> | null = null;
  /** A KTIR file that failed to load: its text is in the editor, and Run runs it. */
  private failedKtir: { fileName: string } | null = null;
  /** What the last failed run threw (the Run inputs panel shows it on the row it names). */
  private lastFailure: unknown = null;
  /** Compare mode: what the second run changes (null: not comparing). */
  private compareSpec: CompareSpec | null = null;
  /** Compare mode's second run, for the views. */
  private comparison: Comparison | null = null;
  private compareSeq = 0;

  constructor() {
    this.header = new Header({
      onExample: (name) => void this.load({ kind: "example", name }, name),
      onFile: (bytes, fileName, extra) => void this.openFile(bytes, fileName, extra),
      onFileError: (message) => banner.show("Could not open file", message),
      onMachine: () => void this.rerun(),
    });
    // The header has applied the saved theme by now, so views read the right palette.
    this.mountViews();
    const shortcuts = [
      ...clockShortcuts(this.clock, () => this.activeTab()?.usesClock === true),
      ...this.views.flatMap((v) => v.shortcuts ?? []),
      ...pageShortcuts({
        share: () => void this.share(),
        toggleTheme: () => this.header.setTheme(this.header.theme === "dark" ? "light" : "dark"),
        toggleHelp: () => this.help.toggle(),
      }),
    ];
    for (const sc of shortcuts) for (const k of sc.keys) this.keys.set(k, sc);
    this.help = new Help(helpRows(this.tabs, shortcuts));
    this.header.onThemeChange(() => this.broadcast(["theme"]));
    this.clock.onTime(() => this.broadcast(["time"]));
    this.clock.onPause(() => this.scheduleSave());
    this.cancelButton.addEventListener("click", () => this.cancel());
    byId("share").addEventListener("click", () => void this.share());
    byId("export-trace").addEventListener("click", () => void this.exportTrace());
    document.addEventListener("keydown", (ev) => this.onKey(ev));
    window.addEventListener("hashchange", () => void this.onHashChange());
  }

  /** Builds a tab and a panel for every tab view, and mounts every view. */
  private mountViews(): void {
    const bar = byId("view-tabs");
    const spacer = bar.querySelector(".spacer");
    const transport = byId("transport");
    const ctx = this.context();
    for (const v of this.views) {
      let container: HTMLElement | null;
      if (v.key !== undefined) {
        const tab = el(
          "button",
          {
            className: "tab",
            role: "tab",
            id: `tab-${v.id}`,
            "aria-controls": `view-${v.id}`,
            "data-view": v.id,
            type: "button",
          },
          `${v.title} `,
          el("kbd", { text: v.key }),
        );
        tab.addEventListener("click", () => this.setView(v.id));
        bar.insertBefore(tab, spacer);
        this.tabButtons.set(v.id, tab);
        // The existing views' markup ships in index.html (painted before the script runs);
        // a view without any gets an empty panel to build in.
        container = document.getElementById(`view-${v.id}`);
        if (!container) {
          container = el("section", {
            className: "view",
            id: `view-${v.id}`,
            "data-testid": `view-${v.id}`,
            hidden: true,
          });
          this.mainPane.insertBefore(container, transport);
        }
        container.setAttribute("role", "tabpanel");
        container.setAttribute("aria-labelledby", `tab-${v.id}`);
        this.panels.set(v.id, container);
      } else {
        container = document.getElementById(v.id);
        if (!container) {
          container = el("section", { id: v.id, "data-testid": v.id });
          byId("app").append(container);
        }
      }
      v.mount(container, ctx);
    }
  }

  private context(): ViewContext {
    return {
      clock: this.clock,
      setView: (id) => this.setView(id),
      selectCore: (core) => this.selectCore(core),
      selectEvent: (e, showIr) => this.selectEvent(e, showIr),
      selectLine: (kind, line) => this.onIrLine(kind, line),
      selectNode: (id) => this.onGraphSelect(id),
      openOp: (kind, op) => this.showOpIn(kind, op),
      needPassTexts: (names) => void this.loadPassTexts(names),
      ktirChanged: (text) => {
        this.ktir = text;
        this.scheduleSave();
      },
      runKtir: (text) => void this.runKtir(text),
      runWithInputs: (data, args) => this.runWithInputs(data, args),
      outputNpy: async (name) => (await this.host.call("outputNpy", { name })).bytes,
      verify: (text) => this.verify(text),
      save: () => this.scheduleSave(),
      compare: (spec) => this.setCompare(spec),
    };
  }

  private state(): PageState {
    return {
      loaded: this.loaded,
      unrun: this.unrun,
      view: this.view,
      lines: this.lines,
      reveal: this.reveal,
      op: this.op,
      core: this.core,
      time: this.clock.time,
      playing: this.clock.isPlaying,
      ktir: this.ktir,
      busy: this.running > 0,
      compare: this.comparison,
      machines: this.machines,
    };
  }

  /**
   * Tells the views what changed. A hidden tab (unless `eager`) hears only that the view
   * changed (so it can stop animating); the rest waits until it is shown, so a large run is
   * digested by the tab on screen alone, and the others digest it when (and if) opened.
   */
  private broadcast(changes: Change[]): void {
    const s = this.state();
    const changed = new Set(changes);
    for (const v of this.views) {
      const hidden = v.key !== undefined && v.id !== this.view && v.eager !== true;
      const held = this.held.get(v);
      if (hidden) {
        const later = held ?? new Set<Change>();
        for (const c of changed) if (c !== "view") later.add(c);
        if (later.size > 0) this.held.set(v, later);
        if (changed.has("view")) v.update(s, VIEW_ONLY);
        continue;
      }
      if (held) {
        this.held.delete(v);
        v.update(s, new Set([...held, ...changed]));
      } else v.update(s, changed);
    }
  }

  private activeTab(): View | undefined {
    return this.tabs.find((t) => t.id === this.view);
  }

  /** Whether the editor's KTIR differs from the run's source. */
  private get edited(): boolean {
    return this.loaded !== null && this.ktir !== this.loaded.originalKtir;
  }

  async start(): Promise<void> {
    const read = await readUrlState(location.hash);
    const wanted = read.state;
    this.embed = wanted.embed;
    if (this.embed) {
      byId("app").classList.add("embed");
      const bar = byId("embed-bar");
      bar.hidden = false;
      const link = byId<HTMLAnchorElement>("embed-open");
      link.href = location.href.replace(/([#&])embed=1&?/, "$1");
    }
    this.setView(wanted.view ?? DEFAULT_VIEW);
    this.header.setStatus("loading the wasm module…");
    document.body.dataset.state = "starting";
    const info = await this.host.call("init", {});
    this.examples = info.examples;
    this.machines = info.machines;
    this.header.setStatus(`spyre ${info.version}`);
    this.header.setMachines(info.machines, "spyre32");
    const known = this.examples.map((e) => e.name);
    const example = wanted.example && known.includes(wanted.example) ? wanted.example : known[0];
    this.header.setExamples(this.examples, wanted.file ? null : (example ?? null));
    await this.restore(read);
  }

  /**
   * Opens a dropped or picked file: a session file restores its session, anything else runs
   * (with the files dropped along with it: an ONNX model's external data). A model whose
   * external data was not given runs timing-only, and the notice names the missing file.
   */
  private async openFile(
    bytes: Uint8Array,
    fileName: string,
    extra: NamedBytes[] = [],
  ): Promise<void> {
    let session: UrlState | null;
    try {
      session = /\.json$/i.test(fileName) ? readSessionFile(bytes) : null;
    } catch (err) {
      banner.show(`Could not open ${fileName}`, errorMessage(err));
      return;
    }
    if (session) {
      await this.restore({ state: session, problems: [] });
      return;
    }
    const target: SourceRef =
      extra.length > 0
        ? { kind: "file", bytes, fileName, extra }
        : { kind: "file", bytes, fileName };
    if ((await this.load(target, null)) !== "failed") return;
    const missing = /external data file '([^']+)' was not given/.exec(
      errorMessage(this.lastFailure),
    )?.[1];
    if (missing === undefined) return;
    if ((await this.load(target, null, { timingOnly: true })) === "ok") {
      notice.show(
        `${fileName} keeps its weights in ${missing}, which was not opened with it: showing a timing-only run. Open or drop ${fileName} together with ${missing} to run it with numbers.`,
      );
    }
  }

  /**
   * Runs what is loaded again with the user's tensors (and KTIR scalar values); returns the
   * failure, if any, for the Run inputs panel to show on the row it concerns.
   */
  private async runWithInputs(
    data: RunData,
    args: Record<string, string>,
  ): Promise<ErrorInfo | null> {
    const u = this.unrun;
    const c = this.loaded;
    // A source that failed to run (its inputs listed) is the one the panel shows.
    const outcome = u
      ? await this.load(u.target, u.example, { ktir: u.ktir, t: null, data, args })
      : c
        ? await this.load(c.target, c.example, {
            ktir: this.edited ? this.ktir : null,
            t: null,
            data,
            args,
            timingOnly: c.timingOnly === true,
          })
        : null;
    if (outcome === null) return { message: "nothing is loaded" };
    if (outcome !== "failed") return null;
    const err = this.lastFailure;
    const where = err instanceof LocatedError ? err.location : errorLocation(err);
    return { message: errorMessage(err), ...where };
  }

  /** What is on screen, for messages ("the example matmul_add", "the file a.mlir"). */
  private describeLoaded(): string {
    const c = this.loaded;
    if (!c) return "no run (pick an example or open a file)";
    const what = c.example !== null ? `the example ${c.example}` : `the file ${c.res.fileName}`;
    return c.note ? `${what} (${c.note})` : what;
  }

  /**
   * Loads what a link asks for. Whatever in it cannot be used (unreadable state, unknown
   * names, sources over the limits, a run stopped by its time budget) is replaced by the
   * nearest thing that can, and the notice says what was wrong and what is shown instead.
   */
  private async restore(read: ReadUrlState): Promise<void> {
    const wanted = { ...read.state };
    const problems = [
      ...read.problems,
      ...checkNames(
        wanted,
        this.examples.map((e) => e.name),
        this.machines,
      ),
    ];
    notice.clear();
    if (wanted.machine) this.header.setMachine(wanted.machine);
    // The second run follows the first (see `load`).
    this.compareSpec = wanted.compare;
    this.comparison = null;
    this.compareSeq++;
    this.broadcast(["compare"]);
    this.optionsPanel.set(sanitizeSettings(wanted));
    const first = this.examples[0]?.name ?? null;
    const example = wanted.example ?? first;
    let target: SourceRef | null = null;
    let fileBytes: Uint8Array | null = null;
    if (wanted.file) {
      try {
        fileBytes = urlFileBytes(wanted.file);
      } catch (err) {
        problems.push(`its file ${wanted.file.name}: ${errorMessage(err)}`);
        wanted.file = null;
      }
    }
    if (wanted.file && fileBytes) {
      target = { kind: "file", bytes: fileBytes, fileName: wanted.file.name };
    } else if (example !== null) {
      target = { kind: "example", name: example };
    }
    if (!target) {
      banner.show("No examples", "the wasm module lists no examples; open a file instead");
      document.body.dataset.state = "ready";
      return;
    }
    for (const v of this.views) v.url?.apply(v.url.decode(wanted));
    const name = wanted.file ? null : example;
    // A link's own program (edited KTIR, an opened file) runs under a time budget.
    const budget = wanted.ktir !== null || wanted.file !== null ? LINK_RUN_BUDGET_MS : 0;
    const outcome = await this.load(target, name, { ktir: wanted.ktir, t: wanted.t }, budget);
    let stopped: StopReason | null = null;
    let instead: string | null = null;
    if (outcome === "failed" && wanted.ktir !== null) {
      // The edited KTIR does not run: load the source as compiled and show the edit.
      const base = await this.load(
        target,
        name,
        { ktir: null, t: wanted.t },
        wanted.file ? budget : 0,
      );
      if (base === "ok") {
        this.ktir = wanted.ktir;
        this.broadcast(["ktir"]);
      }
    } else if (outcome === "cancelled" || outcome === "budget") {
      stopped = outcome;
      if (wanted.ktir !== null && target.kind === "example") {
        // The example itself is safe to run: show it as compiled, with the edit not run.
        if ((await this.load(target, name, { ktir: null, t: null })) === "ok") {
          this.ktir = wanted.ktir;
          this.broadcast(["ktir"]);
          instead = `the example ${target.name} as compiled (the link's KTIR is in the editor, not run)`;
        }
      } else if (first !== null) {
        this.header.setExamples(this.examples, first);
        if ((await this.load({ kind: "example", name: first }, first)) === "ok") {
          instead = `the example ${first}`;
        }
      }
    }
    if (wanted.core !== null) this.selectCore(wanted.core);
    if (wanted.line !== null) this.onIrLine("ktir", wanted.line);
    if (wanted.t !== null) {
      this.clock.setPlaying(false);
      this.clock.setTime(wanted.t);
    }
    this.setView(wanted.view ?? this.view);
    const shown = instead ?? this.describeLoaded();
    const messages = [describeLinkProblems(problems, shown)];
    if (stopped)
      messages.push(
        `This link's run was stopped: ${stoppedText(stopped)}; showing ${shown} instead.`,
      );
    const text = messages.filter((m) => m !== "").join("\n");
    if (text) notice.show(text);
  }

  private async onHashChange(): Promise<void> {
    // Hand-edited or pasted links: restore when the hash is not the one we wrote.
    if (location.hash === this.lastHash) return;
    await this.restore(await readUrlState(location.hash));
  }

  private options(target: SourceRef, ktir: string | null, timingOnly = false): RunOptions {
    const o: RunOptions = {
      machine: this.header.machine,
      ...settingsOptions(this.optionsPanel.settings),
    };
    if (ktir !== null) o.ktir = ktir;
    if (timingOnly) o.timingOnly = true;
    // Gallery models too large to run with numbers run timing-only.
    const forced =
      target.kind === "example" &&
      this.examples.find((e) => e.name === target.name)?.timingOnly === true;
    this.optionsPanel.setForcedTimingOnly(forced);
    if (forced) o.timingOnly = true;
    return o;
  }

  /**
   * Runs a source. A failure or a stop leaves the previous run on screen. With `budgetMs`,
   * a run still going after that long is stopped (the worker restarted).
   */
  private async load(
    target: SourceRef,
    example: string | null,
    keep: {
      ktir?: string | null;
      t?: number | null;
      /** The user's tensors (Run inputs panel). */
      data?: RunData;
      /** KTIR scalar argument values. */
      args?: Record<string, string>;
      /** Run timing-only (a model opened without its external data). */
      timingOnly?: boolean;
    } = {},
    budgetMs = 0,
  ): Promise<Outcome> {
    const seq = ++this.runSeq;
    const started = performance.now();
    const ktir = keep.ktir ?? null;
    const name = target.kind === "example" ? target.name : target.fileName;
    const before = ktir !== null || /\.mlir$/i.test(name) ? "running KTIR" : "compiling";
    let progress: RunProgress | null = null;
    const showProgress = (): void => {
      if (seq === this.runSeq) {
        this.header.setStatus(progressText(before, progress, performance.now() - started));
      }
    };
    showProgress();
    const ticker = setInterval(showProgress, 1000);
    const budget =
      budgetMs > 0
        ? setTimeout(() => {
            if (seq === this.runSeq && this.running > 0) this.host.restart("time budget", "budget");
          }, budgetMs)
        : null;
    this.setRunning(+1);
    let res: RunResult;
    try {
      const options = this.options(target, ktir, keep.timingOnly === true);
      if (keep.args && Object.keys(keep.args).length > 0) options.args = keep.args;
      const params = keep.data ? { target, options, data: keep.data } : { target, options };
      res = hydrateRun(
        await this.host.call("run", params, (p) => {
          progress = p;
          showProgress();
        }),
      );
    } catch (err) {
      this.setRunning(-1);
      this.lastFailure = err;
      if (seq !== this.runSeq) return "superseded";
      if (err instanceof CancelledError) {
        const text = stoppedText(err.reason);
        this.header.setStatus(`${text}; the worker was restarted`);
        notice.show(
          `${text.charAt(0).toUpperCase()}${text.slice(1)}; the worker was restarted. Showing ${this.describeLoaded()}.`,
        );
        this.restoreHeader();
        if (this.running === 0) document.body.dataset.state = "ready";
        return err.reason;
      }
      this.header.setStatus("failed");
      const what =
        target.kind === "example" ? `Example ${target.name}` : `Could not load ${target.fileName}`;
      const io = err instanceof LocatedError ? err.io : null;
      const missing = io?.kind === "ktir" && io.inputs.missing.length > 0;
      const hint = missing
        ? "\nGive the missing values in the Run inputs tab (key 8), then run with them."
        : "";
      banner.show(what, `${errorMessage(err)}${hint}`, describeLocation(err));
      this.reportFailure(errorMessage(err));
      this.restoreHeader();
      // A file given for the run that did not fit leaves the listing as it was (the error
      // goes on that file's row); any other failure lists what this source takes, if it can.
      const where = err instanceof LocatedError ? err.location : errorLocation(err);
      if (where.input === undefined)
        this.unrun = io
          ? {
              target,
              example,
              ktir,
              name,
              io,
              failure: { message: errorMessage(err), ...where },
            }
          : null;
      this.broadcast(["unrun"]);
      if (
        target.kind === "file" &&
        /\.mlir$/i.test(target.fileName) &&
        ktir === null &&
        keep.data === undefined
      ) {
        // An invalid module opens in the editor with its errors marked, to be fixed in place.
        this.failedKtir = { fileName: target.fileName };
        this.ktir = new TextDecoder().decode(target.bytes);
        this.header.setSource(`${target.fileName} (not run)`, null);
        this.broadcast(["ktir"]);
        // A valid module that lacks values is completed in the Run inputs tab; one that
        // does not verify is fixed in the editor.
        this.setView(missing ? "inputs" : "ir");
      }
      document.body.dataset.state = "error";
      return "failed";
    } finally {
      clearInterval(ticker);
      if (budget !== null) clearTimeout(budget);
    }
    this.setRunning(-1);
    if (seq !== this.runSeq) return "superseded"; // a newer request superseded this one
    // For measuring how soon the page answers once a large run's result is in.
    performance.mark("spyre:result");
    banner.clear();
    this.failedKtir = null;
    this.unrun = null;
    // What an earlier stop or link said no longer describes the screen (a link's restore
    // shows its own notice after its runs).
    notice.clear();
    const r = res.result;
    const originalKtir =
      res.kind === "ktir" ? res.source : (r.passes.find((p) => p.name === "ktir")?.text ?? r.ktir);
    this.shownRuns++;
    this.loaded = {
      target,
      example,
      res,
      originalKtir,
      sdsc: res.result.passes.find((p) => p.name === "sdsc")?.text ?? "",
      ktir: ktir !== null && ktir !== originalKtir ? ktir : null,
      note: ktir !== null && ktir !== originalKtir ? "edited KTIR" : "",
      timingOnly: keep.timingOnly === true,
      withData: keep.data !== undefined,
    };
    this.header.setSource(example ? "" : res.fileName, example);
    this.ktir = ktir ?? r.ktir;
    this.lines = null;
    this.reveal = null;
    if (this.core !== null && this.core >= sceneCores(r.run)) this.core = null;
    this.clock.setRun(sceneCycles(r.run), keep.t ?? 0);
    this.broadcast(["run", "unrun", "ktir", "lines", "core"]);
    this.showLinesMeta();
    const ms = Math.round(performance.now() - started);
    this.header.setStatus(runStatusText(res, ms));
    // Whether this run's pass texts were asked for (set when a view asks).
    delete document.body.dataset.passTexts;
    if (res.compileCache) document.body.dataset.compileCache = res.compileCache.outcome;
    else delete document.body.dataset.compileCache;
    document.body.dataset.state = "ready";
    document.body.dataset.runs = String(Number(document.body.dataset.runs ?? "0") + 1);
    this.reportRun(res.result);
    this.scheduleSave();
    // A comparison follows the run on screen: its second run is made again from this one.
    if (this.compareSpec) void this.runCompare();
    return "ok";
  }

  /**
   * Embedded: tells the page around the frame what the run measured (the quantities lessons
   * check). Only derived figures of the run that page asked for leave the frame, so any origin
   * may receive them (the standalone script embeds from other sites).
   */
  private reportRun(run: PipelineResult): void {
    if (!this.embed || window.parent === window) return;
    const s = this.optionsPanel.settings;
    const settings: RunReport["settings"] = {
      example: this.loaded?.example ?? null,
      machine: this.header.machine,
      allocator: s.allocator ?? "greedy",
      attentionBlock: s.attentionBlock,
      doubleBuffer: !s.noDoubleBuffer,
    };
    const report: RunReport = { type: RUN_MESSAGE, metrics: lessonMetrics(run), settings };
    window.parent.postMessage(report, "*");
  }

  /** Embedded: tells the page around the frame that a run failed, and why. */
  private reportFailure(message: string): void {
    if (!this.embed || window.parent === window) return;
    const report: RunFailure = { type: RUN_FAILED_MESSAGE, message };
    window.parent.postMessage(report, "*");
  }

  /** Starts (or, with null, stops) comparing the run on screen with a second configuration. */
  private setCompare(spec: CompareSpec | null): void {
    this.compareSpec = spec;
    this.scheduleSave();
    void this.runCompare();
  }

  /**
   * Runs compare mode's second configuration beside the run on screen. It runs aside in the
   * worker, so trace export and output downloads still read the run on screen.
   */
  private async runCompare(): Promise<void> {
    const seq = ++this.compareSeq;
    const spec = this.compareSpec;
    const c = this.loaded;
    const finish = (comparison: Comparison | null): void => {
      this.comparison = comparison;
      this.broadcast(["compare"]);
      if (comparison && !comparison.running)
        document.body.dataset.compares = String(Number(document.body.dataset.compares ?? "0") + 1);
    };
    if (!spec || !c) return finish(null);
    if (spec.ktirEdit && c.ktir === null)
      return finish({ spec, other: null, error: null, running: false });
    finish({ spec, other: null, error: null, running: true });
    const options = specOptions(this.options(c.target, c.ktir, c.timingOnly === true), spec);
    let done: Comparison;
    try {
      const other = hydrateRun(
        await this.host.call("run", { target: c.target, options, aside: true }),
      );
      done = { spec, other, error: null, running: false };
    } catch (err) {
      const error = err instanceof CancelledError ? stoppedText(err.reason) : errorMessage(err);
      done = { spec, other: null, error, running: false };
    }
    if (seq === this.compareSeq) finish(done);
  }

  /** Keeps the header showing what is actually displayed. */
  private restoreHeader(): void {
    const c = this.loaded;
    this.header.setSource(c && !c.example ? c.res.fileName : "", c?.example ?? null);
  }

  private setRunning(delta: number): void {
    const wasBusy = this.running > 0;
    this.running = Math.max(0, this.running + delta);
    if (this.running > 0 !== wasBusy) this.broadcast(["busy"]);
    if (this.running > 0) {
      document.body.dataset.state = "running";
      setTimeout(() => {
        if (this.running > 0) this.cancelButton.hidden = false;
      }, CANCEL_AFTER_MS);
    } else {
      this.cancelButton.hidden = true;
    }
  }

  private cancel(): void {
    if (this.running === 0) return;
    this.host.restart("cancelled", "cancelled");
  }

  /** Empties the compile cache; what to tell the user. */
  private async clearCompileCache(): Promise<string> {
    try {
      const { note } = await this.host.call("clearCache", {});
      return note ?? "compile cache cleared";
    } catch (err) {
      return `could not clear the compile cache: ${errorMessage(err)}`;
    }
  }

  private async rerun(): Promise<void> {
    const c = this.loaded;
    if (!c) return;
    await this.load(c.target, c.example, {
      ktir: this.edited ? this.ktir : null,
      t: null,
      timingOnly: c.timingOnly === true,
    });
  }

  private async runKtir(text: string): Promise<void> {
    const failed = this.failedKtir;
    if (failed) {
      // The editor holds a file that did not load: run the edited text as that file.
      const bytes = new TextEncoder().encode(text);
      await this.load({ kind: "file", bytes, fileName: failed.fileName }, null);
      return;
    }
    const c = this.loaded;
    if (!c) return;
    const edited = text !== c.originalKtir;
    const outcome = await this.load(c.target, c.example, {
      ktir: edited ? text : null,
      t: this.clock.time,
    });
    if (outcome !== "ok" && edited) {
      this.ktir = text;
      this.broadcast(["ktir"]);
    }
  }

  private async verify(text: string): Promise<Diagnostic[]> {
    return this.host.call("verifyKtir", { text });
  }

  // ---- links between IR lines, graph nodes, tiles and events ----

  /** Sets the linked lines, and what else goes with them, in one update. */
  private link(p: { lines?: LineRange | null; reveal?: Reveal; op?: string | null }): void {
    const changes: Change[] = [];
    if (p.lines !== undefined) {
      this.lines = p.lines;
      changes.push("lines");
    }
    if (p.reveal) {
      this.reveal = p.reveal;
      changes.push("reveal");
    }
    if (p.op) {
      this.op = p.op;
      changes.push("op");
    }
    this.broadcast(changes);
    if (p.lines !== undefined) this.showLinesMeta();
  }

  private showLinesMeta(): void {
    const lines = this.lines;
    const c = this.loaded;
    if (!lines || !c) {
      this.viewMeta.textContent = "";
      return;
    }
    const events = c.res.result.run.events;
    let n = 0;
    for (let i = 0; i < events.length; i++) {
      const line = events.line(i);
      if (line >= lines.from && line <= lines.to) n++;
    }
    const what = lines.from === lines.to ? `line ${lines.from}` : `lines ${lines.from}–${lines.to}`;
    const text = (this.ktir.split("\n")[lines.from - 1] ?? "").trim();
    this.viewMeta.textContent = `KTIR ${what}: ${n} event${n === 1 ? "" : "s"} · ${text.slice(0, 60)}`;
    this.viewMeta.title = text;
  }

  /** The run's source map (empty before the first run). */
  private get map(): SourceMap {
    return this.loaded?.res.result.sourceMap ?? { nodes: [], ops: [], kernels: [] };
  }

  private onIrLine(kind: IrKind, line: number): void {
    const c = this.loaded;
    if (!c) return;
    const map = this.map;
    if (kind === "ktir") {
      const k = kernelAt(map, line);
      const isHeader = k !== null && k.lines.from === line;
      this.link({
        lines: isHeader && k ? { ...k.lines } : { from: line, to: line },
        reveal: { kind: "ktir", line, scroll: false, show: false },
        op: opOfKernel(map, k)?.name ?? null,
      });
    } else {
      const op = sdscOpAt(map, line);
      const kl = op ? this.kernelLines(op.name) : null;
      this.link({
        ...(kl ? { lines: kl } : {}),
        reveal: { kind: "sdsc", line, scroll: false, show: false },
        op: op?.name ?? null,
      });
    }
    this.scheduleSave();
  }

  private kernelLines(op: string): LineRange | null {
    const k = kernelOfOp(this.map, op);
    return k ? { ...k.lines } : null;
  }

  private onGraphSelect(id: string | null): void {
    if (!id?.startsWith("op:")) {
      this.link({ lines: null });
      return;
    }
    const map = this.map;
    const op = opsOfNode(map, id.slice(3)).find((o) => o.kernel !== null);
    const k = op?.kernel != null ? map.kernels[op.kernel] : undefined;
    if (k) {
      this.link({
        lines: { ...k.lines },
        reveal: { kind: "ktir", line: k.lines.from, scroll: true, show: false },
      });
    }
  }

  /** Counts the runs shown, so an answer about an older run's texts is dropped. */
  private shownRuns = 0;
  /** The passes whose texts were asked for, of the run shown (`shownRuns`). */
  private textsAsked: { run: number; names: Set<string> } = { run: -1, names: new Set() };
  /** Requests for pass texts not yet answered. */
  private textsInFlight = 0;

  /**
   * Reads the texts of the passes named (all when absent) that the run on screen came
   * without: a cache hit's wait in the compile store, a big run's in the worker. Each is asked
   * for once per run; the views are told when they come, and a failure is kept for them to
   * say (a later ask tries again).
   */
  private async loadPassTexts(names?: readonly string[]): Promise<void> {
    const c = this.loaded;
    if (!c) return;
    const run = this.shownRuns;
    if (this.textsAsked.run !== run) this.textsAsked = { run, names: new Set() };
    const asked = this.textsAsked.names;
    const pending = c.res.result.passes
      .filter((p) => p.text === null && !asked.has(p.name))
      .map((p) => p.name)
      .filter((n) => names === undefined || names.includes(n));
    if (pending.length === 0) return;
    for (const n of pending) asked.add(n);
    document.body.dataset.passTexts = "loading";
    this.textsInFlight++;
    let texts: PassTexts | null = null;
    let failed: string | null = null;
    try {
      texts = await this.host.call("passTexts", { names: pending });
      // The views take the texts in a task of their own: copying a full model's (some 80 MB)
      // into the page is one long task already.
      await new Promise((resolve) => setTimeout(resolve, 0));
    } catch (err) {
      failed = errorMessage(err);
      for (const n of pending) asked.delete(n);
    } finally {
      this.textsInFlight--;
    }
    // A newer run has its own texts.
    const cur = this.loaded;
    if (this.shownRuns !== run || !cur) return;
    let next: Loaded = { ...cur, textsFailed: failed };
    if (texts) {
      const result = withPassTexts(cur.res.result, texts);
      next = {
        ...cur,
        res: { ...cur.res, result },
        sdsc: result.passes.find((p) => p.name === "sdsc")?.text ?? "",
        textsFailed: null,
      };
      if (texts.note) notice.show(texts.note);
    }
    this.loaded = next;
    const lacking = next.res.result.passes.some((p) => p.text === null && pending.includes(p.name));
    document.body.dataset.passTexts =
      failed !== null || lacking ? "failed" : this.textsInFlight > 0 ? "loading" : "loaded";
    this.broadcast(["passTexts"]);
    // An SDSC entry asked for before its lines came is revealed now.
    const r = this.reveal;
    if (r && r.kind === "sdsc" && r.line === undefined && this.op !== null) {
      const at = opNamed(this.map, this.op)?.sdscLines;
      if (at) this.link({ reveal: { kind: "sdsc", line: at.from, scroll: true, show: false } });
    }
  }

  private showOpIn(kind: IrKind, op: string): void {
    this.setView("ir");
    if (kind === "ktir") {
      const r = this.kernelLines(op);
      if (r) this.link({ lines: r, reveal: { kind, line: r.from, scroll: true, show: true } });
      else this.link({ reveal: { kind, scroll: true, show: true } });
    } else {
      const at = opNamed(this.map, op)?.sdscLines;
      if (!at) this.op = op;
      this.link({ reveal: { kind, ...(at ? { line: at.from } : {}), scroll: true, show: true } });
    }
  }

  private selectEvent(e: TraceEvent, showIr = false): void {
    this.link({
      lines: { from: e.line, to: e.line },
      reveal: { kind: "ktir", line: e.line, scroll: true, show: false },
      op: opOfKernel(this.map, kernelAt(this.map, e.line))?.name ?? null,
    });
    this.selectCore(e.core);
    this.clock.setPlaying(false);
    this.clock.setTime(e.start + (e.end - e.start) / 2);
    if (showIr) {
      this.setView("ir");
      this.link({ reveal: { kind: "ktir", scroll: false, show: true } });
    }
  }

  private selectCore(core: number | null): void {
    this.core = core;
    this.broadcast(["core"]);
    this.scheduleSave();
  }

  // ---- views, URL state, share, export ----

  setView(view: string): void {
    if (this.drawers.current === "passes") this.drawers.close();
    this.view = view;
    this.mainPane.dataset.view = view;
    for (const [id, tab] of this.tabButtons) tab.setAttribute("aria-selected", String(id === view));
    for (const [id, panel] of this.panels) panel.hidden = id !== view;
    this.clock.setRunning(this.activeTab()?.usesClock === true);
    this.broadcast(["view"]);
    this.scheduleSave();
  }

  private lastHash = "";

  /** The opened file as a link or session file carries it (null for an example). */
  private openedFile(): UrlState["file"] {
    const c = this.loaded;
    if (!c || c.target.kind !== "file") return null;
    return toUrlFile(c.target.fileName, c.target.bytes, /\.onnx$/i.test(c.target.fileName));
  }

  /** The session's state; `whole` keeps an opened file of any size (for a session file). */
  private urlState(whole = false): UrlState {
    const c = this.loaded;
    const file = this.openedFile();
    const state: UrlState = {
      ...EMPTY_STATE,
      example: c?.example ?? null,
      file: file && (whole || file.text.length <= MAX_URL_FILE_CHARS) ? file : null,
      view: this.view,
      t: c ? Math.round(this.clock.time) : null,
      machine: this.header.machine === "spyre32" ? null : this.header.machine,
      ktir: c && this.edited && !this.failedKtir ? this.ktir : null,
      line: this.lines && this.lines.from === this.lines.to ? this.lines.from : null,
      core: this.core,
      embed: this.embed,
      compare: this.compareSpec,
      ...this.optionsPanel.settings,
    };
    for (const v of this.views) if (v.url) Object.assign(state, v.url.read());
    return state;
  }

  private scheduleSave(): void {
    if (!this.loaded) return;
    if (this.saveTimer !== null) clearTimeout(this.saveTimer);
    this.saveTimer = setTimeout(() => void this.save(), 250);
  }

  private async save(): Promise<string> {
    this.saveTimer = null;
    const hash = await formatUrlState(this.urlState());
    if (location.hash !== hash) {
      this.lastHash = hash;
      history.replaceState(null, "", hash);
    }
    document.body.dataset.saved = String(Number(document.body.dataset.saved ?? "0") + 1);
    return hash;
  }

  private async share(): Promise<void> {
    await this.save();
    const file = this.openedFile();
    if (file && file.text.length > MAX_URL_FILE_CHARS) {
      // Too large for a link: say so, and offer the session as a file instead.
      const kib = Math.ceil(file.text.length / 1024);
      notice.show(
        `${file.name} is too large for a link (${kib} KiB as link text; a link carries files up to ${MAX_URL_FILE_CHARS / 1024} KiB), so the link in the address bar does not hold it. Download a session file instead, and open or drop it on the page to reopen this session.`,
        { label: "Download session file", run: () => this.downloadSession() },
      );
      this.header.setStatus("file too large for a link: download a session file");
      return;
    }
    const url = location.href;
    try {
      await navigator.clipboard.writeText(url);
      this.header.setStatus("link copied");
    } catch {
      this.header.setStatus("link is in the address bar");
    }
  }

  /** Saves the whole session (the opened file included) as a session file. */
  private downloadSession(): void {
    const state = this.urlState(true);
    const blob = new Blob([formatSessionFile(state)], { type: "application/json" });
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = sessionFileName(state.file?.name ?? state.example ?? "session");
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
    this.header.setStatus(`session saved as ${a.download}`);
  }

  private async exportTrace(): Promise<void> {
    const c = this.loaded;
    if (!c) return;
    this.header.setStatus("writing the trace…");
    this.setRunning(+1);
    try {
      const { json } = await this.host.call("trace", {
        target: c.target,
        options: this.options(c.target, this.edited ? this.ktir : null),
      });
      const blob = new Blob([json], { type: "application/json" });
      const a = document.createElement("a");
      a.href = URL.createObjectURL(blob);
      a.download = `${c.res.result.graph.name || "spyre"}.trace.json`;
      a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
      this.header.setStatus("trace saved: open it in Perfetto or chrome://tracing");
    } catch (err) {
      if (err instanceof CancelledError) this.header.setStatus(stoppedText(err.reason));
      else banner.show("Trace export", errorMessage(err));
    } finally {
      this.setRunning(-1);
    }
  }

  // ---- keyboard ----

  private onKey(ev: KeyboardEvent): void {
    if (ev.key === "Escape") {
      if (this.help.open) return; // the dialog closes itself
      if (this.running > 0) {
        ev.preventDefault();
        this.cancel();
      }
      return;
    }
    if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
    if (isEditableTarget(ev.target)) return;
    const tab = this.tabs.find((t) => t.key === ev.key);
    if (tab) {
      this.setView(tab.id);
      ev.preventDefault();
      return;
    }
    if (this.keys.get(ev.key)?.run(ev)) ev.preventDefault();
  }
}

try {
  const app = new App();
  app.start().catch((err: unknown) => {
    banner.show("Could not start the playground", errorMessage(err));
    document.body.dataset.state = "error";
  });
} catch (err) {
  banner.show("Could not start the playground", errorMessage(err));
}
