// The IR view: KTIR in an editable CodeMirror 6 editor with live verifier diagnostics and a
// Run button; the SDSC bundle as read-only JSON folded by op. Clicking a line reports it, so
// the page can select the graph node or tiles it came from; `reveal` goes the other way.

import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { json } from "@codemirror/lang-json";
import {
  bracketMatching,
  ensureSyntaxTree,
  foldable,
  foldedRanges,
  foldEffect,
  unfoldEffect,
  foldGutter,
  foldKeymap,
  syntaxHighlighting,
} from "@codemirror/language";
import { linter, lintGutter, type Diagnostic as CmDiagnostic } from "@codemirror/lint";
import { EditorState, StateEffect, StateField, type Extension } from "@codemirror/state";
import {
  Decoration,
  drawSelection,
  EditorView,
  highlightActiveLine,
  highlightActiveLineGutter,
  keymap,
  lineNumbers,
  type DecorationSet,
} from "@codemirror/view";
import type { Diagnostic } from "../api";
import { byId, el } from "../dom";
import { mlirHighlight, mlirLanguage } from "../editor/mlir";
import { textPending } from "../session";
import { LOADING_TEXTS } from "./passes";
import type { Change, IrKind, PageState, Shortcut, View, ViewContext } from "./view";

export type { IrKind } from "./view";

export interface IrEvents {
  verify(text: string): Promise<Diagnostic[]>;
  run(text: string): void;
  /** A line was clicked in one of the editors (1-based). */
  line(kind: IrKind, line: number): void;
  /** The KTIR text changed (edited or reset). */
  changed(): void;
  /** The SDSC bundle was shown while the run's pass texts wait in the compile store. */
  needTexts?(): void;
}

/** Editor range of a verifier diagnostic (1-based line and column, clamped to the text). */
export function diagnosticRange(
  doc: { lines: number; line(n: number): { from: number; to: number } },
  d: Pick<Diagnostic, "line" | "column" | "start" | "end">,
): { from: number; to: number } {
  const l = doc.line(Math.min(Math.max(1, d.line), doc.lines));
  const from = Math.min(l.to, l.from + Math.max(0, d.column - 1));
  let to = Math.min(l.to, from + Math.max(1, d.end - d.start));
  if (to <= from) to = Math.min(l.to, from + 1);
  return { from, to };
}

const setLinked = StateEffect.define<number | null>();

/** One highlighted line, set from outside (the line a graph node, tile or event points at). */
const linkedLine = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(deco, tr) {
    deco = deco.map(tr.changes);
    for (const e of tr.effects) {
      if (!e.is(setLinked)) continue;
      const n = e.value;
      if (n === null || n < 1 || n > tr.state.doc.lines) deco = Decoration.none;
      else
        deco = Decoration.set([
          Decoration.line({ class: "cm-linked-line" }).range(tr.state.doc.line(n).from),
        ]);
    }
    return deco;
  },
  provide: (f) => EditorView.decorations.from(f),
});

const baseTheme = EditorView.theme({
  "&": { backgroundColor: "var(--bg-pane)", color: "var(--fg)" },
  ".cm-gutters": {
    backgroundColor: "var(--bg-pane)",
    color: "var(--fg-muted)",
    borderRight: "1px solid var(--border)",
  },
  ".cm-activeLine": { backgroundColor: "var(--bg-hover)" },
  ".cm-activeLineGutter": { backgroundColor: "var(--bg-hover)" },
  ".cm-linked-line": { backgroundColor: "var(--line-hl)", outline: "1px solid var(--accent)" },
  ".cm-cursor": { borderLeftColor: "var(--fg-strong)" },
  "&.cm-focused .cm-selectionBackground, .cm-selectionBackground": {
    backgroundColor: "var(--bg-selected) !important",
  },
  ".cm-tooltip": {
    backgroundColor: "var(--bg-raised)",
    color: "var(--fg)",
    border: "1px solid var(--border)",
  },
  ".cm-foldPlaceholder": {
    backgroundColor: "var(--bg-raised)",
    color: "var(--fg-muted)",
    border: "1px solid var(--border)",
  },
});

function lineClicks(kind: IrKind, events: IrEvents): Extension {
  return EditorView.domEventHandlers({
    click(ev, view) {
      const pos = view.posAtCoords({ x: ev.clientX, y: ev.clientY });
      if (pos === null) return false;
      events.line(kind, view.state.doc.lineAt(pos).number);
      return false;
    },
  });
}

