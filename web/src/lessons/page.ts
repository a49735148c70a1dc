// The lessons page (lessons.html): the list of lessons, and one lesson at a time with its prose,
// its live example (a <spyre-playground> element with the settings the reader may change),
// and its checks, evaluated on every run the example reports.
//
//   lessons.html                      the list
//   lessons.html#lesson=ID            one lesson (ID: the file name without .md)
//   ...&embed=1                       framed by <spyre-playground lesson=ID>: no page chrome

import "../embed/element";
import type { RunReport } from "../embed/url";
import { byId, el } from "../dom";
import { evaluate, usesBaseline } from "./check";
import {
  ALLOCATOR_NAMES,
  lessonId,
  MACHINES,
  parseLesson,
  type Control,
  type ExampleSettings,
  type Lesson,
  type LessonCheck,
  type LessonExample,
} from "./lesson";
import type { Block } from "./markdown";
import { formatQuantity, isQuantity, type Metrics, type Quantity } from "./metrics";
import { renderBlock } from "./render";

const FILES = import.meta.glob<string>("../../../lessons/*.md", {
  query: "?raw",
  import: "default",
  eager: true,
});

/** Every lesson, in file-name order. */
const LESSONS: Lesson[] = Object.entries(FILES)
  .map(([path, text]) => parseLesson(lessonId(path), text))
  .sort((a, b) => a.id.localeCompare(b.id));

const main = byId<HTMLElement>("lessons-main");

function route(): void {
  const params = new URLSearchParams(location.hash.slice(1));
  document.body.classList.toggle("embed", params.get("embed") === "1");
  const id = params.get("lesson");
  const lesson = id ? LESSONS.find((l) => l.id === id) : undefined;
  main.replaceChildren();
  if (id && !lesson) {
    main.append(
      el("p", { role: "alert", className: "lesson-problem", text: `There is no lesson "${id}".` }),
    );
  }
  if (lesson) showLesson(lesson);
  else showList();
  window.scrollTo(0, 0);
}

function showList(): void {
  document.title = "Lessons · Spyre Playground";
  main.append(
    el("h1", { text: "Lessons" }),
    el("p", {
      text: "Short guided lessons on how a dataflow accelerator runs a model: read a page, change a setting of the live example, predict what will happen, run it, and let the check tell you whether your change did what was asked.",
    }),
    el(
      "ol",
      { className: "lesson-list", "data-testid": "lesson-list" },
      ...LESSONS.map((l) =>
        el(
          "li",
          {},
          el("a", { href: `#lesson=${l.id}`, "data-testid": `lesson-link-${l.id}`, text: l.title }),
          el("p", { className: "muted", text: l.summary }),
        ),
      ),
    ),
  );
}

function showLesson(lesson: Lesson): void {
  document.title = `${lesson.title} · Lessons · Spyre Playground`;
  const at = LESSONS.indexOf(lesson);
  const prev = LESSONS[at - 1];
  const next = LESSONS[at + 1];
  const nav = (): HTMLElement =>
    el(
      "nav",
      { className: "lesson-nav", "aria-label": "Lessons" },
      el("a", { href: "#", text: "All lessons" }),
      prev ? el("a", { href: `#lesson=${prev.id}`, text: `← ${prev.title}` }) : "",
      next ? el("a", { href: `#lesson=${next.id}`, text: `${next.title} →` }) : "",
    );
  const live = lesson.example ? new LiveExample(lesson.example, lesson.checks) : null;
  let check = 0;
  const special = (b: Block): HTMLElement | null => {
    if (b.kind !== "code") return null;
    if (b.info === "spyre-example") return live?.root ?? null;
    if (b.info === "spyre-check") {
      const c = lesson.checks[check];
      return c && live ? live.checkCard(check++, c) : null;
    }
    return null;
  };
  const article = el("article", { className: "lesson", "data-testid": "lesson" });
  article.dataset.lesson = lesson.id;
  for (const p of lesson.problems) {
    article.append(el("p", { role: "alert", className: "lesson-problem", text: p }));
  }
  for (const b of lesson.blocks) article.append(renderBlock(b, special));
  main.append(nav(), article, nav());
  live?.start();
}

/** Settings as the element's attributes. */
function attributes(s: ExampleSettings): Record<string, string | null> {
  return {
    example: s.example,
    machine: s.machine,
    allocator: s.allocator === "greedy" ? null : s.allocator,
    "attention-block": s.attentionBlock === null ? null : String(s.attentionBlock),
    "double-buffer": s.doubleBuffer ? null : "off",
  };
}

