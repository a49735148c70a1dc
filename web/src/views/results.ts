// The results line: total cycles, and each output against the reference.

import type { RunInfo, TpRun } from "../api";
import { byId, el, formatInt, formatSci } from "../dom";
import type { Change, PageState, View } from "./view";

/**
 * Simulated wall time for a cycle count, as text (clock in GHz = cycles per ns). The one time
 * format of the page: every view shows a run's time through it ("5.59 ms").
 */
export function formatDuration(cycles: number, clockGhz: number): string {
  if (!(clockGhz > 0)) return "";
  const ns = cycles / clockGhz;
  if (ns < 1e3) return `${formatSci(ns)} ns`;
  if (ns < 1e6) return `${formatSci(ns / 1e3)} µs`;
  return `${formatSci(ns / 1e6)} ms`;
}

/** What an output's check compared: the tolerance that passed, or why none did. */
export interface ToleranceCheck {
  maxAbsError: number;
  maxRelError: number;
  atol: number;
  rtol: number;
  passed: boolean;
  /** Infinities and NaNs in the same places on both sides, counted as matching. */
  specialMatches?: number;
}

/**
 * Says which tolerance decided an output's verdict: "max rel 5.5, max abs 3e-4 ≤ atol 1e-3: ok".
 * An element passes when |ref - sim| <= atol + rtol * |ref|, so a large relative error on tiny
 * values is fine when the absolute error is within atol.
 */
export function toleranceText(o: ToleranceCheck): string {
  const abs = formatSci(o.maxAbsError);
  const rel = formatSci(o.maxRelError);
  const atol = formatSci(o.atol);
  const rtol = formatSci(o.rtol);
  // Infinities and NaNs in the same places on both sides match; say how many there were.
  const special =
    (o.specialMatches ?? 0) > 0 ? ` (${formatInt(o.specialMatches ?? 0)} matching inf/NaN)` : "";
  if (o.passed) {
    if (o.maxAbsError <= o.atol)
      return `max rel ${rel}, max abs ${abs} ≤ atol ${atol}${special}: ok`;
    if (o.maxRelError <= o.rtol)
      return `max abs ${abs}, max rel ${rel} ≤ rtol ${rtol}${special}: ok`;
    return `max abs ${abs}, max rel ${rel}: each element ≤ atol ${atol} + rtol ${rtol}·|ref|${special}: ok`;
  }
  return `max abs ${abs} > atol ${atol}, max rel ${rel} > rtol ${rtol}${special}: off`;
}

/**
 * The results of a tensor-parallel run as short phrases: the numbers against the TP-1
 * reference, the collective share of the modelled cycles, and the host runtime overhead in
 * both launch regimes, saying which is under the roadmap's 5%.
 */
export function tpPhrases(tp: TpRun): { text: string; title: string; testid: string }[] {
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  const out = [
    {
      testid: "tp-cycles",
      text: `TP ${tp.degree} on ${tp.system}: ${formatInt(tp.totalCycles)} cycles${tp.outputsChecked ? `, ${tp.passed ? "matches" : "does not match"} the TP-1 reference` : ""}`,
      title: `${tp.kv}; ${tp.segments.length} segments, ${tp.collectives.length} all-reduces`,
    },
    {
      testid: "tp-collective-share",
      text: `collectives ${formatInt(tp.collectiveCycles)} cycles (${pct(tp.collectiveShare)} of the time)`,
      title: tp.collectives
        .map((c) => `${c.kind} ${c.tensor}: ${c.algorithm}, ${c.reason}; ${c.reductionOrder}`)
        .join("\n"),
    },
  ];
  for (const h of tp.host) {
    const word = h.grouping === "per-block" ? "per block" : "per kernel";
    out.push({
      testid: `tp-overhead-${h.grouping}`,
      text: `runtime overhead, launch ${word}: ${pct(h.overhead)} (${h.launches} launch${h.launches === 1 ? "" : "es"})${h.under5Percent ? ", under the roadmap's 5%" : ", not under 5%"}`,
      title: `${h.note}; end-to-end ${formatInt(h.endToEndCycles)} cycles, device busy ${formatInt(h.deviceBusyCycles)}`,
    });
  }
  return out;
}

