// The Options menu in the header: every compiler and simulator flag of `spyre compile` and
// `spyre run` that changes a run, as controls. A change reruns what is loaded; the settings
// go into the URL state; the equivalent command-line flags are shown underneath.

import { byId, el } from "../dom";
import {
  ALLOCATORS,
  ALLREDUCE,
  type Allocator,
  type Allreduce,
  DEFAULT_SETTINGS,
  MAX_SYSTEM_TEXT,
  SYSTEM_PRESETS,
  systemLabel,
  TP_DEGREES,
  formatPlaces,
  MAX_ATTENTION_BLOCK,
  MAX_ALIGN,
  MAX_SEED,
  PADDING_RULES,
  type PaddingRule,
  parsePlaces,
  PUBLIC_PADDING,
  type RunSettings,
  settingsFlags,
} from "../runSettings";

const ALIGN_LABELS: Record<string, string> = {
  "opt-query-align": "Query pad",
  "opt-kv-align": "KV alignment",
  "opt-decode-align": "Decode alignment",
};

/** A padding rule's input: empty means the public value, shown as the placeholder. */
function alignInput(id: string, publicValue: number): HTMLInputElement {
  return el("input", {
    "data-testid": id,
    id,
    type: "number",
    min: 1,
    max: MAX_ALIGN,
    step: 1,
    placeholder: String(publicValue),
    "aria-label": `${ALIGN_LABELS[id] ?? id} (tokens)`,
  });
}

/** The header's Options menu (a `<details>` holding a small form). */
export class OptionsPanel {
  private readonly root = byId<HTMLDetailsElement>("run-options");
  private readonly summary = byId<HTMLElement>("run-options-summary");
  private readonly allocator = el("select", {
    "data-testid": "opt-allocator",
    id: "opt-allocator",
  });
  private readonly attention = el("input", {
    "data-testid": "opt-attention-block",
    id: "opt-attention-block",
    type: "number",
    min: 1,
    max: MAX_ATTENTION_BLOCK,
    step: 1,
    placeholder: "all keys",
  });
  private readonly doubleBuffer = el("input", {
    "data-testid": "opt-double-buffer",
    id: "opt-double-buffer",
    type: "checkbox",
  });
  private readonly fuse = el("input", {
    "data-testid": "opt-fuse",
    id: "opt-fuse",
    type: "checkbox",
  });
  private readonly timingOnly = el("input", {
    "data-testid": "opt-timing-only",
    id: "opt-timing-only",
    type: "checkbox",
  });
  private readonly seed = el("input", {
    "data-testid": "opt-seed",
    id: "opt-seed",
    type: "number",
    min: 0,
    step: 1,
    placeholder: "0",
  });
  private readonly outOfBounds = el("select", {
    "data-testid": "opt-out-of-bounds",
    id: "opt-out-of-bounds",
  });
  private readonly places = el("input", {
    "data-testid": "opt-places",
    id: "opt-places",
    type: "text",
    placeholder: "NAME=ADDR, …",
    spellcheck: "false",
  });
  private readonly tp = el("select", {
    "data-testid": "opt-tp",
    id: "opt-tp",
    "aria-label": "Tensor-parallel degree (cards)",
  });
  private readonly system = el("select", {
    "data-testid": "opt-system",
    id: "opt-system",
    "aria-label": "System of cards",
  });
  private readonly systemFile = el("input", {
    "data-testid": "opt-system-file",
    id: "opt-system-file",
    type: "file",
    accept: ".json,application/json",
    "aria-label": "System description file (JSON)",
  });
  private readonly allreduce = el("select", {
    "data-testid": "opt-allreduce",
    id: "opt-allreduce",
    "aria-label": "All-reduce algorithm",
  });
  /** The padding rules' alignments, empty at the public values. */
  private readonly padding: Record<PaddingRule, HTMLInputElement> = {
    queryAlign: alignInput("opt-query-align", PUBLIC_PADDING.queryAlign),
    kvAlign: alignInput("opt-kv-align", PUBLIC_PADDING.kvAlign),
    decodeAlign: alignInput("opt-decode-align", PUBLIC_PADDING.decodeAlign),
  };
  private readonly clearCache = el("button", {
    type: "button",
    "data-testid": "opt-clear-cache",
    id: "opt-clear-cache",
    text: "Clear compile cache",
    "aria-label": "Clear the compile cache (artifacts kept in this browser)",
  });
  private readonly cacheNote = el("span", {
    className: "options-note",
    "data-testid": "opt-cache-note",
    role: "status",
  });
  /** A system description read from a file, kept while the select shows it. */
  private systemText: string | null = null;
  private readonly problem = el("div", { className: "options-problem", role: "alert" });
  private readonly flags = el("code", { "data-testid": "opt-flags", className: "options-flags" });
  private current: RunSettings = { ...DEFAULT_SETTINGS };
  /** The loaded example is too large to run with numbers: timing-only is forced. */
  private forcedTimingOnly = false;

