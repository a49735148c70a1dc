// Pass list (left), the selected pass's snapshot, and its diff against the previous pass.
// Lines are linked: pointing at an entity's line highlights the entity in the diff and shows
// its lines in the previous and next pass; in the SDSC | KTIR side-by-side view, a kernel's
// KTIR function and its device op's SDSC entry highlight each other (by the run's source map).

import type { PassSnapshot, SourceMap } from "../api";
import { byId, el, isEditableTarget } from "../dom";
import { kernelAt, opOfKernel, sdscOpAt } from "../session";
import { lineDiff, type DiffLine } from "./diff";
import { setNumbers, setText } from "./longText";
import {
  diffEntities,
  entityAt,
  entityRanges,
  type EntityChange,
  type EntityRange,
  isStateText,
  summarize,
} from "./stateDiff";
import type { Change, PageState, Shortcut, UrlPart, View, ViewContext } from "./view";

/** The pass shown when nothing else was asked for. */
export const DEFAULT_PASS = "ktir";

/** Longest text diffed line by line (larger snapshots are summarised instead). */
const MAX_DIFF_CHARS = 400_000;
/** Most diff lines drawn. */
const MAX_DIFF_LINES = 4000;

/** The passes whose snapshots are the two IRs, shown side by side rather than diffed. */
const IR_PASSES: Record<string, string> = { sdsc: "ktir", ktir: "sdsc" };

/**
 * Passes that describe the state beside the pipeline rather than change it: the
 * tensor-parallel pass adds a `shard:` line to the state after canonicalize, and the next
 * pass (which compiles the unsharded graph) diffs against the pass before it, not against
 * those lines.
 */
const SIDE_PASSES = new Set(["tensor-parallel"]);

/** The pass a pass's diff is against: the one before it, skipping side passes. */
export function previousPass(passes: readonly PassSnapshot[], index: number): PassSnapshot | null {
  const self = passes[index];
  for (let i = index - 1; i >= 0; i--) {
    const p = passes[i];
    if (p && (self && SIDE_PASSES.has(self.name) ? true : !SIDE_PASSES.has(p.name))) return p;
  }
  return null;
}

/**
 * Whether each pass changed the program: a pass whose state snapshot equals the previous
 * one's did nothing (the page hides it). IR snapshots always count as changes.
 */
export function passChanged(passes: readonly PassSnapshot[]): boolean[] {
  return passes.map((p, i) => {
    const prev = previousPass(passes, i);
    // A text still in the compile store counts as a change until it comes.
    if (!prev || p.text === null || prev.text === null) return true;
    if (!isStateText(p.text) || !isStateText(prev.text)) return true;
    return p.text !== prev.text;
  });
}

/** Index after stepping `delta` from `current` in a list of `count`, clamped to the ends. */
export function stepIndex(current: number, delta: number, count: number): number {
  if (count <= 0) return -1;
  if (current < 0) return delta >= 0 ? 0 : count - 1;
  return Math.min(count - 1, Math.max(0, current + delta));
}

/** What a snapshot shows while its text is read from the compile store. */
export const LOADING_TEXTS = "loading pass texts…";

/** The passes whose texts showing pass `index` needs: it, the one it is diffed against or
 * the IR beside it. */
export function textsShown(passes: readonly PassSnapshot[], index: number): PassSnapshot[] {
  const pass = passes[index];
  if (!pass) return [];
  const other = IR_PASSES[pass.name];
  const beside = other === undefined ? undefined : passes.find((p) => p.name === other);
  const against = beside ?? previousPass(passes, index);
  return against ? [pass, against] : [pass];
}

/** Text shown for a snapshot: single-line JSON is pretty-printed, everything else verbatim. */
export function displayText(text: string): string {
  const trimmed = text.trim();
  if (!trimmed.includes("\n") && (trimmed.startsWith("{") || trimmed.startsWith("["))) {
    try {
      return JSON.stringify(JSON.parse(trimmed), null, 2);
    } catch {
      return text;
    }
  }
  return text;
}

/** What a pointed-at line links: an entity of the program state, or a kernel of the IRs. */
export type LineLink = { kind: "entity"; key: string } | { kind: "kernel"; kernel: number };

