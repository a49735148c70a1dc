// The Run inputs tab: what a run of the open program takes (a KTIR module's buffers,
// scratchpad views, tensor arguments and scalars; a model graph's inputs), a .npy for each
// (picked or dropped on its row), scalar values, and a run with them. After the run, each
// output is offered as .npy, and for model graphs an expected .npy per output is compared
// with the simulated one as `spyre run --expected` does. A source that did not run because
// it lacks values (a KTIR module's scalar arguments) is listed too, the missing ones marked,
// so they can be given here.

import type { NamedBytes, OutputCheck } from "../api";
import { el } from "../dom";
import type { ErrorInfo, RunIo } from "../protocol";
import { toleranceText } from "./results";
import type { Change, Loaded, PageState, Unrun, View, ViewContext } from "./view";

/** One thing a run takes, as a row of the table. */
export interface InputRow {
  name: string;
  dtype: string;
  shape: readonly number[];
  /** DRAM (or scratchpad) address in elements, when fixed; "" otherwise. */
  address: string;
  /** "in", "out", "inout", "scalar", "tensor", "input" (graphs). */
  role: string;
  /** What kind of thing it is: "buffer", "scratchpad", "tensor", "scalar", "input". */
  kind: string;
  /** The value a scalar gets now, when given. */
  value: string | null;
  /** A run cannot start without it (a scalar with no value). */
  missing: boolean;
}

/** An output a run gives, downloadable as .npy. */
export interface OutputRow {
  name: string;
  dtype: string;
  shape: readonly number[];
}

/** The rows of the inputs table. */
export function inputRows(io: RunIo): InputRow[] {
  if (io.kind === "graph") {
    return io.inputs.map((t) => ({
      name: t.name,
      dtype: t.dtype,
      shape: t.shape,
      address: "",
      role: "input",
      kind: "input",
      value: null,
      missing: false,
    }));
  }
  const k = io.inputs;
  const named = (name: string): boolean => k.missing.some((m) => missingName(m) === name);
  return [
    ...k.buffers.map((b) => ({
      name: b.name,
      dtype: b.elem,
      shape: b.shape,
      address: b.address === null ? "" : `DRAM ${b.address}`,
      role: b.role,
      kind: "buffer",
      value: null,
      missing: false,
    })),
    ...k.scratchpads.map((s) => ({
      name: s.name,
      dtype: s.elem,
      shape: s.shape,
      address: `scratchpad ${s.address}`,
      role: s.role,
      kind: "scratchpad",
      value: null,
      missing: false,
    })),
    ...k.tensors.map((t) => ({
      name: t.name,
      dtype: t.elem,
      shape: t.shape,
      address: "",
      role: "tensor",
      kind: "tensor",
      value: null,
      missing: false,
    })),
    ...k.scalars.map((s) => ({
      name: s.name,
      dtype: s.dtype,
      shape: [],
      address: "",
      role: "scalar",
      kind: "scalar",
      value: s.value,
      missing: s.value === null || named(s.name),
    })),
  ];
}

/** The scalar a line of `KtirInputs.missing` asks for ("--arg n=VALUE (...)"), if any. */
export function missingName(line: string): string | null {
  return /^--arg ([^=\s]+)=/.exec(line)?.[1] ?? null;
}

/** A line of `KtirInputs.missing` in the page's words (the driver's are the CLI's flags). */
export function missingText(line: string): string {
  const name = missingName(line);
  return name === null ? line : line.replace(/^--arg [^=\s]+=VALUE/, `a value for ${name}`);
}

/** The outputs offered for download: graph outputs, or buffers the module stores to. */
export function outputRows(io: RunIo): OutputRow[] {
  if (io.kind === "graph") return io.outputs;
  return io.inputs.buffers
    .filter((b) => b.role === "out" || b.role === "inOut")
    .map((b) => ({ name: b.name, dtype: b.elem, shape: b.shape }));
}

function shapeText(shape: readonly number[]): string {
  return shape.length === 0 ? "scalar" : shape.join("×");
}

