// Page entry: wires the views to the worker. The page never calls wasm itself.

import type { Diagnostic, ExampleInfo, RunOptions, TraceEvent } from "./api";
import { CancelledError, WorkerHost } from "./client";
import { byId, isEditableTarget } from "./dom";
import { errorMessage, type RunResult, type SourceRef } from "./protocol";
import type { LineRange } from "./ring/draw";
import { functionAt, kernelOp, kernelSpans, ktirFunctions, type Span } from "./session";
import {
  EMPTY_STATE,
  formatUrlState,
  MAX_URL_FILE_CHARS,
  parseUrlState,
  VIEWS,
  type UrlState,
  type ViewName,
} from "./urlState";
import { CoresView } from "./views/cores";
import { CoreDetails } from "./views/coreDetails";
import { ErrorBanner } from "./views/errorBanner";
import { GraphView, opsOfNode } from "./views/graph";
import { Header } from "./views/header";
import { Help } from "./views/help";
import { IrView, type IrKind } from "./views/ir";
import { PassView } from "./views/passes";
import { ResultsView } from "./views/results";
import { RingView } from "./views/ring";
import { TimelineView } from "./views/timeline";

/** The pass shown when nothing else was asked for. */
const DEFAULT_PASS = "ktir";
const DEFAULT_VIEW: ViewName = "ring";
/** A run taking longer than this shows the Cancel button. */
const CANCEL_AFTER_MS = 300;

const banner = new ErrorBanner();

window.addEventListener("error", (ev) => {
  banner.show("Unexpected error", ev.message || errorMessage(ev.error));
});
window.addEventListener("unhandledrejection", (ev) => {
  banner.show("Unexpected error", errorMessage(ev.reason));
});

interface Current {
  target: SourceRef;
  /** Example name, or null for an opened file. */
  example: string | null;
  res: RunResult;
  /** The KTIR as compiled (or the .mlir file as opened). */
  originalKtir: string;
  spans: Span[];
}

class App {
  private readonly host = new WorkerHost(
    () =>
      new Worker(new URL("./worker.ts", import.meta.url), { type: "module", name: "spyre-wasm" }),
  );
  private readonly header: Header;
  private readonly passes = new PassView();
  private readonly results = new ResultsView();
  private readonly ring = new RingView();
  private readonly timeline: TimelineView;
  private readonly ir: IrView;
  private readonly graph: GraphView;
  private readonly cores: CoresView;
  private readonly coreDetails: CoreDetails;
  private readonly help = new Help();
  private readonly mainPane = document.querySelector<HTMLElement>(".main-pane")!;
  private readonly tabs = [
    ...document.querySelectorAll<HTMLButtonElement>("#view-tabs [data-view]"),
  ];
  private readonly viewMeta = byId<HTMLSpanElement>("view-meta");
  private readonly cancelButton = byId<HTMLButtonElement>("cancel-run");
  private examples: ExampleInfo[] = [];
  private current: Current | null = null;
  private view: ViewName = DEFAULT_VIEW;
  private lines: LineRange | null = null;
  private runSeq = 0;
  private running = 0;
  private embed = false;
  private saveTimer: ReturnType<typeof setTimeout> | null = null;
  private lastCoreUpdate = 0;