/** The 1-based line of a `pre` under the pointer at `clientY` (lines are one height). */
function lineAt(pre: HTMLElement, clientY: number): number {
  const cs = getComputedStyle(pre);
  const lh = parseFloat(cs.lineHeight) || parseFloat(cs.fontSize) * 1.5 || 18;
  const top = pre.getBoundingClientRect().top + (parseFloat(cs.paddingTop) || 0);
  return Math.floor((clientY - top) / lh) + 1;
}

/** Marks lines `from`..`to` of a `pre` with a band behind them (returned, for scrolling). */
function addBand(pre: HTMLElement, from: number, to: number): HTMLElement {
  const cs = getComputedStyle(pre);
  const lh = parseFloat(cs.lineHeight) || parseFloat(cs.fontSize) * 1.5 || 18;
  const top = parseFloat(cs.paddingTop) || 0;
  const band = el("div", {
    className: "line-band",
    "aria-hidden": "true",
    "data-from": from,
    "data-to": to,
  });
  band.style.top = `${top + (from - 1) * lh}px`;
  band.style.height = `${(to - from + 1) * lh}px`;
  pre.append(band);
  return band;
}

/**
 * Scrolls `node`'s nearest vertically scrolling ancestor just enough to show it, never
 * sideways (the snapshot's gutter stays over the start of its lines).
 */
function revealVertically(node: HTMLElement): void {
  let s = node.parentElement;
  while (s && s.scrollHeight <= s.clientHeight) s = s.parentElement;
  if (!s) return;
  const box = s.getBoundingClientRect();
  const r = node.getBoundingClientRect();
  if (r.top < box.top) s.scrollTop -= box.top - r.top;
  else if (r.bottom > box.bottom) s.scrollTop += Math.min(r.bottom - box.bottom, r.top - box.top);
}

/** "1\n2\n...\nN" for a text of N lines (a trailing newline does not start a line). */
export function lineNumbers(text: string): string {
  if (text.length === 0) return "";
  let lines = 1;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) lines++;
  if (text.endsWith("\n")) lines--;
  const out: string[] = [];
  for (let i = 1; i <= lines; i++) out.push(String(i));
  return out.join("\n");
}

export class PassView {
  private readonly list = byId<HTMLDivElement>("pass-list");
  private readonly snapshot = byId<HTMLPreElement>("snapshot");
  private readonly gutter = byId<HTMLPreElement>("snapshot-gutter");
  private readonly scroll = byId<HTMLDivElement>("snapshot-scroll");
  private readonly title = byId<HTMLSpanElement>("snapshot-title");
  private readonly meta = byId<HTMLSpanElement>("snapshot-meta");
  private readonly diff = byId<HTMLDivElement>("diff");
  private readonly diffTitle = byId<HTMLSpanElement>("diff-title");
  private readonly diffMeta = byId<HTMLSpanElement>("diff-meta");
  private readonly summary = byId<HTMLUListElement>("diff-summary");
  private readonly unchangedToggle = byId<HTMLButtonElement>("show-unchanged");
  private showUnchanged = false;
  private changed: boolean[] = [];
  private passes: readonly PassSnapshot[] = [];
  private buttons: HTMLButtonElement[] = [];
  private selected = -1;
  /** Whether the Passes tab is on screen. */
  private visible = false;
  /** A pass was selected while the tab was hidden: its snapshot is shown when it is next. */
  private stale = false;
  private listeners: ((pass: PassSnapshot) => void)[] = [];
  /** Asks for the pass texts a cache hit left in the store (set by the tab). */
  needTexts: (names: readonly string[]) => void = () => {};
  /** Why the texts could not be read (null: they are coming or here). */
  private textsFailed: string | null = null;
  /** The run's source map and KTIR, for linking the two IRs' lines. */
  private map: SourceMap | null = null;
  private ktir: string | null = null;
  /** The link a click set (kept across passes), and the one under the pointer. */
  private pinned: LineLink | null = null;
  private hover: LineLink | null = null;
  /** Entity ranges of each pass's text, by pass index (parsed when first needed). */
  private ranges = new Map<number, EntityRange[]>();
  /** The other IR's text shown beside the snapshot, and which IR each one is. */
  private beside: HTMLPreElement | null = null;
  private snapshotIr: "ktir" | "sdsc" | null = null;
  private readonly linked = el("div", {
    className: "linked",
    "data-testid": "linked-entity",
    "aria-live": "polite",
    hidden: true,
  });