export class ResultsView {
  private readonly root = byId<HTMLElement>("results");

  clear(message = "No run yet."): void {
    this.root.removeAttribute("data-passed");
    this.root.replaceChildren(el("span", { className: "muted", text: message }));
  }

  show(run: RunInfo, note = "", tp: TpRun | null = null): void {
    if (!run.outputsChecked) this.root.removeAttribute("data-passed");
    else this.root.dataset.passed = String(run.passed);
    if (run.timingOnly) this.root.removeAttribute("data-passed");
    const parts: Node[] = [
      run.timingOnly
        ? el("span", {
            className: "verdict",
            "data-testid": "run-verdict",
            text: "TIMED",
            title: "timing only: tensors carry shapes, no numbers were computed or checked",
          })
        : !run.outputsChecked
          ? el("span", {
              className: "verdict",
              "data-testid": "run-verdict",
              text: "RAN",
              title: "a KTIR module has no reference to compare with",
            })
          : el("span", {
              className: `verdict ${run.passed ? "pass" : "fail"}`,
              "data-testid": "run-verdict",
              text: run.passed ? "PASS" : "FAIL",
            }),
      el("span", {
        "data-testid": "total-cycles",
        text: `${formatInt(run.totalCycles)} cycles (${formatDuration(run.totalCycles, run.machine.clockGhz)} at ${formatSci(run.machine.clockGhz)} GHz)`,
      }),
    ];
    for (const o of run.outputs) {
      parts.push(
        el(
          "span",
          {
            "data-output": o.name,
            "data-passed": String(o.passed),
            title: `|ref - sim| <= atol + rtol * |ref|, atol = ${o.atol}, rtol = ${o.rtol}`,
          },
          `${o.name}: `,
          el("span", {
            className: `tolerance ${o.passed ? "pass" : "fail"}`,
            "data-testid": "tolerance",
            text: toleranceText(o),
          }),
        ),
      );
    }
    // The user's expected outputs (the Run inputs tab), compared as `spyre run --expected`.
    for (const o of run.expected ?? []) {
      parts.push(
        el(
          "span",
          { "data-expected": o.name, "data-passed": String(o.passed) },
          `${o.name} vs expected: `,
          el("span", {
            className: `tolerance ${o.passed ? "pass" : "fail"}`,
            text: toleranceText(o),
          }),
        ),
      );
    }
    if (run.outputs.length === 0)
      parts.push(
        el("span", {
          className: "muted",
          text: run.timingOnly
            ? "timing only: weights not materialised, numbers not computed"
            : !run.outputsChecked
              ? "no reference: random inputs"
              : "no outputs checked",
        }),
      );
    for (const a of run.assumptions ?? [])
      parts.push(el("span", { className: "muted", text: `assumed: ${a}` }));
    if (run.summary)
      parts.push(el("span", { className: "muted", text: `bottleneck: ${run.summary.bottleneck}` }));
    if (tp)
      for (const p of tpPhrases(tp))
        parts.push(
          el("span", {
            className: "tp-result",
            "data-testid": p.testid,
            text: p.text,
            title: p.title,
          }),
        );
    // A full model has more events than the page can hold: the result carries a window.
    if (run.eventsTotal > run.events.length)
      parts.push(
        el("span", {
          className: "muted",
          "data-testid": "events-window",
          text: `timeline: the first ${formatInt(run.events.length)} of ${formatInt(run.eventsTotal)} events; cycles and reports cover them all`,
        }),
      );
    if (note) parts.push(el("span", { className: "muted", "data-testid": "run-note", text: note }));
    this.root.replaceChildren(...parts);
  }
}

/** The results line under the views (a fixed pane: no tab). */
export class ResultsPane implements View {
  readonly id = "results";
  readonly title = "Results";
  private view: ResultsView | null = null;

  mount(): void {
    this.view = new ResultsView();
  }

  update(s: PageState, changed: ReadonlySet<Change>): void {
    if (this.view && changed.has("run") && s.loaded)
      this.view.show(s.loaded.res.result.run, s.loaded.note, s.loaded.res.result.tp ?? null);
  }
}