/** Wires a row as a drop target for one file; the page's own drop (open a file) is kept off. */
function dropTarget(row: HTMLElement, take: (file: File) => void): void {
  row.addEventListener("dragover", (ev) => {
    if (!ev.dataTransfer?.types.includes("Files")) return;
    ev.preventDefault();
    ev.stopPropagation();
    row.classList.add("drop-over");
  });
  row.addEventListener("dragleave", () => row.classList.remove("drop-over"));
  row.addEventListener("drop", (ev) => {
    const file = ev.dataTransfer?.files[0];
    row.classList.remove("drop-over");
    if (!file) return;
    ev.preventDefault();
    ev.stopPropagation();
    take(file);
  });
}

export class RunInputsTab implements View {
  readonly id = "inputs";
  readonly title = "Run inputs";
  readonly key = "8";
  private root: HTMLElement | null = null;
  private ctx: ViewContext | null = null;
  /** The source the choices below belong to: another source starts afresh. */
  private target: Loaded["target"] | null = null;
  private loaded: Loaded | null = null;
  private unrun: Unrun | null = null;
  private readonly inputs = new Map<string, { fileName: string; bytes: Uint8Array }>();
  private readonly expected = new Map<string, { fileName: string; bytes: Uint8Array }>();
  private readonly scalars = new Map<string, string>();
  /** The failure of the last run with inputs, shown on its row (or above the table). */
  private failure: ErrorInfo | null = null;
  private busy = false;

  mount(container: HTMLElement, ctx: ViewContext): void {
    this.root = container;
    this.ctx = ctx;
    container.classList.add("run-inputs");
    this.render();
  }

  update(state: PageState, changed: ReadonlySet<Change>): void {
    if (!changed.has("run") && !changed.has("unrun") && !changed.has("busy")) return;
    this.busy = state.busy;
    if (changed.has("run") || changed.has("unrun")) {
      this.loaded = state.loaded;
      this.unrun = state.unrun;
      // A source that failed to run is the one listed; the run on screen otherwise.
      const target = state.unrun?.target ?? state.loaded?.target ?? null;
      if (target !== this.target) {
        this.target = target;
        this.inputs.clear();
        this.expected.clear();
        this.scalars.clear();
        this.failure = null;
      }
    }
    this.render();
  }

  private async read(
    file: File,
    into: Map<string, { fileName: string; bytes: Uint8Array }>,
    name: string,
  ): Promise<void> {
    const bytes = new Uint8Array(await file.arrayBuffer());
    into.set(name, { fileName: file.name, bytes });
    if (this.failure?.input === name) this.failure = null;
    this.render();
  }

  private async run(): Promise<void> {
    if (!this.ctx) return;
    const named = (m: Map<string, { bytes: Uint8Array }>): NamedBytes[] =>
      [...m].map(([name, f]) => ({ name, bytes: f.bytes }));
    const args: Record<string, string> = {};
    for (const [k, v] of this.scalars) if (v.trim() !== "") args[k] = v.trim();
    this.failure = null;
    this.render();
    this.failure = await this.ctx.runWithInputs(
      { inputs: named(this.inputs), expected: named(this.expected) },
      args,
    );
    this.render();
  }

  private async download(name: string, status: HTMLElement): Promise<void> {
    if (!this.ctx) return;
    try {
      const bytes = await this.ctx.outputNpy(name);
      const url = URL.createObjectURL(
        new Blob([bytes.slice()], { type: "application/octet-stream" }),
      );
      const a = el("a", { href: url, download: `${name.replace(/[/\\]/g, "_")}.npy` });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      status.textContent = "";
    } catch (err) {
      status.textContent = err instanceof Error ? err.message : String(err);
    }
  }