  constructor() {
    this.unchangedToggle.addEventListener("click", () => {
      this.showUnchanged = !this.showUnchanged;
      this.applyHidden();
    });
    this.diff.before(this.linked);
    this.watchLines(this.snapshot, () => this.snapshotIr);
    this.diff.addEventListener("mousemove", (ev) => this.onDiffPointer(ev, false));
    this.diff.addEventListener("click", (ev) => this.onDiffPointer(ev, true));
    this.diff.addEventListener("mouseleave", () => this.setHover(null));
  }

  /** Links the lines of `pre` on hover and click; `ir` says which IR it shows, if any. */
  private watchLines(pre: HTMLElement, ir: () => "ktir" | "sdsc" | null): void {
    const linkAt = (ev: MouseEvent): LineLink | null => this.linkOf(ir(), lineAt(pre, ev.clientY));
    pre.addEventListener("mousemove", (ev) => this.setHover(linkAt(ev)));
    pre.addEventListener("mouseleave", () => this.setHover(null));
    pre.addEventListener("click", (ev) => {
      // A selection being made is not a click on a line.
      if (window.getSelection()?.toString()) return;
      this.pinned = linkAt(ev);
      this.hover = null;
      this.applyLink(true);
    });
  }

  /** What line `line` of a text links: in an IR, its kernel; in a state text, its entity. */
  private linkOf(ir: "ktir" | "sdsc" | null, line: number): LineLink | null {
    const map = this.map;
    if (ir === "ktir" || ir === "sdsc") {
      if (!map) return null;
      const k =
        ir === "ktir"
          ? kernelAt(map, line)
          : (() => {
              const op = sdscOpAt(map, line);
              return op && op.kernel !== null ? (map.kernels[op.kernel] ?? null) : null;
            })();
      const i = k ? map.kernels.indexOf(k) : -1;
      return i >= 0 ? { kind: "kernel", kernel: i } : null;
    }
    const r = entityAt(this.rangesOf(this.selected), line);
    return r ? { kind: "entity", key: r.key } : null;
  }

  private rangesOf(index: number): EntityRange[] {
    let r = this.ranges.get(index);
    if (!r) {
      const p = this.passes[index];
      if (!p || p.text === null) return [];
      const text = displayText(p.text);
      r = isStateText(text) ? entityRanges(text) : [];
      this.ranges.set(index, r);
    }
    return r;
  }

  private onDiffPointer(ev: MouseEvent, click: boolean): void {
    if (this.beside && ev.target instanceof Node && this.beside.contains(ev.target)) return;
    const row = ev.target instanceof Element ? ev.target.closest<HTMLElement>(".dl") : null;
    const key = row?.dataset.entity;
    const link: LineLink | null = key ? { kind: "entity", key } : null;
    if (!click) {
      this.setHover(link);
      return;
    }
    this.pinned = link;
    this.hover = null;
    this.applyLink(true);
  }

  private setHover(link: LineLink | null): void {
    if (JSON.stringify(link) === JSON.stringify(this.hover)) return;
    this.hover = link;
    this.applyLink(false);
  }

  /** The run's source map and KTIR text, which link the SDSC and KTIR lines. */
  setSourceMap(map: SourceMap | null, ktir: string | null): void {
    this.map = map;
    this.ktir = ktir;
  }