  constructor() {
    this.header = new Header({
      onExample: (name) => void this.load({ kind: "example", name }, name),
      onFile: (bytes, fileName) => void this.load({ kind: "file", bytes, fileName }, null),
      onFileError: (message) => banner.show("Could not open file", message),
      onMachine: () => void this.rerun(),
    });
    this.timeline = new TimelineView({
      time: (t) => {
        this.ring.setPlaying(false);
        this.ring.setTime(t);
      },
      event: (e) => this.selectEvent(e),
    });
    this.ir = new IrView({
      verify: (text) => this.verify(text),
      run: (text) => void this.runKtir(text),
      line: (kind, line) => this.onIrLine(kind, line),
      changed: () => this.scheduleSave(),
    });
    this.graph = new GraphView({
      select: (id) => this.onGraphSelect(id),
      ktir: (op) => this.showOpIn("ktir", op),
      sdsc: (op) => this.showOpIn("sdsc", op),
    });
    this.cores = new CoresView((core) => this.ring.selectCore(core));
    this.coreDetails = new CoreDetails((e) => this.selectEvent(e, true));
    this.header.onThemeChange(() => {
      this.ring.refreshPalette();
      this.timeline.refreshPalette();
    });
    this.ring.refreshPalette(); // the header has applied the saved theme by now
    this.timeline.refreshPalette();
    this.passes.onSelect(() => this.scheduleSave());
    this.ring.onTime((t) => {
      this.timeline.setTime(t);
      const now = performance.now();
      if (now - this.lastCoreUpdate > 120 || !this.ring.isPlaying) {
        this.lastCoreUpdate = now;
        this.coreDetails.update(t);
      }
    });
    this.ring.onPause(() => this.scheduleSave());
    this.ring.onCore((core) => {
      this.coreDetails.select(core, this.ring.time);
      this.cores.selectCore(core);
      this.scheduleSave();
    });
    this.coreDetails.select(null, 0);
    for (const tab of this.tabs) {
      tab.addEventListener("click", () => this.setView(tab.dataset.view as ViewName));
    }
    this.cancelButton.addEventListener("click", () => this.cancel());
    byId("share").addEventListener("click", () => void this.share());
    byId("export-trace").addEventListener("click", () => void this.exportTrace());
    document.addEventListener("keydown", (ev) => this.onKey(ev));
    window.addEventListener("hashchange", () => void this.onHashChange());
  }

  async start(): Promise<void> {
    const wanted = await parseUrlState(location.hash);
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
    this.header.setStatus(`spyre ${info.version}`);
    this.header.setMachines(
      info.machines,
      wanted.machine && info.machines.includes(wanted.machine) ? wanted.machine : "spyre32",
    );
    const first = this.examples[0]?.name ?? null;
    const example =
      wanted.example && this.examples.some((e) => e.name === wanted.example)
        ? wanted.example
        : first;
    this.header.setExamples(this.examples, wanted.file ? null : example);
    await this.restore(wanted, example);
  }

  private async restore(wanted: UrlState, example: string | null): Promise<void> {
    let target: SourceRef | null = null;
    if (wanted.file) {
      target = {
        kind: "file",
        bytes: new TextEncoder().encode(wanted.file.text),
        fileName: wanted.file.name,
      };
    } else if (example !== null) {
      target = { kind: "example", name: example };
    }
    if (!target) {
      banner.show("No examples", "the wasm module lists no examples; open a file instead");
      document.body.dataset.state = "ready";
      return;
    }
    const ok = await this.load(target, wanted.file ? null : example, {
      pass: wanted.pass ?? DEFAULT_PASS,
      ktir: wanted.ktir,
      t: wanted.t,
    });
    if (!ok && wanted.ktir !== null) {
      // The edited KTIR does not run: load the source as compiled and show the edit.
      const base = await this.load(target, wanted.file ? null : example, {
        pass: wanted.pass ?? DEFAULT_PASS,
        ktir: null,
        t: wanted.t,
      });
      if (base) this.ir.setKtir(wanted.ktir, this.current?.originalKtir ?? "");
    }
    if (wanted.core !== null) this.ring.selectCore(wanted.core);
    if (wanted.line !== null) this.onIrLine("ktir", wanted.line);
    if (wanted.t !== null) {
      this.ring.setPlaying(false);
      this.ring.setTime(wanted.t);
    }
    this.setView(wanted.view ?? this.view);
  }

  private async onHashChange(): Promise<void> {
    // Hand-edited or pasted links: restore when the hash is not the one we wrote.
    if (location.hash === this.lastHash) return;
    const wanted = await parseUrlState(location.hash);
    if (wanted.machine) this.header.setMachine(wanted.machine);
    const example =
      wanted.example && this.examples.some((e) => e.name === wanted.example)
        ? wanted.example
        : null;
    await this.restore(wanted, example ?? this.examples[0]?.name ?? null);
  }

  private options(target: SourceRef, ktir: string | null): RunOptions {
    const o: RunOptions = { machine: this.header.machine };
    if (ktir !== null) o.ktir = ktir;
    // Gallery models too large to run with numbers run timing-only.
    if (target.kind === "example" && this.examples.find((e) => e.name === target.name)?.timingOnly)
      o.timingOnly = true;
    return o;
  }

