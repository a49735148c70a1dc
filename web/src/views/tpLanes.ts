// The Timeline's lanes for a tensor-parallel run, under the one-card lanes: the host runtime
// (launch calls, copies over the host link, the launched work on the device) in both launch
// regimes, and the card links (each collective's transfers per link direction) beside the
// segments and all-reduces of one card's program. Their time axes are their own: the host
// model's from the input upload, the cards' from the first segment's start.

import type { HostView, TpRun } from "../api";
import { el, formatInt } from "../dom";
import { formatDuration } from "./results";

/** One bar of a lane: where it sits (cycles), its class and its hover text. */
export interface LaneBar {
  start: number;
  end: number;
  kind: string;
  title: string;
}

/** One lane: a label and its bars. */
export interface Lane {
  id: string;
  label: string;
  bars: LaneBar[];
}

/** The host runtime lanes of one launch regime: host calls, host link, device work. */
export function hostLanes(h: HostView): Lane[] {
  const word = h.grouping === "per-block" ? "per block" : "per kernel";
  const lane = (lane: string, label: string, kind: (what: string) => string): Lane => ({
    id: `${lane}-${h.grouping}`,
    label: `${label} · ${word}`,
    bars: h.events
      .filter((e) => e.lane === lane)
      .map((e) => ({ start: e.start, end: e.end, kind: kind(e.what), title: e.what })),
  });
  return [
    lane("host", "host", () => "launch"),
    lane("host-link", "host link", () => "copy"),
    lane("device", "device", (w) => (w.startsWith("all-reduce") ? "collective" : "kernel")),
  ];
}

/** The cards' lanes: the program (segments and all-reduces), then one lane per link direction. */
export function cardLanes(tp: TpRun): Lane[] {
  const program: Lane = {
    id: "cards",
    label: `every card (${tp.degree})`,
    bars: [
      ...tp.segments.map((s, k) => ({
        start: s.start,
        end: s.start + s.cycles,
        kind: "kernel",
        title: `segment ${k}: ${s.nodes} nodes, ${s.kernels} kernels, ${formatInt(s.cycles)} cycles`,
      })),
      ...tp.collectives.map((c) => ({
        start: c.start,
        end: c.start + c.cycles,
        kind: "collective",
        title: `${c.kind} ${c.tensor} (${c.algorithm}): ${formatInt(c.cycles)} cycles; ${c.reason}`,
      })),
    ],
  };
  const byChannel = new Map<string, LaneBar[]>();
  for (const e of tp.linkEvents) {
    const list = byChannel.get(e.channel) ?? [];
    list.push({
      start: e.start,
      end: e.end,
      kind: "link",
      title: `${e.channel}: ${formatInt(e.bytes)} B, cycles ${formatInt(e.start)}–${formatInt(e.end)}`,
    });
    byChannel.set(e.channel, list);
  }
  const links = [...byChannel.keys()].sort().map((ch) => ({
    id: `link-${ch}`,
    label: ch.replace("->", "→"),
    bars: byChannel.get(ch) ?? [],
  }));
  return [program, ...links];
}

function laneRows(lanes: Lane[], total: number, group: string): HTMLElement {
  const span = Math.max(1, total);
  return el(
    "div",
    { className: "tp-lanes", "data-lanes": group },
    ...lanes.map((l) =>
      el(
        "div",
        { className: "tp-lane", "data-lane": l.id, "data-bars": l.bars.length },
        el("span", { className: "tp-lane-label", text: l.label, title: l.label }),
        el(
          "div",
          { className: "tp-track" },
          ...l.bars.map((b) => {
            const left = (100 * Math.max(0, b.start)) / span;
            const width = Math.max(0.15, (100 * (b.end - b.start)) / span);
            return el("span", {
              className: `tp-bar ${b.kind}`,
              title: b.title,
              style: `left:${left.toFixed(3)}%;width:${Math.min(width, 100 - left).toFixed(3)}%`,
            });
          }),
        ),
      ),
    ),
  );
}

/** The strip under the timeline for a tensor-parallel run (or an empty, hidden one). */
export function tpStrip(tp: TpRun | null | undefined, clockGhz: number): HTMLElement {
  if (!tp) return el("div", { className: "tp-strip", hidden: true });
  const hostEnd = Math.max(1, ...tp.host.flatMap((h) => h.events.map((e) => e.end)));
  const hostLaneList = tp.host.flatMap(hostLanes);
  const legend = el(
    "div",
    { className: "legend", "aria-label": "Host and card-link lanes legend" },
    ...[
      ["launch", "host: launch calls (grouping)"],
      ["copy", "host link: copies in and out"],
      ["kernel", "device: kernels / segments"],
      ["collective", "all-reduce"],
      ["link", "card link: collective transfers"],
    ].map(([k, t]) =>
      el("span", { className: "legend-item" }, el("span", { className: `swatch tp-${k}` }), t!),
    ),
  );
  return el(
    "div",
    { className: "tp-strip", "data-testid": "tp-lanes" },
    el(
      "div",
      { className: "tp-title" },
      `Host runtime, TP ${tp.degree} (0 to ${formatDuration(hostEnd, clockGhz)} from the input upload; first block)`,
    ),
    legend,
    laneRows(hostLaneList, hostEnd, "host"),
    el(
      "div",
      { className: "tp-title" },
      `Card links on ${tp.system} (0 to ${formatInt(tp.totalCycles)} cycles of device time)`,
    ),
    laneRows(cardLanes(tp), tp.totalCycles, "cards"),
  );
}