  /**
   * Shows the current link: bands on its lines in the snapshot (and the IR beside it), its
   * rows in the diff, and its lines in the previous and next pass. `scroll` brings the
   * linked lines into view (after a click or a change of pass, not while hovering).
   */
  private applyLink(scroll: boolean): void {
    const link = this.hover ?? this.pinned;
    for (const b of [...this.snapshot.querySelectorAll(".line-band")]) b.remove();
    for (const b of [...this.diff.querySelectorAll(".line-band")]) b.remove();
    for (const r of this.diff.querySelectorAll(".dl.linked")) r.classList.remove("linked");
    this.snapshot.dataset.linked = "";
    this.linked.hidden = true;
    this.linked.replaceChildren();
    if (!link) return;
    const bands: HTMLElement[] = [];
    if (link.kind === "entity") {
      const r = this.rangesOf(this.selected).find((e) => e.key === link.key);
      if (!r) return;
      this.snapshot.dataset.linked = link.key;
      bands.push(addBand(this.snapshot, r.from, r.to));
      const rows = this.diff.querySelectorAll<HTMLElement>(".dl[data-entity]");
      let first: HTMLElement | null = null;
      for (const row of rows)
        if (row.dataset.entity === link.key) {
          row.classList.add("linked");
          first ??= row;
        }
      if (scroll && first) revealVertically(first);
      this.showNeighbours(link.key);
    } else {
      const map = this.map;
      const k = map?.kernels[link.kernel];
      if (!map || !k) return;
      this.snapshot.dataset.linked = `kernel ${k.func}`;
      const sdsc = opOfKernel(map, k)?.sdscLines ?? null;
      const lines = (ir: "ktir" | "sdsc") => (ir === "ktir" ? k.lines : sdsc);
      const mark = (pre: HTMLElement | null, ir: "ktir" | "sdsc" | null) => {
        const l = ir ? lines(ir) : null;
        if (pre && l) bands.push(addBand(pre, l.from, l.to));
      };
      mark(this.snapshot, this.snapshotIr);
      mark(this.beside, this.snapshotIr === "ktir" ? "sdsc" : "ktir");
    }
    if (scroll) for (const b of bands) revealVertically(b);
  }

  /** The linked entity's lines in the passes before and after the selected one. */
  private showNeighbours(key: string): void {
    const side = (index: number, arrow: "prev" | "next") => {
      const p = this.passes[index];
      if (!p) return null;
      const r = this.rangesOf(index).find((e) => e.key === key);
      const lines = r
        ? displayText(p.text ?? "")
            .split("\n")
            .slice(r.from - 1, r.to)
        : [];
      const go = el("button", {
        type: "button",
        className: "linked-go",
        "data-testid": `linked-${arrow}`,
        "aria-label": `show ${key} in the pass ${p.name}`,
        text: arrow === "prev" ? `← ${p.name}` : `${p.name} →`,
      });
      go.addEventListener("click", () => {
        this.pinned = { kind: "entity", key };
        this.hover = null;
        this.select(index);
      });
      return el(
        "div",
        { className: `linked-side linked-${arrow}` },
        go,
        el("pre", {
          className: `linked-lines${r ? "" : " absent"}`,
          "data-testid": `linked-${arrow}-lines`,
          text: r ? lines.join("\n") : `(no ${key} in ${p.name})`,
        }),
      );
    };
    const parts = [side(this.selected - 1, "prev"), side(this.selected + 1, "next")].filter(
      (x): x is HTMLDivElement => x !== null,
    );
    if (parts.length === 0) return;
    this.linked.replaceChildren(el("div", { className: "linked-key", text: key }), ...parts);
    this.linked.hidden = false;
  }

  get selectedName(): string | null {
    return this.passes[this.selected]?.name ?? null;
  }

  onSelect(fn: (pass: PassSnapshot) => void): void {
    this.listeners.push(fn);
  }

  /** Replaces the passes; keeps `preferred` selected if present, else the first pass. */
  setPasses(passes: readonly PassSnapshot[], preferred: string | null): void {
    this.passes = passes;
    this.ranges.clear();
    this.hover = null;
    this.buttons = passes.map((p, i) => {
      const b = el(
        "button",
        {
          type: "button",
          className: "pass-item",
          role: "option",
          "data-pass": p.name,
          "aria-selected": "false",
          tabindex: -1,
          title: p.title,
        },
        el("span", { className: "pass-step", text: `${i + 1}. ${p.name}` }),
        el("span", { className: "pass-title", text: p.title }),
      );
      b.addEventListener("click", () => this.select(i));
      return b;
    });
    this.list.replaceChildren(...this.buttons);
    this.changed = passChanged(passes);
    this.buttons.forEach((b, i) => {
      if (!this.changed[i]) {
        b.classList.add("unchanged");
        b.title = `${passes[i]!.title} (changed nothing)`;
      }
    });
    this.selected = -1;
    const want = preferred === null ? -1 : passes.findIndex((p) => p.name === preferred);
    this.applyHidden(want);
    this.select(want >= 0 ? want : 0, false, true);
  }