  /** A file picker (and the row as a drop target) filling `into[name]`. */
  private fileCell(
    row: HTMLElement,
    name: string,
    into: Map<string, { fileName: string; bytes: Uint8Array }>,
    testid: string,
  ): HTMLElement {
    const input = el("input", {
      type: "file",
      accept: ".npy,.pb",
      "data-testid": testid,
      "aria-label": `.npy for ${name}`,
    });
    input.addEventListener("change", () => {
      const file = input.files?.[0];
      if (file) void this.read(file, into, name);
    });
    dropTarget(row, (file) => void this.read(file, into, name));
    const chosen = into.get(name);
    const cell = el("td", { className: "file-cell" }, input);
    if (chosen) {
      const clear = el("button", { type: "button", className: "link", text: "clear" });
      clear.addEventListener("click", () => {
        into.delete(name);
        this.render();
      });
      cell.append(el("span", { className: "chosen", text: chosen.fileName }), " ", clear);
    } else {
      cell.append(el("span", { className: "muted", text: "seeded random" }));
    }
    return cell;
  }

  private errorCell(name: string, role: string): HTMLElement {
    const f = this.failure ?? this.unrun?.failure ?? null;
    const mine = f?.input === name && (f.role ?? "input") === role;
    return el("td", {
      className: mine ? "row-error" : "",
      "data-testid": mine ? "row-error" : undefined,
      text: mine ? f.message : "",
    });
  }

  private render(): void {
    const root = this.root;
    if (!root) return;
    const u = this.unrun;
    const c = this.loaded;
    const io = u ? u.io : (c?.res.io ?? null);
    if (!io) {
      root.replaceChildren(
        el("p", {
          className: "muted",
          text: c ? "What a run of this source takes could not be listed." : "No run yet.",
        }),
      );
      return;
    }
    const graph = io.kind === "graph";
    const rows = inputRows(io);
    const table = el(
      "table",
      { className: "inputs-table", "data-testid": "inputs-table" },
      el(
        "thead",
        {},
        el(
          "tr",
          {},
          ...["name", "dtype", "shape", "address", "role", "value", ""].map((h) =>
            el("th", { text: h }),
          ),
        ),
      ),
    );
    const body = el("tbody");
    for (const r of rows) {
      const tr = el("tr", {
        "data-testid": `input-row-${r.name}`,
        "data-kind": r.kind,
        "data-missing": r.missing ? "true" : undefined,
        className: r.missing ? "missing" : "",
      });
      tr.append(
        el("td", { className: "name", text: r.name }),
        el("td", { text: r.dtype }),
        el("td", { text: shapeText(r.shape) }),
        el("td", { text: r.address }),
        el(
          "td",
          {},
          r.role,
          ...(r.missing
            ? [" ", el("span", { className: "badge-missing", text: "missing: required" })]
            : []),
        ),
      );
      if (r.kind === "scalar") {
        const input = el("input", {
          type: "text",
          "data-testid": `scalar-${r.name}`,
          "aria-label": `value of ${r.name}`,
          "aria-required": r.missing ? "true" : undefined,
          placeholder: r.missing ? `${r.dtype} (required)` : r.dtype,
          value: this.scalars.get(r.name) ?? r.value ?? "",
        });
        input.addEventListener("input", () => this.scalars.set(r.name, input.value));
        tr.append(el("td", {}, input));
      } else {
        tr.append(this.fileCell(tr, r.name, this.inputs, `npy-${r.name}`));
      }
      tr.append(this.errorCell(r.name, "input"));
      body.append(tr);
    }
    table.append(body);

    const runButton = el("button", {
      type: "button",
      className: "button",
      "data-testid": "run-with-inputs",
      text: "Run with these inputs",
      disabled: this.busy,
    });
    runButton.addEventListener("click", () => void this.run());
    const given = this.inputs.size;
    const left = rows.filter((r) => r.kind !== "scalar" && !this.inputs.has(r.name)).length;
    const summary =
      left === 0
        ? `every ${graph ? "input" : "buffer"} is given.`
        : `${given} given; the ${left} left empty keep the seeded random values (seed 0).`;
    const name = u ? u.name : (c?.res.result.graph.name ?? "");
    const parts: HTMLElement[] = [
      el("h3", { text: `What a run of ${name} takes` }),
      el("p", {
        className: "muted",
        text: `One .npy per ${graph ? "input (or an ONNX .pb)" : "buffer or view"}: pick it or drop it on its row. Rows left empty keep the seeded random values.`,
      }),
      table,
      el("p", {}, runButton, " ", el("span", { className: "muted", text: summary })),
    ];
    if (u)
      parts.push(
        el("p", {
          className: "row-error",
          "data-testid": "inputs-unrun",
          text:
            io.kind === "ktir" && io.inputs.missing.length > 0
              ? `${name} did not run: give the values marked missing, then run with them.`
              : `${name} did not run; what a run of it takes is listed below.`,
        }),
      );
    const f = this.failure ?? u?.failure ?? null;
    const onRow =
      f?.role === "expected"
        ? outputRows(io).some((o) => o.name === f.input)
        : rows.some((r) => r.name === f?.input);
    // A failure that names no row (a run that failed for another reason) shows above.
    if (f && !onRow)
      parts.push(
        el("p", { className: "row-error", "data-testid": "inputs-error", text: f.message }),
      );
    if (io.kind === "ktir" && io.inputs.missing.length > 0)
      parts.push(
        el("p", {
          className: "row-error",
          "data-testid": "inputs-missing",
          text: `Missing: ${io.inputs.missing.map(missingText).join("; ")}`,
        }),
      );
    // Outputs come from a run: a source that did not run has none yet.
    if (!u && c) parts.push(this.outputs(c, io));
    root.replaceChildren(...parts);
  }

