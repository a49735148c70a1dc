// Page entry: owns the page state and the worker, and drives the views listed in
// views/registry.ts. The page never calls wasm itself, and never calls a view directly:
// views render the state in `update` and report clicks through their context.

import type { Diagnostic, ExampleInfo, RunOptions, SourceMap, TraceEvent } from "./api";
import { CancelledError, WorkerHost } from "./client";
import { byId, el, isEditableTarget } from "./dom";
import { describeLocation, errorMessage, type RunResult, type SourceRef } from "./protocol";
import type { LineRange } from "./ring/draw";
import { sceneCores, sceneCycles } from "./ring/model";
import {
  kernelAt,
  kernelOfOp,
  kernelSpans,
  opNamed,
  opOfKernel,
  opsOfNode,
  sdscOpAt,
} from "./session";
import { clockShortcuts, Transport } from "./transport";
import {
  EMPTY_STATE,
  formatUrlState,
  MAX_URL_FILE_CHARS,
  parseUrlState,
  type UrlState,
} from "./urlState";
import { ErrorBanner } from "./views/errorBanner";
import { Header } from "./views/header";
import { Help, helpRows, pageShortcuts } from "./views/help";
import { createViews } from "./views/registry";
import type {
  Change,
  IrKind,
  Loaded,
  PageState,
  Reveal,
  Shortcut,
  View,
  ViewContext,
} from "./views/view";

const DEFAULT_VIEW = "ring";
/** A run taking longer than this shows the Cancel button. */
const CANCEL_AFTER_MS = 300;