export class IrView {
  private readonly ktirHost = byId<HTMLDivElement>("ktir-editor");
  private readonly sdscHost = byId<HTMLDivElement>("sdsc-editor");
  private readonly diagList = byId<HTMLUListElement>("ktir-diagnostics");
  private readonly state = byId<HTMLSpanElement>("ktir-state");
  private readonly runButton = byId<HTMLButtonElement>("ktir-run");
  private readonly resetButton = byId<HTMLButtonElement>("ktir-reset");
  private readonly segButtons = [...document.querySelectorAll<HTMLButtonElement>("[data-ir]")];
  private readonly ktir: EditorView;
  private readonly sdsc: EditorView;
  /** An SDSC bundle not yet in its editor (see `setSdsc`). */
  private pendingSdsc: string | null = null;
  /** The SDSC editor holds a placeholder: the bundle's text waits in the compile store. */
  private sdscWaiting = false;
  /** KTIR text not yet in its editor (see `setKtir`). */
  private pendingKtir: string | null = null;
  /** Whether the KTIR editor has been measured on screen since it was last hidden. */
  private ktirMeasured = false;
  private original = "";
  private diagnostics: Diagnostic[] = [];
  private shown: IrKind = "ktir";
  private quiet = false;

  constructor(private readonly events: IrEvents) {
    const lint = linter(
      async (view) => {
        const text = view.state.doc.toString();
        // The empty editor, before a run first fills it (this view is filled when first
        // shown), has nothing to verify.
        if (text === "") {
          this.showDiagnostics([]);
          return [];
        }
        let diags: Diagnostic[];
        try {
          diags = await events.verify(text);
        } catch {
          return [];
        }
        if (view.state.doc.toString() !== text) return [];
        this.showDiagnostics(diags);
        return diags.map((d): CmDiagnostic => ({
          ...diagnosticRange(view.state.doc, d),
          severity: d.severity,
          message: d.message,
          source: "ktir verifier",
        }));
      },
      { delay: 250 },
    );
    this.ktir = new EditorView({
      parent: this.ktirHost,
      state: EditorState.create({
        doc: "",
        extensions: [
          lineNumbers(),
          highlightActiveLineGutter(),
          history(),
          drawSelection(),
          highlightActiveLine(),
          bracketMatching(),
          mlirLanguage,
          syntaxHighlighting(mlirHighlight),
          lintGutter(),
          lint,
          linkedLine,
          baseTheme,
          keymap.of([
            { key: "Mod-Enter", run: () => (this.run(), true) },
            ...defaultKeymap,
            ...historyKeymap,
          ]),
          lineClicks("ktir", events),
          EditorView.updateListener.of((u) => {
            if (u.docChanged && !this.quiet) {
              this.updateState();
              events.changed();
            }
          }),
          EditorView.contentAttributes.of({ "aria-label": "KTIR editor", "data-testid": "ktir" }),
        ],
      }),
    });
    this.sdsc = new EditorView({
      parent: this.sdscHost,
      state: EditorState.create({
        doc: "",
        extensions: this.sdscExtensions(events),
      }),
    });
    this.runButton.addEventListener("click", () => this.run());
    this.resetButton.addEventListener("click", () => this.setKtir(this.original, this.original));
    for (const b of this.segButtons) {
      b.addEventListener("click", () => this.show(b.dataset.ir === "sdsc" ? "sdsc" : "ktir"));
    }
  }

  private sdscExtensions(events: IrEvents): Extension[] {
    return [
      lineNumbers(),
      highlightActiveLineGutter(),
      highlightActiveLine(),
      foldGutter(),
      json(),
      syntaxHighlighting(mlirHighlight),
      linkedLine,
      baseTheme,
      keymap.of([...foldKeymap, ...defaultKeymap]),
      EditorState.readOnly.of(true),
      lineClicks("sdsc", events),
      EditorView.contentAttributes.of({ "aria-label": "SDSC (read only)" }),
    ];
  }

  get text(): string {
    return this.pendingKtir ?? this.ktir.state.doc.toString();
  }

  get edited(): boolean {
    return this.text !== this.original;
  }

  get view(): IrKind {
    return this.shown;
  }

  lineText(kind: IrKind, line: number): string {
    const doc = this.editor(kind).state.doc;
    return line >= 1 && line <= doc.lines ? doc.line(line).text : "";
  }

  /** Text of lines 1..n (for walking back to the enclosing function or op). */
  lines(kind: IrKind): string[] {
    return this.editor(kind).state.doc.toString().split("\n");
  }