  /** Hides the passes that changed nothing (unless asked to show them, or `keep`). */
  private applyHidden(keep = this.selected): void {
    const n = this.changed.filter((c) => !c).length;
    this.unchangedToggle.hidden = n === 0;
    this.unchangedToggle.textContent = this.showUnchanged
      ? `Hide ${n} unchanged`
      : `Show ${n} unchanged`;
    this.unchangedToggle.setAttribute("aria-pressed", String(this.showUnchanged));
    this.buttons.forEach((b, i) => {
      b.hidden = !this.showUnchanged && !this.changed[i] && i !== keep;
    });
  }

  /** Selects a pass; `later`: lay out its snapshot only once the tab is on screen. */
  select(index: number, focus = false, later = false): void {
    const pass = this.passes[index];
    if (!pass) {
      this.showText("", "Snapshot", null);
      this.meta.textContent = "a KTIR module has no compiler passes";
      this.diffTitle.textContent = "Diff";
      this.diffMeta.textContent = "";
      this.diff.replaceChildren();
      return;
    }
    const prev = this.buttons[this.selected];
    if (prev) {
      prev.setAttribute("aria-selected", "false");
      prev.tabIndex = -1;
    }
    this.selected = index;
    const b = this.buttons[index];
    if (b) {
      b.setAttribute("aria-selected", "true");
      b.tabIndex = 0;
      if (focus) b.focus();
      b.scrollIntoView?.({ block: "nearest" });
    }
    // A new run's snapshot and diff are laid out when the Passes tab is on screen: a full
    // model's run would otherwise set megabytes of text in a hidden panel after every run.
    if (this.visible || !later) this.render();
    else this.stale = true;
    for (const fn of this.listeners) fn(pass);
  }

  /** Why the pass texts could not be read (null: none failed); shown in place of them. */
  setTextsFailed(why: string | null): void {
    this.textsFailed = why;
    if (why !== null && this.visible && this.selected >= 0) this.render();
  }

  /** Shows the selected pass's snapshot and its diff. */
  private render(): void {
    this.stale = false;
    const pass = this.passes[this.selected];
    if (!pass) return;
    if (pass.text === null || textsShown(this.passes, this.selected).some((p) => p.text === null)) {
      // A cache hit's texts wait in the store: say so, and ask for them.
      const why = this.textsFailed;
      const say = why === null ? LOADING_TEXTS : `the pass texts could not be read: ${why}`;
      this.showText(pass.text === null ? say : displayText(pass.text), pass.title, pass.name);
      this.snapshot.dataset.pending = "";
      this.diffTitle.textContent = "Diff";
      this.diffMeta.textContent = "";
      this.summary.replaceChildren();
      this.summary.hidden = true;
      this.beside = null;
      this.snapshotIr = null;
      this.diff.dataset.mode = "pending";
      this.diff.replaceChildren(el("div", { className: "dl skip", text: say }));
      if (why === null)
        this.needTexts(
          textsShown(this.passes, this.selected)
            .filter((p) => p.text === null)
            .map((p) => p.name),
        );
      return;
    }
    delete this.snapshot.dataset.pending;
    const text = displayText(pass.text);
    this.showText(text, pass.title, pass.name);
    this.showDiff(previousPass(this.passes, this.selected), pass, text);
    this.applyLink(true);
  }

  /** Whether the Passes tab is on screen; a pass selected while it was not is shown now. */
  setVisible(visible: boolean): void {
    this.visible = visible;
    if (visible && this.stale) this.render();
  }

  step(delta: number, focus = false): void {
    let next = stepIndex(this.selected, delta, this.passes.length);
    // Hidden passes are stepped over.
    while (next >= 0 && this.buttons[next]?.hidden) {
      const after = stepIndex(next, Math.sign(delta), this.passes.length);
      if (after === next) return;
      next = after;
    }
    if (next >= 0 && next !== this.selected) this.select(next, focus);
  }