  /** Runs a source; true on success. A failure leaves the previous run on screen. */
  private async load(
    target: SourceRef,
    example: string | null,
    keep: { pass?: string; ktir?: string | null; t?: number | null } = {},
  ): Promise<boolean> {
    const seq = ++this.runSeq;
    const started = performance.now();
    const ktir = keep.ktir ?? null;
    this.header.setStatus("running the pipeline…");
    this.setRunning(+1);
    let res: RunResult;
    try {
      res = await this.host.call("run", { target, options: this.options(target, ktir) });
    } catch (err) {
      this.setRunning(-1);
      if (seq !== this.runSeq) return false;
      if (err instanceof CancelledError) {
        this.header.setStatus("run cancelled; the worker was restarted");
        this.restoreHeader();
        return false;
      }
      this.header.setStatus("failed");
      const what =
        target.kind === "example" ? `Example ${target.name}` : `Could not load ${target.fileName}`;
      banner.show(what, errorMessage(err));
      this.restoreHeader();
      document.body.dataset.state = "error";
      return false;
    }
    this.setRunning(-1);
    if (seq !== this.runSeq) return false; // a newer request superseded this one
    banner.clear();
    const r = res.result;
    const originalKtir =
      res.kind === "ktir" ? res.source : (r.passes.find((p) => p.name === "ktir")?.text ?? r.ktir);
    const funcs = ktirFunctions(r.ktir);
    const spans = kernelSpans(r.run.events, funcs);
    this.current = { target, example, res, originalKtir, spans };
    this.header.setSource(example ? "" : res.fileName, example);
    const pass = keep.pass ?? this.passes.selectedName ?? DEFAULT_PASS;
    this.passes.setPasses(r.passes, pass);
    this.ir.setKtir(ktir ?? r.ktir, originalKtir);
    this.ir.setSdsc(this.sdscText(res));
    this.graph.set(r, res.layout);
    this.ring.setRun(r.run, keep.t ?? 0);
    this.timeline.setRun(r.run);
    this.timeline.setTime(this.ring.time);
    this.cores.set(r.passes, r.run.machine.cores, spans);
    this.coreDetails.set(r.run, r.passes, spans);
    this.coreDetails.select(this.ring.selectedCore, this.ring.time);
    this.setLines(null);
    const ms = Math.round(performance.now() - started);
    const note = ktir !== null && ktir !== originalKtir ? "edited KTIR" : "";
    this.results.show(r.run, note);
    this.header.setStatus(
      `${r.graph.name} · ${res.kind === "ktir" ? "verified and simulated" : "compiled and simulated"} in ${ms} ms`,
    );
    document.body.dataset.state = "ready";
    document.body.dataset.runs = String(Number(document.body.dataset.runs ?? "0") + 1);
    this.scheduleSave();
    return true;
  }

  private sdscText(res: RunResult): string {
    const text = res.result.passes.find((p) => p.name === "sdsc")?.text ?? "";
    const trimmed = text.trim();
    if (trimmed.startsWith("{") && !trimmed.includes("\n")) {
      try {
        return JSON.stringify(JSON.parse(trimmed), null, 2);
      } catch {
        return text;
      }
    }
    return text;
  }

  /** Keeps the header showing what is actually displayed. */
  private restoreHeader(): void {
    const c = this.current;
    this.header.setSource(c && !c.example ? c.res.fileName : "", c?.example ?? null);
  }

  private setRunning(delta: number): void {
    this.running = Math.max(0, this.running + delta);
    this.ir.setBusy(this.running > 0);
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
    this.host.restart("cancelled");
  }

  private async rerun(): Promise<void> {
    const c = this.current;
    if (!c) return;
    const text = this.ir.text;
    await this.load(c.target, c.example, {
      ktir: this.ir.edited ? text : null,
      t: null,
    });
  }

  private async runKtir(text: string): Promise<void> {
    const c = this.current;
    if (!c) return;
    const edited = text !== c.originalKtir;
    const ok = await this.load(c.target, c.example, {
      ktir: edited ? text : null,
      t: this.ring.time,
    });
    if (!ok && edited) this.ir.setKtir(text, c.originalKtir);
  }

  private async verify(text: string): Promise<Diagnostic[]> {
    return this.host.call("verifyKtir", { text });
  }

  // ---- links between IR lines, graph nodes, tiles and events ----

