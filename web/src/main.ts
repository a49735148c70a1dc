// Page entry: wires the views to the worker. The page never calls wasm itself.

import type { ExampleInfo } from "./api";
import { WorkerClient } from "./client";
import { errorMessage, type RunResult } from "./protocol";
import { formatUrlState, parseUrlState, type UrlState } from "./urlState";
import { ErrorBanner } from "./views/errorBanner";
import { Header } from "./views/header";
import { PassView } from "./views/passes";
import { ResultsView } from "./views/results";
import { RingView } from "./views/ring";

/** The pass shown when nothing else was asked for. */
const DEFAULT_PASS = "ktir";

const banner = new ErrorBanner();

window.addEventListener("error", (ev) => {
  banner.show("Unexpected error", ev.message || errorMessage(ev.error));
});
window.addEventListener("unhandledrejection", (ev) => {
  banner.show("Unexpected error", errorMessage(ev.reason));
});

class App {
  private readonly client: WorkerClient;
  private readonly header: Header;
  private readonly passes = new PassView();
  private readonly results = new ResultsView();
  private readonly ring = new RingView();
  private examples: ExampleInfo[] = [];
  /** What the page shows: an example, or a file (example null, label = file name). */
  private currentExample: string | null = null;
  private currentLabel = "";
  private runSeq = 0;

  constructor() {
    const worker = new Worker(new URL("./worker.ts", import.meta.url), {
      type: "module",
      name: "spyre-wasm",
    });
    this.client = new WorkerClient(worker);
    this.header = new Header({
      onExample: (name) => void this.runExample(name),
      onFile: (source, fileName) => void this.runSource(source, fileName),
      onFileError: (message) => banner.show("Could not open file", message),
    });
    this.header.onThemeChange(() => this.ring.refreshPalette());
    this.ring.refreshPalette(); // the header has applied the saved theme by now
    this.passes.onSelect(() => this.saveUrlState());
  }

  async start(): Promise<void> {
    const wanted = parseUrlState(location.hash);
    this.header.setStatus("loading the wasm module…");
    const info = await this.client.call("init", {});
    this.examples = info.examples;
    this.header.setStatus(`spyre ${info.version}`);
    const first = this.examples[0]?.name ?? null;
    const example =
      wanted.example && this.examples.some((e) => e.name === wanted.example)
        ? wanted.example
        : first;
    this.header.setExamples(this.examples, example);
    if (example === null) {
      banner.show("No examples", "the wasm module lists no examples; open a file instead");
      return;
    }
    await this.runExample(example, wanted.pass ?? DEFAULT_PASS);
  }

  private async runExample(name: string, pass?: string): Promise<void> {
    await this.run(() => this.client.call("runExample", { name }), name, pass);
  }

  private async runSource(source: string, fileName: string): Promise<void> {
    await this.run(() => this.client.call("runSource", { source, fileName }), null);
  }

  private async run(
    call: () => Promise<RunResult>,
    example: string | null,
    pass?: string,
  ): Promise<void> {
    const seq = ++this.runSeq;
    const started = performance.now();
    this.header.setStatus("running the pipeline…");
    let res: RunResult;
    try {
      res = await call();
    } catch (err) {
      if (seq !== this.runSeq) return;
      this.header.setStatus("failed");
      banner.show(example ? `Example ${example}` : "Could not load the file", errorMessage(err));
      // Keep the header showing what is actually displayed.
      this.header.setSource(this.currentLabel, this.currentExample);
      return;
    }
    if (seq !== this.runSeq) return; // a newer request superseded this one
    banner.clear();
    const keep = pass ?? this.passes.selectedName ?? DEFAULT_PASS;
    this.currentExample = example;
    this.currentLabel = example ? "" : res.fileName;
    this.header.setSource(this.currentLabel, example);
    this.passes.setPasses(res.result.passes, keep);
    this.results.show(res.result.run);
    this.ring.setRun(res.result.run);
    const ms = Math.round(performance.now() - started);
    this.header.setStatus(`${res.result.graph.name} · compiled and simulated in ${ms} ms`);
    this.saveUrlState();
  }

  private saveUrlState(): void {
    const state: UrlState = { example: this.currentExample, pass: this.passes.selectedName };
    const hash = formatUrlState(state);
    if (location.hash !== hash) history.replaceState(null, "", hash);
  }
}

try {
  const app = new App();
  app.start().catch((err: unknown) => {
    banner.show("Could not start the playground", errorMessage(err));
  });
} catch (err) {
  banner.show("Could not start the playground", errorMessage(err));
}