const banner = new ErrorBanner();

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
  private readonly keys = new Map<string, Shortcut>();
  private readonly help: Help;
  private readonly mainPane = document.querySelector<HTMLElement>(".main-pane")!;
  private readonly viewMeta = byId<HTMLSpanElement>("view-meta");
  private readonly cancelButton = byId<HTMLButtonElement>("cancel-run");
  private examples: ExampleInfo[] = [];
  private loaded: Loaded | null = null;
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

  constructor() {
    this.header = new Header({
      onExample: (name) => void this.load({ kind: "example", name }, name),
      onFile: (bytes, fileName) => void this.load({ kind: "file", bytes, fileName }, null),
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
          { className: "tab", role: "tab", "data-view": v.id, type: "button" },
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
      ktirChanged: (text) => {
        this.ktir = text;
        this.scheduleSave();
      },
      runKtir: (text) => void this.runKtir(text),
      verify: (text) => this.verify(text),
      save: () => this.scheduleSave(),
    };
  }

  private state(): PageState {
    return {
      loaded: this.loaded,
      view: this.view,
      lines: this.lines,
      reveal: this.reveal,
      op: this.op,
      core: this.core,
      time: this.clock.time,
      playing: this.clock.isPlaying,
      ktir: this.ktir,
      busy: this.running > 0,
    };
  }

  private broadcast(changes: Change[]): void {
    const s = this.state();
    const changed = new Set(changes);
    for (const v of this.views) v.update(s, changed);
  }

  private activeTab(): View | undefined {
    return this.tabs.find((t) => t.id === this.view);
  }

  /** Whether the editor's KTIR differs from the run's source. */
  private get edited(): boolean {
    return this.loaded !== null && this.ktir !== this.loaded.originalKtir;
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
    for (const v of this.views) v.url?.apply(v.url.decode(wanted));
    const ok = await this.load(target, wanted.file ? null : example, {
      ktir: wanted.ktir,
      t: wanted.t,
    });
    if (!ok && wanted.ktir !== null) {
      // The edited KTIR does not run: load the source as compiled and show the edit.
      const base = await this.load(target, wanted.file ? null : example, {
        ktir: null,
        t: wanted.t,
      });
      if (base) {
        this.ktir = wanted.ktir;
        this.broadcast(["ktir"]);
      }
    }
    if (wanted.core !== null) this.selectCore(wanted.core);
    if (wanted.line !== null) this.onIrLine("ktir", wanted.line);
    if (wanted.t !== null) {
      this.clock.setPlaying(false);
      this.clock.setTime(wanted.t);
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
    keep: { ktir?: string | null; t?: number | null } = {},
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
      banner.show(what, errorMessage(err), describeLocation(err));
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
    const spans = kernelSpans(r.run.events, r.sourceMap);
    this.loaded = {
      target,
      example,
      res,
      originalKtir,
      spans,
      sdsc: res.result.passes.find((p) => p.name === "sdsc")?.text ?? "",
      note: ktir !== null && ktir !== originalKtir ? "edited KTIR" : "",
    };
    this.header.setSource(example ? "" : res.fileName, example);
    this.ktir = ktir ?? r.ktir;
    this.lines = null;
    this.reveal = null;
    if (this.core !== null && this.core >= sceneCores(r.run)) this.core = null;
    this.clock.setRun(sceneCycles(r.run), keep.t ?? 0);
    this.broadcast(["run", "ktir", "lines", "core"]);
    this.showLinesMeta();
    const ms = Math.round(performance.now() - started);
    this.header.setStatus(
      `${r.graph.name} · ${res.kind === "ktir" ? "verified and simulated" : "compiled and simulated"} in ${ms} ms`,
    );
    document.body.dataset.state = "ready";
    document.body.dataset.runs = String(Number(document.body.dataset.runs ?? "0") + 1);
    this.scheduleSave();
    return true;
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
    this.host.restart("cancelled");
  }

  private async rerun(): Promise<void> {
    const c = this.loaded;
    if (!c) return;
    await this.load(c.target, c.example, {
      ktir: this.edited ? this.ktir : null,
      t: null,
    });
  }

  private async runKtir(text: string): Promise<void> {
    const c = this.loaded;
    if (!c) return;
    const edited = text !== c.originalKtir;
    const ok = await this.load(c.target, c.example, {
      ktir: edited ? text : null,
      t: this.clock.time,
    });
    if (!ok && edited) {
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
    const n = c.res.result.run.events.filter(
      (e) => e.line >= lines.from && e.line <= lines.to,
    ).length;
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

  private showOpIn(kind: IrKind, op: string): void {
    this.setView("ir");
    if (kind === "ktir") {
      const r = this.kernelLines(op);
      if (r) this.link({ lines: r, reveal: { kind, line: r.from, scroll: true, show: true } });
      else this.link({ reveal: { kind, scroll: true, show: true } });
    } else {
      const at = opNamed(this.map, op)?.sdscLines;
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
    this.view = view;
    this.mainPane.dataset.view = view;
    for (const [id, tab] of this.tabButtons) tab.setAttribute("aria-selected", String(id === view));
    for (const [id, panel] of this.panels) panel.hidden = id !== view;
    this.clock.setRunning(this.activeTab()?.usesClock === true);
    this.broadcast(["view"]);
    this.scheduleSave();
  }

  private lastHash = "";

  private urlState(): UrlState {
    const c = this.loaded;
    const fileText = c && c.target.kind === "file" && c.res.kind !== undefined ? c.res.source : "";
    const state: UrlState = {
      ...EMPTY_STATE,
      example: c?.example ?? null,
      file:
        c && c.target.kind === "file" && fileText.length <= MAX_URL_FILE_CHARS && fileText !== ""
          ? { name: c.target.fileName, text: fileText }
          : null,
      view: this.view,
      t: c ? Math.round(this.clock.time) : null,
      machine: this.header.machine === "spyre32" ? null : this.header.machine,
      ktir: c && this.edited ? this.ktir : null,
      line: this.lines && this.lines.from === this.lines.to ? this.lines.from : null,
      core: this.core,
      embed: this.embed,
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
    const url = location.href;
    try {
      await navigator.clipboard.writeText(url);
      this.header.setStatus("link copied");
    } catch {
      this.header.setStatus("link is in the address bar");
    }
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