  /**
   * Sets the KTIR text. It goes into the editor once the editor has been measured on screen:
   * an editor never measured (hidden since the page loaded) took a full model's text as all
   * in view, laid out every line, then dropped them, for seconds.
   */
  setKtir(text: string, original: string): void {
    this.original = original;
    if (this.ktirMeasured) this.putKtir(text);
    else if (text !== this.text) {
      this.pendingKtir = text;
      // Says the editor does not yet hold the view's text (tests and scripts wait on it).
      this.ktirHost.dataset.pending = "";
      this.showDiagnostics([]);
    }
    this.updateState();
    this.events.changed();
  }

  private putKtir(text: string): void {
    this.pendingKtir = null;
    delete this.ktirHost.dataset.pending;
    this.quiet = true;
    try {
      // Setting the text the editor already holds (a failed Run keeps the edit) must not add
      // an undo step, or undo would need two presses.
      if (text !== this.ktir.state.doc.toString()) {
        this.ktir.dispatch({ changes: { from: 0, to: this.ktir.state.doc.length, insert: text } });
        // The listed diagnostics were of the text replaced; the new text's come from the linter.
        this.showDiagnostics([]);
      }
    } finally {
      this.quiet = false;
    }
  }

  /** The IR tab left the screen: the editor's measures are stale until it is shown again. */
  hidden(): void {
    this.ktirMeasured = false;
  }

  /**
   * Sets the SDSC bundle. It goes into its editor when first shown or read: a full model's
   * bundle takes seconds to lay out and fold, and most visits to this view read the KTIR.
   */
  setSdsc(text: string, waiting: string | null = null): void {
    this.sdscWaiting = waiting !== null;
    this.pendingSdsc = waiting ?? text;
    if (this.sdscWaiting) this.sdscHost.dataset.pending = "";
    else delete this.sdscHost.dataset.pending;
    for (const b of this.segButtons)
      b.disabled = b.dataset.ir === "sdsc" && text === "" && waiting === null;
    if (text === "" && waiting === null && this.shown === "sdsc") this.show("ktir");
    else if (this.shown === "sdsc") {
      this.editor("sdsc");
      if (this.sdscWaiting) this.events.needTexts?.();
    }
  }

  /** The editor of `kind`, with any SDSC bundle set aside put in first. */
  private editor(kind: IrKind): EditorView {
    if (kind === "ktir") {
      if (this.pendingKtir !== null) this.putKtir(this.pendingKtir);
      return this.ktir;
    }
    const text = this.pendingSdsc;
    if (text !== null) {
      this.pendingSdsc = null;
      this.sdsc.setState(
        EditorState.create({ doc: text, extensions: this.sdscExtensions(this.events) }),
      );
      this.foldByOp();
    }
    return this.sdsc;
  }