function sameSettings(a: ExampleSettings, b: RunReport["settings"]): boolean {
  return (
    a.example === b.example &&
    a.machine === b.machine &&
    a.allocator === b.allocator &&
    a.attentionBlock === b.attentionBlock &&
    a.doubleBuffer === b.doubleBuffer
  );
}

const CONTROL_LABELS: Record<Control, string> = {
  example: "Example",
  machine: "Machine",
  allocator: "Scratchpad allocator",
  attentionBlock: "Attention block (keys)",
  doubleBuffer: "Double buffering",
};

/** A lesson's live example: settings controls, the embedded playground, a readout, checks. */
class LiveExample {
  readonly root = el("section", {
    className: "lesson-example",
    "data-testid": "lesson-example",
    "aria-label": "Live example",
  });
  private readonly initial: ExampleSettings;
  private settings: ExampleSettings;
  private readonly player = document.createElement("spyre-playground");
  private readonly status = el("p", {
    className: "lesson-status",
    "data-testid": "lesson-status",
    "aria-live": "polite",
    text: "Running the example…",
  });
  private readonly readout = el("table", { className: "lesson-readout", "data-testid": "readout" });
  private readonly cards: { check: LessonCheck; node: HTMLElement; state: HTMLElement }[] = [];
  private readonly inputs = new Map<Control, HTMLInputElement | HTMLSelectElement>();
  private baseline: Metrics | null = null;
  private current: Metrics | null = null;
  private runs = 0;

  constructor(
    private readonly spec: LessonExample,
    private readonly checks: readonly LessonCheck[],
  ) {
    this.initial = { ...spec.settings };
    this.settings = { ...spec.settings };
    if (spec.view) this.player.setAttribute("view", spec.view);
    if (spec.pass) this.player.setAttribute("pass", spec.pass);
    this.player.setAttribute("data-testid", "lesson-player");
    this.player.addEventListener("spyre-run-failed", (ev) => {
      const message = (ev as CustomEvent<{ message: string }>).detail.message;
      this.status.textContent = `The run failed: ${message}`;
      this.root.dataset.state = "failed";
    });
    this.player.addEventListener("spyre-run", (ev) =>
      this.onRun((ev as CustomEvent<Pick<RunReport, "metrics" | "settings">>).detail),
    );
    const form = el("div", {
      className: "lesson-controls",
      role: "group",
      "aria-label": "Settings of the example",
    });
    for (const c of spec.controls) form.append(this.control(c));
    const reset = el("button", {
      type: "button",
      className: "lesson-button",
      "data-testid": "lesson-reset",
      text: "Reset",
      title: "Back to the lesson's settings",
    });
    reset.addEventListener("click", () => {
      this.settings = { ...this.initial };
      this.syncInputs();
      this.apply();
    });
    form.append(reset);
    this.root.append(form, this.player, this.status, this.readout);
    this.apply();
  }

  /** Renders the readout once the element is in the page (the frame loads from then on). */
  start(): void {
    this.renderReadout();
  }

  private control(c: Control): HTMLElement {
    const id = `lesson-set-${c}`;
    let input: HTMLInputElement | HTMLSelectElement;
    const choose = (options: readonly string[]): HTMLSelectElement =>
      el(
        "select",
        { id, "data-testid": id },
        ...options.map((o) => el("option", { value: o, text: o })),
      );
    switch (c) {
      case "example":
        input = choose([this.spec.settings.example, ...this.spec.choices]);
        break;
      case "machine":
        input = choose(MACHINES);
        break;
      case "allocator":
        input = choose(ALLOCATOR_NAMES);
        break;
      case "attentionBlock":
        input = el("input", {
          id,
          "data-testid": id,
          type: "number",
          min: 1,
          step: 1,
          placeholder: "all keys",
        });
        break;
      case "doubleBuffer":
        input = el("input", { id, "data-testid": id, type: "checkbox" });
        break;
    }
    input.addEventListener("change", () => {
      this.read(c, input);
      this.apply();
    });
    this.inputs.set(c, input);
    this.syncInputs();
    return el(
      "label",
      { className: c === "doubleBuffer" ? "lesson-field check" : "lesson-field", for: id },
      el("span", { text: CONTROL_LABELS[c] }),
      input,
    );
  }