  /** Shows a snapshot; `name` (a pass's) leads the meta line with the count of lines. */
  private showText(text: string, title: string, name: string | null): void {
    this.scroll.scrollTop = 0;
    const lines = setText(this.snapshot, text, this.scroll);
    setNumbers(this.gutter, lines, this.scroll);
    this.title.textContent = title;
    this.meta.textContent = name === null ? "" : `${name} · ${lines} lines`;
    this.scroll.scrollTop = 0;
    this.scroll.scrollLeft = 0;
  }

  private showDiff(prev: PassSnapshot | null, pass: PassSnapshot, text: string): void {
    this.diff.scrollTop = 0;
    this.summary.replaceChildren();
    this.summary.hidden = true;
    this.beside = null;
    this.snapshotIr = null;
    const other = IR_PASSES[pass.name];
    const beside = other === undefined ? undefined : this.passes.find((p) => p.name === other);
    if (beside) {
      // SDSC and KTIR are two forms of one program: shown side by side, not diffed. Their
      // lines link through the source map, which speaks of the KTIR the run ran.
      this.diffTitle.textContent = `${beside.name.toUpperCase()} beside ${pass.name.toUpperCase()}`;
      this.diffMeta.textContent = "side by side";
      this.diff.dataset.mode = "beside";
      const ktirText = pass.name === "ktir" ? pass.text : beside.text;
      const besideText = beside.text ?? "";
      const linkable = this.map !== null && ktirText === this.ktir;
      const pre = el("pre", { className: "code beside", "data-testid": "beside" });
      if (linkable) {
        this.snapshotIr = pass.name === "ktir" ? "ktir" : "sdsc";
        this.beside = pre;
        const ir = beside.name === "ktir" ? "ktir" : "sdsc";
        this.watchLines(pre, () => ir);
      }
      this.diff.replaceChildren(pre);
      setText(pre, displayText(besideText), this.diff);
      return;
    }
    if (!prev) {
      this.diffTitle.textContent = "Diff";
      this.diffMeta.textContent = "first pass: nothing before it";
      this.diff.dataset.mode = "first";
      this.diff.replaceChildren(el("div", { className: "dl skip", text: "(first pass)" }));
      return;
    }
    this.diffTitle.textContent = `Diff ${prev.name} → ${pass.name}`;
    const before = displayText(prev.text ?? "");
    if (isStateText(before) && isStateText(text)) {
      this.showEntityDiff(diffEntities(before, text));
      return;
    }
    if (before.length + text.length > MAX_DIFF_CHARS) {
      this.diffMeta.textContent = "too large to diff";
      this.diff.replaceChildren(
        el("div", { className: "dl skip", text: `${before.length + text.length} characters` }),
      );
      return;
    }
    this.diff.dataset.mode = "lines";
    const d = lineDiff(before, text);
    this.diffMeta.textContent = `+${d.added} −${d.removed}`;
    this.showRows(d.lines, d.added === 0 && d.removed === 0);
  }

  /** The state diff: each changed entity with its changed lines, and the summary above. */
  private showEntityDiff(changes: readonly EntityChange[]): void {
    this.diff.dataset.mode = "entities";
    let added = 0;
    let removed = 0;
    const lines: DiffLine[] = [];
    const keys: string[] = [];
    for (const c of changes) {
      for (const l of c.lines) {
        if (l.kind === "add") added++;
        else if (l.kind === "del") removed++;
        lines.push(l);
        keys.push(`${c.kind} ${c.name}`);
      }
    }
    this.diffMeta.textContent = `+${added} −${removed}`;
    const words = summarize(changes);
    this.summary.replaceChildren(...words.map((w) => el("li", { text: w })));
    this.summary.hidden = words.length === 0;
    this.showRows(lines, changes.length === 0, keys);
  }