  constructor(
    private readonly onChange: (s: RunSettings) => void,
    onClearCache: () => Promise<string> = async () => "",
  ) {
    this.allocator.append(...ALLOCATORS.map((a) => el("option", { value: a, text: a })));
    this.tp.append(
      ...TP_DEGREES.map((n) =>
        el("option", { value: String(n), text: n === 1 ? "1 (one card)" : `${n} cards` }),
      ),
    );
    this.allreduce.append(
      el("option", { value: "auto", text: "auto (cost estimate)" }),
      ...ALLREDUCE.map((a) => el("option", { value: a, text: a })),
    );
    this.fillSystems();
    this.outOfBounds.append(
      el("option", { value: "error", text: "error" }),
      el("option", { value: "mask", text: "mask (read 0, drop stores)" }),
    );
    const row = (label: string, control: HTMLElement, title: string, forId: string): HTMLElement =>
      el(
        "div",
        { className: "options-row", title },
        el("label", { for: forId, text: label }),
        control,
      );
    const form = byId("run-options-form");
    form.append(
      el("div", { className: "options-heading", text: "Compiler (model graphs)" }),
      row("Allocator", this.allocator, "Scratchpad allocator (--allocator)", "opt-allocator"),
      row(
        "Attention block",
        this.attention,
        "Decompose attention as an online-softmax loop over blocks of this many keys; empty: one softmax over all keys (--attention-block)",
        "opt-attention-block",
      ),
      row(
        "Double buffering",
        this.doubleBuffer,
        "The next block loads while this one computes; off: every time loop is single-buffered (--no-double-buffer)",
        "opt-double-buffer",
      ),
      row(
        "Fusion",
        this.fuse,
        "Runs of elementwise ops on the same slices become one kernel; off: one kernel per device op (--no-fuse)",
        "opt-fuse",
      ),
      el("div", { className: "options-heading", text: "Padding rules (paged attention)" }),
      row(
        "Query pad",
        this.padding.queryAlign,
        "Queries padded to a multiple of this many tokens; the cost is reported, sequences stay ragged (public: 32)",
        "opt-query-align",
      ),
      row(
        "KV alignment",
        this.padding.kvAlign,
        "KV length aligned to a multiple of this many tokens (public: 256)",
        "opt-kv-align",
      ),
      row(
        "Decode alignment",
        this.padding.decodeAlign,
        "Query and KV alignment of decode-only batches (public: 1)",
        "opt-decode-align",
      ),
      el("div", { className: "options-heading", text: "Several cards (model graphs)" }),
      row(
        "Tensor parallel",
        this.tp,
        "Also run the graph Megatron-style over this many cards: collectives over the card links and the host runtime (--tp)",
        "opt-tp",
      ),
      row(
        "System",
        this.system,
        "The cards and their links: a preset, or a system description file; default: the TP degree's cards of the machine behind a PCIe switch (--system)",
        "opt-system",
      ),
      row(
        "System file",
        this.systemFile,
        "Read a system description (JSON, as crates/sim/systems/*.json)",
        "opt-system-file",
      ),
      row(
        "All-reduce",
        this.allreduce,
        "Ring or tree, by the stated cost estimate unless forced (--allreduce)",
        "opt-allreduce",
      ),
      el("div", { className: "options-heading", text: "Simulator" }),
      row(
        "Timing only",
        this.timingOnly,
        "No numbers: weights are never materialised and outputs are not checked (--timing-only)",
        "opt-timing-only",
      ),
      row("Seed", this.seed, "Seed of the random inputs (--seed)", "opt-seed"),
      el("div", { className: "options-heading", text: "KTIR modules" }),
      row(
        "Out of bounds",
        this.outOfBounds,
        "What a point of an access tile outside its view is (--out-of-bounds)",
        "opt-out-of-bounds",
      ),
      row(
        "Places",
        this.places,
        "Place buffer NAME at DRAM element address ADDR (--place NAME=ADDR)",
        "opt-places",
      ),
      el("div", { className: "options-heading", text: "Compile cache" }),
      el("div", { className: "options-row" }, this.clearCache, this.cacheNote),
      this.problem,
      el("div", { className: "options-heading", text: "As command-line flags" }),
      this.flags,
    );
    this.problem.hidden = true;
    for (const c of [
      this.allocator,
      this.doubleBuffer,
      this.fuse,
      this.timingOnly,
      this.outOfBounds,
      this.tp,
      this.system,
      this.allreduce,
    ])
      c.addEventListener("change", () => this.changed());
    this.systemFile.addEventListener("change", () => void this.readSystemFile());
    for (const c of [this.attention, this.seed, this.places, ...Object.values(this.padding)])
      c.addEventListener("change", () => this.changed());
    this.clearCache.addEventListener("click", () => {
      this.clearCache.disabled = true;
      void onClearCache().then((note) => {
        this.cacheNote.textContent = note;
        this.clearCache.disabled = false;
      });
    });
    document.addEventListener("click", (ev) => {
      if (this.root.open && !this.root.contains(ev.target as Node)) this.root.open = false;
    });
    this.root.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape") {
        this.root.open = false;
        this.summary.focus();
      }
    });
    this.set(DEFAULT_SETTINGS);
  }

  get settings(): RunSettings {
    return { ...this.current, places: this.current.places && { ...this.current.places } };
  }

  /** Shows `s` (from a link) without running anything. */
  set(s: RunSettings): void {
    this.current = { ...s };
    this.allocator.value = s.allocator ?? "greedy";
    this.attention.value = s.attentionBlock === null ? "" : String(s.attentionBlock);
    this.doubleBuffer.checked = !s.noDoubleBuffer;
    this.fuse.checked = !s.noFuse;
    this.timingOnly.checked = s.timingOnly || this.forcedTimingOnly;
    this.seed.value = s.seed === null ? "" : String(s.seed);
    this.outOfBounds.value = s.outOfBounds ?? "error";
    this.places.value = formatPlaces(s.places);
    this.tp.value = String(s.tp ?? 1);
    this.systemText = s.system !== null && s.system.startsWith("{") ? s.system : null;
    this.fillSystems();
    this.system.value = this.systemText !== null ? "file" : (s.system ?? "default");
    this.allreduce.value = s.allreduce ?? "auto";
    for (const r of PADDING_RULES) {
      const v = s[r];
      this.padding[r].value = v === null ? "" : String(v);
    }
    this.showTpEnabled();
    this.problem.hidden = true;
    this.showFlags();
  }

  /** Marks timing-only as forced (a gallery model too large to run with numbers). */
  setForcedTimingOnly(forced: boolean): void {
    this.forcedTimingOnly = forced;
    this.timingOnly.disabled = forced;
    this.timingOnly.checked = forced || this.current.timingOnly;
    this.timingOnly.title = forced ? "This example is too large to run with numbers" : "";
  }

  /** The system choices: the default, the presets, and a file once one was read. */
  private fillSystems(): void {
    const options = [
      el("option", { value: "default", text: "default (PCIe switch)" }),
      ...SYSTEM_PRESETS.map((p) => el("option", { value: p, text: p })),
    ];
    if (this.systemText !== null)
      options.push(el("option", { value: "file", text: systemLabel(this.systemText) }));
    this.system.replaceChildren(...options);
  }

  /** The system and all-reduce only mean something with several cards. */
  private showTpEnabled(): void {
    const off = this.tp.value === "1";
    this.system.disabled = off;
    this.systemFile.disabled = off;
    this.allreduce.disabled = off;
  }

  private async readSystemFile(): Promise<void> {
    const f = this.systemFile.files?.[0];
    if (!f) return;
    if (f.size > MAX_SYSTEM_TEXT) {
      this.problem.textContent = `system file: larger than ${MAX_SYSTEM_TEXT} bytes`;
      this.problem.hidden = false;
      return;
    }
    const text = await f.text();
    if (!text.trimStart().startsWith("{")) {
      this.problem.textContent = "system file: not a JSON object";
      this.problem.hidden = false;
      return;
    }
    this.systemText = text;
    this.fillSystems();
    this.system.value = "file";
    this.systemFile.value = "";
    this.changed();
  }

  private showFlags(): void {
    const f = settingsFlags(this.current);
    this.flags.textContent = f.length > 0 ? f.join(" ") : "(the defaults)";
    const n = f.length;
    this.summary.textContent = n > 0 ? `Options (${n})` : "Options";
  }

  private read(): RunSettings | string {
    const a = this.allocator.value as Allocator;
    const block = this.attention.value.trim();
    let attentionBlock: number | null = null;
    if (block !== "") {
      const b = Number(block);
      if (!Number.isInteger(b) || b < 1 || b > MAX_ATTENTION_BLOCK)
        return `attention block: a whole number of keys from 1 to ${MAX_ATTENTION_BLOCK}`;
      attentionBlock = b;
    }
    const seedText = this.seed.value.trim();
    let seed: number | null = null;
    if (seedText !== "") {
      const n = Number(seedText);
      if (!Number.isInteger(n) || n < 0 || n > MAX_SEED)
        return `seed: a whole number from 0 to ${MAX_SEED}`;
      seed = n === 0 ? null : n;
    }
    const places = parsePlaces(this.places.value);
    if (typeof places === "string") return `places: ${places}`;
    const align: Record<PaddingRule, number | null> = {
      queryAlign: null,
      kvAlign: null,
      decodeAlign: null,
    };
    for (const r of PADDING_RULES) {
      const text = this.padding[r].value.trim();
      if (text === "") continue;
      const n = Number(text);
      if (!Number.isInteger(n) || n < 1 || n > MAX_ALIGN)
        return `${this.padding[r].getAttribute("aria-label")}: a whole number of tokens from 1 to ${MAX_ALIGN}`;
      align[r] = n === PUBLIC_PADDING[r] ? null : n;
    }
    return {
      allocator: a === "greedy" ? null : a,
      attentionBlock,
      noDoubleBuffer: !this.doubleBuffer.checked,
      noFuse: !this.fuse.checked,
      timingOnly: this.forcedTimingOnly ? this.current.timingOnly : this.timingOnly.checked,
      seed,
      outOfBounds: this.outOfBounds.value === "mask" ? "mask" : null,
      places,
      tp: this.tp.value === "1" ? null : Number(this.tp.value),
      system:
        this.system.value === "default"
          ? null
          : this.system.value === "file"
            ? this.systemText
            : this.system.value,
      allreduce: this.allreduce.value === "auto" ? null : (this.allreduce.value as Allreduce),
      ...align,
    };
  }

  private changed(): void {
    this.showTpEnabled();
    const s = this.read();
    if (typeof s === "string") {
      this.problem.textContent = s;
      this.problem.hidden = false;
      return;
    }
    this.problem.hidden = true;
    if (JSON.stringify(s) === JSON.stringify(this.current)) return;
    this.current = s;
    this.showFlags();
    this.onChange(this.settings);
  }
}