  private read(c: Control, input: HTMLInputElement | HTMLSelectElement): void {
    const s = this.settings;
    if (c === "doubleBuffer") s.doubleBuffer = (input as HTMLInputElement).checked;
    else if (c === "attentionBlock") {
      const n = Number(input.value);
      s.attentionBlock = input.value.trim() !== "" && Number.isInteger(n) && n > 0 ? n : null;
    } else s[c] = input.value;
  }

  private syncInputs(): void {
    for (const [c, input] of this.inputs) {
      if (c === "doubleBuffer") (input as HTMLInputElement).checked = this.settings.doubleBuffer;
      else if (c === "attentionBlock") input.value = String(this.settings.attentionBlock ?? "");
      else input.value = this.settings[c];
    }
  }

  /** Points the embedded playground at the settings (it reruns). */
  private apply(): void {
    for (const [k, v] of Object.entries(attributes(this.settings))) {
      if (v === null) this.player.removeAttribute(k);
      else this.player.setAttribute(k, v);
    }
    this.status.textContent = "Running the example…";
    this.root.dataset.state = "running";
  }

  private onRun(detail: Pick<RunReport, "metrics" | "settings">): void {
    const metrics = detail.metrics as Metrics;
    // A run of the lesson's own settings is the baseline the checks compare with.
    if (this.baseline === null && sameSettings(this.initial, detail.settings)) {
      this.baseline = metrics;
    }
    if (!sameSettings(this.settings, detail.settings)) return; // superseded by a change
    this.current = metrics;
    this.runs++;
    this.status.textContent = `Run ${this.runs} finished: ${formatQuantity("cycles", metrics.cycles)} cycles.`;
    this.root.dataset.state = "ready";
    this.root.dataset.runs = String(this.runs);
    this.renderReadout();
    this.renderChecks();
  }

  /** The quantities the checks read: the baseline and this run. */
  private renderReadout(): void {
    const names = new Set<Quantity>(["cycles", ...this.spec.show]);
    for (const c of this.checks) for (const q of c.quantities) if (isQuantity(q)) names.add(q);
    const head = el(
      "tr",
      {},
      el("th", { scope: "col", text: "quantity" }),
      el("th", { scope: "col", text: "lesson's settings" }),
      el("th", { scope: "col", text: "your run" }),
    );
    const rows = [...names].map((q) =>
      el(
        "tr",
        { "data-quantity": q },
        el("th", { scope: "row" }, el("code", { text: q })),
        el("td", { text: formatQuantity(q, this.baseline?.[q] ?? null) }),
        el("td", { text: formatQuantity(q, this.current?.[q] ?? null) }),
      ),
    );
    this.readout.replaceChildren(
      el("caption", { text: "What the runs measured" }),
      el("thead", {}, head),
      el("tbody", {}, ...rows),
    );
  }

  /** A check's card, placed where its block stands in the prose. */
  checkCard(i: number, check: LessonCheck): HTMLElement {
    // The verdict is a live region: a screen reader hears it change after each run.
    const state = el("span", {
      className: "lesson-check-state",
      role: "status",
      text: "waiting for a run",
    });
    const node = el(
      "div",
      {
        className: "lesson-check",
        "data-testid": `check-${i}`,
        role: "group",
        "aria-label": `Check ${i + 1}: ${check.says}`,
      },
      el("p", {}, el("strong", { text: "Try this: " }), check.task),
      el(
        "p",
        {},
        el("strong", { text: "Check: " }),
        check.says,
        " ",
        el("code", { text: check.source }),
      ),
      state,
    );
    node.dataset.status = "waiting";
    this.cards.push({ check, node, state });
    return node;
  }

  private renderChecks(): void {
    const cur = this.current;
    if (!cur) return;
    for (const { check, node, state } of this.cards) {
      if (usesBaseline(check.expr) && this.baseline === null) {
        node.dataset.status = "waiting";
        state.textContent = "waiting for the lesson's own run (press Reset)";
        continue;
      }
      const v = evaluate(check.expr, cur, this.baseline);
      node.dataset.status = v.passed ? "passed" : "failed";
      state.textContent = v.passed
        ? "✓ Done: your run does this."
        : v.problem
          ? `Not decided: ${v.problem}.`
          : "Not yet: your latest run does not do this.";
    }
  }
}

window.addEventListener("hashchange", route);
route();