  private outputs(c: Loaded, io: RunIo): HTMLElement {
    const graph = io.kind === "graph";
    const run = c.res.result.run;
    const checks = new Map<string, OutputCheck>(run.expected.map((o) => [o.name, o]));
    const head = ["name", "dtype", "shape", ""];
    if (graph) head.push("expected .npy", "against expected");
    const table = el(
      "table",
      { className: "inputs-table", "data-testid": "outputs-table" },
      el("thead", {}, el("tr", {}, ...head.map((h) => el("th", { text: h })))),
    );
    const body = el("tbody");
    for (const o of outputRows(io)) {
      const tr = el("tr", { "data-testid": `output-row-${o.name}` });
      const status = el("span", { className: "muted" });
      const link = el("button", {
        type: "button",
        className: "link",
        "data-testid": `download-${o.name}`,
        text: "download .npy",
        disabled: run.timingOnly,
        title: run.timingOnly ? "a timing-only run computes no values" : undefined,
      });
      link.addEventListener("click", () => void this.download(o.name, status));
      tr.append(
        el("td", { className: "name", text: o.name }),
        el("td", { text: o.dtype }),
        el("td", { text: shapeText(o.shape) }),
        el("td", {}, link, " ", status),
      );
      if (graph) {
        tr.append(this.fileCell(tr, o.name, this.expected, `expected-${o.name}`));
        const check = checks.get(o.name);
        const err = this.failure;
        const mine = err?.role === "expected" && err.input === o.name;
        tr.append(
          el("td", {
            className: mine ? "row-error" : check ? (check.passed ? "pass" : "fail") : "muted",
            "data-testid": mine ? "row-error" : `compare-${o.name}`,
            text: mine
              ? err.message
              : check
                ? `${check.passed ? "PASS" : "FAIL"}: ${toleranceText(check)}`
                : "",
          }),
        );
      }
      body.append(tr);
    }
    table.append(body);
    const note = run.timingOnly
      ? "A timing-only run computes no values: nothing to download."
      : graph
        ? "Each output of the last run as .npy; give an expected .npy to compare it (as spyre run --expected)."
        : "The buffers the module stores to, after the last run, as .npy.";
    return el(
      "div",
      { className: "outputs" },
      el("h3", { text: "Outputs" }),
      el("p", { className: "muted", text: note }),
      table,
    );
  }
}