  /** Folds each op (and each tensor) of the SDSC bundle: the objects two levels down. */
  private foldByOp(): void {
    const state = this.sdsc.state;
    ensureSyntaxTree(state, state.doc.length, 500);
    const effects: StateEffect<unknown>[] = [];
    // One pass over the lines, keeping the offset (looking each line up by number is slow on
    // a full model's bundle).
    let from = 0;
    for (const text of state.doc.iterLines()) {
      if (/^ {4}\{$/.test(text)) {
        const range = foldable(state, from, from + text.length);
        if (range) effects.push(foldEffect.of(range));
      }
      from += text.length + 1;
    }
    if (effects.length) this.sdsc.dispatch({ effects });
  }

  show(kind: IrKind): void {
    this.shown = kind;
    this.ktirHost.hidden = kind !== "ktir";
    this.sdscHost.hidden = kind !== "sdsc";
    for (const b of this.segButtons) b.setAttribute("aria-pressed", String(b.dataset.ir === kind));
    if (kind === "sdsc") {
      this.editor(kind).requestMeasure();
      if (this.sdscWaiting) this.events.needTexts?.();
      return;
    }
    // The text waiting goes in after the editor's first measure on screen (and outside it:
    // a measure may not dispatch), or after a short wait should no measure come.
    const settle = (): void => {
      if (this.shown !== "ktir" || this.ktirHost.offsetParent === null) return;
      this.ktirMeasured = true;
      if (this.pendingKtir !== null) this.putKtir(this.pendingKtir);
    };
    this.ktir.requestMeasure({
      key: this,
      read: () => null,
      write: () => void setTimeout(settle, 0),
    });
    setTimeout(settle, 100);
  }

  /** Highlights a line (null: none) and scrolls it into view, unfolding it if folded. */
  reveal(kind: IrKind, line: number | null, scroll = true): void {
    const view = this.editor(kind);
    const effects: StateEffect<unknown>[] = [setLinked.of(line)];
    if (line !== null && line >= 1 && line <= view.state.doc.lines && scroll) {
      const pos = view.state.doc.line(line).from;
      foldedRanges(view.state).between(pos, pos + 1, (from, to) => {
        effects.push(unfoldEffect.of({ from, to }));
      });
      effects.push(EditorView.scrollIntoView(pos, { y: "center" }));
    }
    view.dispatch({ effects });
  }

  /** The line of the first match of `pattern` in an editor, or null. */
  findLine(kind: IrKind, pattern: RegExp): number | null {
    const lines = this.lines(kind);
    const i = lines.findIndex((l) => pattern.test(l));
    return i < 0 ? null : i + 1;
  }

  focus(): void {
    this.editor(this.shown).focus();
  }

  setBusy(busy: boolean): void {
    this.runButton.disabled = busy;
  }

  private run(): void {
    this.events.run(this.text);
  }

  private updateState(): void {
    const errors = this.diagnostics.filter((d) => d.severity === "error").length;
    const parts = [this.edited ? "edited" : "as compiled"];
    if (errors) parts.push(`${errors} error${errors === 1 ? "" : "s"}`);
    this.state.textContent = parts.join(" · ");
    this.resetButton.disabled = !this.edited;
  }

  private showDiagnostics(diags: Diagnostic[]): void {
    this.diagnostics = diags;
    this.diagList.replaceChildren(
      ...diags.slice(0, 200).map((d) => {
        const li = el("li", {
          className: d.severity,
          "data-line": d.line,
          "data-severity": d.severity,
          text: `${d.line}:${d.column}: ${d.message}`,
          title: "Go to this line",
        });
        li.addEventListener("click", () => {
          const doc = this.ktir.state.doc;
          const r = diagnosticRange(doc, d);
          this.ktir.dispatch({
            selection: { anchor: r.from, head: r.to },
            effects: EditorView.scrollIntoView(r.from, { y: "center" }),
          });
          this.ktir.focus();
        });
        return li;
      }),
    );
    this.diagList.dataset.count = String(diags.length);
    this.updateState();
  }
}

/** The IR tab: the KTIR editor (edit, verify, run) and the SDSC bundle. */
export class IrTab implements View {
  readonly id = "ir";
  readonly title = "IR";
  readonly key = "3";
  private view: IrView | null = null;
  private ctx: ViewContext | null = null;

  readonly shortcuts: readonly Shortcut[] = [
    {
      keys: ["e"],
      label: "e",
      does: "edit KTIR",
      run: () => {
        if (!this.view || !this.ctx) return false;
        this.ctx.setView(this.id);
        this.view.show("ktir");
        this.view.focus();
        return true;
      },
    },
    // Handled inside the editor (its keymap); listed for the help panel.
    { keys: [], label: "Ctrl+Enter", does: "run the edited KTIR", run: () => false },
  ];

  mount(_container: HTMLElement, ctx: ViewContext): void {
    this.ctx = ctx;
    const view: IrView = new IrView({
      verify: (text) => ctx.verify(text),
      run: (text) => ctx.runKtir(text),
      line: (kind, line) => ctx.selectLine(kind, line),
      changed: () => ctx.ktirChanged(view.text),
      needTexts: () => ctx.needPassTexts(["sdsc"]),
    });
    this.view = view;
  }

  update(s: PageState, changed: ReadonlySet<Change>): void {
    const v = this.view;
    if (!v) return;
    if ((changed.has("run") || changed.has("ktir")) && s.loaded)
      v.setKtir(s.ktir, s.loaded.originalKtir);
    if ((changed.has("run") || changed.has("passTexts")) && s.loaded) {
      const l = s.loaded;
      const waiting = !textPending(l.res.result, "sdsc")
        ? null
        : l.textsFailed
          ? `the pass texts could not be read: ${l.textsFailed}`
          : LOADING_TEXTS;
      v.setSdsc(l.sdsc, waiting);
    }
    if (changed.has("busy")) v.setBusy(s.busy);
    if (changed.has("view") && s.view !== this.id) v.hidden();
    if (changed.has("view") && s.view === this.id) {
      v.show(v.view);
      if (s.lines) v.reveal("ktir", s.lines.from, true);
    }
    if (changed.has("reveal") && s.reveal) {
      if (s.reveal.show) v.show(s.reveal.kind);
      if (s.reveal.line !== undefined) v.reveal(s.reveal.kind, s.reveal.line, s.reveal.scroll);
    }
  }
}