  /** Draws diff rows; `keys`, when given, names the entity of each row (for linking). */
  private showRows(lines: readonly DiffLine[], none: boolean, keys?: readonly string[]): void {
    const rows = lines.slice(0, MAX_DIFF_LINES).map((l, i) => {
      const sign =
        l.kind === "add" ? "+ " : l.kind === "del" ? "- " : l.kind === "skip" ? "" : "  ";
      return el("div", {
        className: `dl ${l.kind}`,
        text: sign + l.text,
        "data-entity": keys?.[i],
      });
    });
    if (lines.length > MAX_DIFF_LINES)
      rows.push(
        el("div", {
          className: "dl skip",
          text: `⋯ ${lines.length - MAX_DIFF_LINES} more lines`,
        }),
      );
    if (none) rows.unshift(el("div", { className: "dl skip", text: "(no change)" }));
    this.diff.replaceChildren(...rows);
  }

  /** Arrow keys step passes anywhere; Home / End jump within the list. True when handled. */
  onKey(ev: KeyboardEvent): boolean {
    if (ev.altKey || ev.ctrlKey || ev.metaKey) return false;
    const inList = ev.target instanceof Node && this.list.contains(ev.target);
    if (!inList) {
      if (isEditableTarget(ev.target)) return false;
      // Arrow keys scroll the snapshot when it has focus.
      if (ev.target instanceof Node && this.scroll.contains(ev.target)) return false;
      if (ev.target instanceof Node && this.diff.contains(ev.target)) return false;
    }
    let delta = 0;
    if (ev.key === "ArrowDown") delta = 1;
    else if (ev.key === "ArrowUp") delta = -1;
    else if (inList && ev.key === "Home") delta = -Infinity;
    else if (inList && ev.key === "End") delta = Infinity;
    else return false;
    if (Number.isFinite(delta)) this.step(delta, inList);
    else this.select(delta < 0 ? 0 : this.passes.length - 1, inList);
    return true;
  }
}

/** The pass list (left) and the Passes tab (snapshot and diff); keeps `pass` in the URL. */
export class PassesTab implements View {
  readonly id = "passes";
  readonly title = "Passes";
  readonly key = "2";
  // The pass list sits beside every tab.
  readonly eager = true;
  private view: PassView | null = null;
  /** The pass to select when the next run arrives (from a restored link). */
  private wanted: string | null = null;

  readonly shortcuts: readonly Shortcut[] = [
    {
      keys: ["ArrowUp", "ArrowDown"],
      label: "↑ / ↓",
      does: "previous / next pass",
      run: (ev) => this.view?.onKey(ev) ?? false,
    },
    {
      keys: ["Home", "End"],
      does: "first / last pass",
      run: (ev) => this.view?.onKey(ev) ?? false,
    },
  ];

  readonly url: UrlPart<{ pass: string | null }> = {
    empty: { pass: null },
    sample: { pass: "layout" },
    decode: (o) => ({ pass: typeof o.pass === "string" && o.pass !== "" ? o.pass : null }),
    encode: (v) => ({ pass: v.pass }),
    read: () => ({ pass: this.view?.selectedName ?? null }),
    apply: (v) => {
      this.wanted = v.pass ?? DEFAULT_PASS;
    },
  };

  mount(_container: HTMLElement, ctx: ViewContext): void {
    this.view = new PassView();
    this.view.onSelect(() => ctx.save());
    this.view.needTexts = (names) => ctx.needPassTexts(names);
  }

  update(s: PageState, changed: ReadonlySet<Change>): void {
    if (!this.view) return;
    if (changed.has("view")) this.view.setVisible(s.view === this.id);
    if (changed.has("passTexts") && !changed.has("run") && s.loaded) {
      // The texts came (or failed): the same passes, shown again where they were.
      const r = s.loaded.res.result;
      this.view.setSourceMap(r.sourceMap, r.ktir);
      if (s.loaded.textsFailed) this.view.setTextsFailed(s.loaded.textsFailed);
      else this.view.setPasses(r.passes, this.view.selectedName);
      return;
    }
    if (!changed.has("run") || !s.loaded) return;
    const pass = this.wanted ?? this.view.selectedName ?? DEFAULT_PASS;
    this.wanted = null;
    const r = s.loaded.res.result;
    this.view.setSourceMap(r.sourceMap, r.ktir);
    this.view.setTextsFailed(null);
    this.view.setPasses(r.passes, pass);
  }
}