  private setLines(lines: LineRange | null): void {
    this.lines = lines;
    this.ring.setLines(lines);
    this.timeline.setLines(lines);
    const c = this.current;
    if (!lines || !c) {
      this.viewMeta.textContent = "";
      return;
    }
    const n = c.res.result.run.events.filter(
      (e) => e.line >= lines.from && e.line <= lines.to,
    ).length;
    const what = lines.from === lines.to ? `line ${lines.from}` : `lines ${lines.from}–${lines.to}`;
    const text = this.ir.lineText("ktir", lines.from).trim();
    this.viewMeta.textContent = `KTIR ${what}: ${n} event${n === 1 ? "" : "s"} · ${text.slice(0, 60)}`;
    this.viewMeta.title = text;
  }

  private onIrLine(kind: IrKind, line: number): void {
    const c = this.current;
    if (!c) return;
    if (kind === "ktir") {
      const funcs = ktirFunctions(this.ir.text);
      const f = functionAt(funcs, line);
      const isHeader = f !== null && f.line === line;
      this.setLines(isHeader && f ? { from: f.line, to: f.endLine } : { from: line, to: line });
      this.ir.reveal("ktir", line, false);
      if (f) this.graph.selectOp(kernelOp(f.name));
    } else {
      const ops = this.sdscOps();
      const lines = this.ir.lines("sdsc");
      for (let i = Math.min(line, lines.length) - 1; i >= 0; i--) {
        const m = /^\s*"([^"]+)": \{/.exec(lines[i] ?? "");
        if (m?.[1] && ops.includes(m[1])) {
          this.graph.selectOp(m[1]);
          const kl = this.kernelLines(m[1]);
          if (kl) this.setLines(kl);
          break;
        }
      }
      this.ir.reveal("sdsc", line, false);
    }
    this.scheduleSave();
  }

  private sdscOps(): string[] {
    const data = this.current?.res.result.passes.find((p) => p.name === "sdsc")?.data as
      { ops?: unknown } | null | undefined;
    return Array.isArray(data?.ops) ? data.ops.map(String) : [];
  }

  private kernelLines(op: string): LineRange | null {
    const f = ktirFunctions(this.ir.text).find((x) => kernelOp(x.name) === op);
    return f ? { from: f.line, to: f.endLine } : null;
  }

  private onGraphSelect(id: string | null): void {
    if (!id?.startsWith("op:")) {
      this.setLines(null);
      return;
    }
    const name = id.slice(3);
    const funcs = ktirFunctions(this.ir.text);
    const ops = opsOfNode(
      name,
      funcs.map((f) => kernelOp(f.name)),
    );
    const f = funcs.find((x) => ops.includes(kernelOp(x.name)));
    if (f) {
      this.setLines({ from: f.line, to: f.endLine });
      this.ir.reveal("ktir", f.line, true);
    }
  }

  private showOpIn(kind: IrKind, op: string): void {
    this.setView("ir");
    this.ir.show(kind);
    if (kind === "ktir") {
      const r = this.kernelLines(op);
      if (r) {
        this.setLines(r);
        this.ir.reveal("ktir", r.from);
      }
    } else {
      const esc = op.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      const line = this.ir.findLine("sdsc", new RegExp(`^\\s*"${esc}": \\{`));
      if (line !== null) this.ir.reveal("sdsc", line);
    }
  }

  private selectEvent(e: TraceEvent, showIr = false): void {
    this.setLines({ from: e.line, to: e.line });
    this.ir.reveal("ktir", e.line, true);
    this.ring.selectCore(e.core);
    this.ring.setPlaying(false);
    this.ring.setTime(e.start + (e.end - e.start) / 2);
    const f = functionAt(ktirFunctions(this.ir.text), e.line);
    if (f) this.graph.selectOp(kernelOp(f.name));
    if (showIr) {
      this.setView("ir");
      this.ir.show("ktir");
    }
  }

  // ---- views, URL state, share, export ----

  setView(view: ViewName): void {
    this.view = view;
    this.mainPane.dataset.view = view;
    for (const tab of this.tabs)
      tab.setAttribute("aria-selected", String(tab.dataset.view === view));
    for (const v of VIEWS) byId(`view-${v}`).hidden = v !== view;
    this.ring.setActive(view === "ring", view === "ring" || view === "timeline");
    this.timeline.setVisible(view === "timeline");
    if (view === "timeline") this.timeline.setTime(this.ring.time);
    if (view === "ir") {
      this.ir.show(this.ir.view);
      if (this.lines) this.ir.reveal("ktir", this.lines.from, true);
    }
    this.scheduleSave();
  }

  private lastHash = "";

  private state(): UrlState {
    const c = this.current;
    const fileText = c && c.target.kind === "file" && c.res.kind !== undefined ? c.res.source : "";
    return {
      ...EMPTY_STATE,
      example: c?.example ?? null,
      file:
        c && c.target.kind === "file" && fileText.length <= MAX_URL_FILE_CHARS && fileText !== ""
          ? { name: c.target.fileName, text: fileText }
          : null,
      pass: this.passes.selectedName,
      view: this.view,
      t: c ? Math.round(this.ring.time) : null,
      machine: this.header.machine === "spyre32" ? null : this.header.machine,
      ktir: c && this.ir.edited ? this.ir.text : null,
      line: this.lines && this.lines.from === this.lines.to ? this.lines.from : null,
      core: this.ring.selectedCore,
      embed: this.embed,
    };
  }

  private scheduleSave(): void {
    if (!this.current) return;
    if (this.saveTimer !== null) clearTimeout(this.saveTimer);
    this.saveTimer = setTimeout(() => void this.save(), 250);
  }

  private async save(): Promise<string> {
    this.saveTimer = null;
    const hash = await formatUrlState(this.state());
    if (location.hash !== hash) {
      this.lastHash = hash;
      history.replaceState(null, "", hash);
    }
    document.body.dataset.saved = String(Number(document.body.dataset.saved ?? "0") + 1);
    return hash;
  }

  private async share(): Promise<void> {
    await this.save();
    const url = location.href;
    try {
      await navigator.clipboard.writeText(url);
      this.header.setStatus("link copied");
    } catch {
      this.header.setStatus("link is in the address bar");
    }
  }

  private async exportTrace(): Promise<void> {
    const c = this.current;
    if (!c) return;
    this.header.setStatus("writing the trace…");
    this.setRunning(+1);
    try {
      const { json } = await this.host.call("trace", {
        target: c.target,
        options: this.options(c.target, this.ir.edited ? this.ir.text : null),
      });
      const blob = new Blob([json], { type: "application/json" });
      const a = document.createElement("a");
      a.href = URL.createObjectURL(blob);
      a.download = `${c.res.result.graph.name || "spyre"}.trace.json`;
      a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
      this.header.setStatus("trace saved: open it in Perfetto or chrome://tracing");
    } catch (err) {
      if (!(err instanceof CancelledError)) banner.show("Trace export", errorMessage(err));
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
    const k = ev.key;
    const total = this.ring.totalCycles;
    const handled = ((): boolean => {
      if (k >= "1" && k <= "6") {
        this.setView(VIEWS[Number(k) - 1] ?? DEFAULT_VIEW);
        return true;
      }
      switch (k) {
        case "?":
          this.help.toggle();
          return true;
        case " ":
          if (this.view !== "ring" && this.view !== "timeline") return false;
          this.ring.setPlaying(!this.ring.isPlaying);
          return true;
        case ",":
        case ".":
          this.ring.setPlaying(false);
          this.ring.setTime(this.ring.time + (k === "." ? 1 : -1) * Math.max(1, total / 100));
          return true;
        case "[":
          this.ring.stepSpeed(-1);
          return true;
        case "]":
          this.ring.stepSpeed(1);
          return true;
        case "+":
        case "=":
          this.timeline.zoom(0.5);
          return true;
        case "-":
          this.timeline.zoom(2);
          return true;
        case "0":
          this.timeline.fit();
          return true;
        case "ArrowLeft":
        case "ArrowRight":
          if (this.view !== "timeline") return false;
          this.timeline.pan(k === "ArrowLeft" ? -0.2 : 0.2);
          return true;
        case "e":
          this.setView("ir");
          this.ir.show("ktir");
          this.ir.focus();
          return true;
        case "/":
          this.setView("graph");
          this.graph.focusFilter();
          return true;
        case "s":
          void this.share();
          return true;
        case "t":
          this.header.setTheme(this.header.theme === "dark" ? "light" : "dark");
          return true;
      }
      return false;
    })();
    if (handled) ev.preventDefault();
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
