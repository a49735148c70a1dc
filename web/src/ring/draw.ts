// Draws one frame of the ring on a 2D canvas context. Stateless: scene + time in, pixels out.

import { formatInt } from "../dom";
import type { HeatPaint } from "./heat";
import {
  coreActivityAt,
  forEachTile,
  pointAt,
  positionAngle,
  stopPositions,
  tilesAt,
  type Circle,
  type RingScene,
  type Tile,
} from "./model";

export interface Palette {
  bg: string;
  link: string;
  core: string;
  coreBorder: string;
  memory: string;
  memoryBorder: string;
  label: string;
  muted: string;
  load: string;
  store: string;
  move: string;
  pt: string;
  sfp: string;
  font: string;
  accent: string;
}

/** What the page has selected, drawn on top of the frame. */
export interface RingMarks {
  /** Selected core id. */
  core: number | null;
  /** Selected KTIR lines (inclusive): tiles from them are drawn highlighted. */
  lines: LineRange | null;
  /** The cores' colours by busy fraction over the whole run (absent or null: off). */
  heat?: HeatPaint | null;
}

export interface LineRange {
  from: number;
  to: number;
}

export function inRange(line: number, r: LineRange | null): boolean {
  return r !== null && line >= r.from && line <= r.to;
}

export const NO_MARKS: RingMarks = { core: null, lines: null };

/** Reads the palette from the page's CSS variables (so themes apply to the canvas). */
export function readPalette(root: Element): Palette {
  const cs = getComputedStyle(root);
  const v = (name: string, fallback: string): string =>
    cs.getPropertyValue(name).trim() || fallback;
  return {
    bg: v("--ring-bg", "#16181c"),
    link: v("--ring-link", "#3a414d"),
    core: v("--ring-core", "#262b33"),
    coreBorder: v("--ring-core-border", "#56606f"),
    memory: v("--ring-memory", "#3d3322"),
    memoryBorder: v("--ring-memory-border", "#c49a45"),
    label: v("--ring-label", "#c9ced6"),
    muted: v("--fg-muted", "#8b929e"),
    load: v("--ring-load", "#5aa9ff"),
    store: v("--ring-store", "#ff9f43"),
    move: v("--ring-move", "#4fd18b"),
    pt: v("--ring-pt", "#b57bff"),
    sfp: v("--ring-sfp", "#2ed3c6"),
    font: 'ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace',
    accent: v("--accent", "#6aa7ff"),
  };
}

export interface RingLayout {
  circle: Circle;
  stopRadius: number;
  /** Distance of the two traffic lanes from the ring radius. */
  laneOffset: number;
  tileSize: number;
}

/** Fits the ring in a w x h box (CSS pixels). */
export function layoutRing(width: number, height: number, stopCount: number): RingLayout {
  const n = Math.max(1, stopCount);
  const half = Math.min(width, height) / 2;
  // Room outside the ring for the outer lane and the memory stops' labels:
  // stopRadius + lane gap + label, with stopRadius itself set by the stop spacing.
  const stopFor = (r: number): number => Math.max(4, Math.min(14, ((2 * Math.PI * r) / n) * 0.34));
  let r = Math.max(20, half - 40);
  for (let i = 0; i < 3; i++) r = Math.max(20, half - (2 * stopFor(r) + 6 + 22));
  const stopRadius = stopFor(r);
  return {
    circle: { cx: width / 2, cy: height / 2, r },
    stopRadius,
    laneOffset: stopRadius + 6,
    tileSize: Math.max(3, Math.min(7, stopRadius * 0.5)),
  };
}

export function drawRing(
  ctx: CanvasRenderingContext2D,
  width: number,
  height: number,
  scene: RingScene | null,
  t: number,
  pal: Palette,
  marks: RingMarks = NO_MARKS,
): void {
  ctx.save();
  ctx.fillStyle = pal.bg;
  ctx.fillRect(0, 0, width, height);
  if (!scene || scene.stops.length === 0) {
    ctx.fillStyle = pal.muted;
    ctx.font = `12px ${pal.font}`;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    ctx.fillText(scene ? "machine has no ring stops" : "no run", width / 2, height / 2);
    ctx.restore();
    return;
  }

  const n = scene.stops.length;
  const lay = layoutRing(width, height, n);
  const { circle, stopRadius: sr } = lay;
  const pos = stopPositions(n, circle);

  // Lanes: clockwise traffic outside the ring, counter-clockwise inside.
  ctx.strokeStyle = pal.link;
  ctx.globalAlpha = 0.45;
  ctx.lineWidth = 1;
  ctx.setLineDash([2, 4]);
  for (const off of [lay.laneOffset, -lay.laneOffset]) {
    ctx.beginPath();
    ctx.arc(circle.cx, circle.cy, circle.r + off, 0, 2 * Math.PI);
    ctx.stroke();
  }
  ctx.setLineDash([]);
  ctx.globalAlpha = 1;

  // Links between neighbouring stops.
  ctx.strokeStyle = pal.link;
  ctx.lineWidth = Math.max(2, sr * 0.3);
  ctx.beginPath();
  for (let i = 0; i < n; i++) {
    const a = pos[i]!;
    const b = pos[(i + 1) % n]!;
    ctx.moveTo(a.x, a.y);
    ctx.lineTo(b.x, b.y);
  }
  ctx.stroke();

  // Core activity (glow) at t.
  const activity = coreActivityAt(scene.compute, scene.coreCount, t);
  let ptBusy = 0;
  let sfpBusy = 0;
  for (const a of activity) {
    if (a.pt) ptBusy++;
    if (a.sfp) sfpBusy++;
  }

  // Stops. A font is set only when it changes: setting one parses it, each time.
  const memoryFont = `600 ${Math.max(9, Math.round(sr * 0.8))}px ${pal.font}`;
  const coreFont = `${Math.max(8, Math.round(sr * 0.85))}px ${pal.font}`;
  let font = "";
  const setFont = (f: string): void => {
    if (f !== font) ctx.font = font = f;
  };
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  for (let i = 0; i < n; i++) {
    const s = scene.stops[i]!;
    const p = pos[i]!;
    if (s.kind === "memory") {
      const half = sr * 1.15;
      ctx.fillStyle = pal.memory;
      ctx.strokeStyle = pal.memoryBorder;
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      ctx.roundRect(p.x - half, p.y - half, half * 2, half * 2, 3);
      ctx.fill();
      ctx.stroke();
      // Label outside the ring, so it never hides traffic.
      const lp = pointAt(i, n, circle, lay.laneOffset + sr + 8);
      ctx.fillStyle = pal.memoryBorder;
      setFont(memoryFont);
      ctx.fillText(s.label || `mem${s.index}`, lp.x, lp.y);
      continue;
    }
    const a = activity[s.index];
    if (a && (a.pt || a.sfp)) {
      const glow = a.pt ? pal.pt : pal.sfp;
      // A soft halo without shadowBlur (which is slow on software rasterisers).
      ctx.fillStyle = glow;
      ctx.globalAlpha = 0.22;
      ctx.beginPath();
      ctx.arc(p.x, p.y, sr + 5, 0, 2 * Math.PI);
      ctx.fill();
      ctx.globalAlpha = 0.45;
      ctx.beginPath();
      ctx.arc(p.x, p.y, sr + 2.5, 0, 2 * Math.PI);
      ctx.fill();
      ctx.globalAlpha = 1;
    }
    ctx.fillStyle = marks.heat?.fill[s.index] ?? pal.core;
    ctx.strokeStyle = a?.pt ? pal.pt : a?.sfp ? pal.sfp : pal.coreBorder;
    ctx.lineWidth = a && (a.pt || a.sfp) ? 2 : 1;
    ctx.beginPath();
    ctx.arc(p.x, p.y, sr, 0, 2 * Math.PI);
    ctx.fill();
    ctx.stroke();
    if (a?.pt && a.sfp) {
      ctx.strokeStyle = pal.sfp;
      ctx.beginPath();
      ctx.arc(p.x, p.y, sr - 2.5, 0, 2 * Math.PI);
      ctx.stroke();
    }
    if (marks.core === s.index) {
      ctx.strokeStyle = pal.accent;
      ctx.lineWidth = 2.5;
      ctx.beginPath();
      ctx.arc(p.x, p.y, sr + 4, 0, 2 * Math.PI);
      ctx.stroke();
    }
    ctx.fillStyle = marks.heat?.text[s.index] ?? pal.label;
    setFont(coreFont);
    ctx.fillText(String(s.index), p.x, p.y + 0.5);
  }

  // Tiles in flight, batched by colour (one path per kind), from one walk that builds no
  // object per tile: a frame draws thousands.
  const colour = [pal.load, pal.store, pal.move];
  const half = lay.tileSize / 2;
  const bins = tileBins(scene.transfers.length);
  bins.count.fill(0);
  // Tiles snap to whole pixels, and a tile is skipped where one of its kind is already drawn
  // at the same pixel this frame: thousands of tiles share a few thousand pixels of lane, and
  // rasterising the same square again is what drops frames.
  const seen = pixelStamps(Math.ceil(width), Math.ceil(height));
  const stride = Math.ceil(width);
  let inFlight = 0;
  let linked = 0;
  const { cx: ccx, cy: ccy } = circle;
  forEachTile(scene.transfers, scene.stops, t, (p, direction, kind, _index, line) => {
    const a = positionAngle(p, n);
    const r = circle.r + (direction < 0 ? -lay.laneOffset : lay.laneOffset);
    const x = Math.round(ccx + r * Math.cos(a) - half);
    const y = Math.round(ccy + r * Math.sin(a) - half);
    inFlight++;
    if (marks.lines !== null && inRange(line, marks.lines)) {
      bins.linked[linked * 2] = x + half;
      bins.linked[linked * 2 + 1] = y + half;
      linked++;
    }
    if (x < 0 || y < 0 || x >= stride || y >= seen.height) return;
    const stamp = seen.frame * 3 + kind;
    const at = y * stride + x;
    if (seen.stamps[at] === stamp) return;
    seen.stamps[at] = stamp;
    const k = (bins.count[kind] as number) * 2;
    const xy = bins.xy[kind] as Float32Array;
    xy[k] = x;
    xy[k + 1] = y;
    bins.count[kind] = (bins.count[kind] as number) + 1;
  });
  for (let kind = 0; kind < 3; kind++) {
    const m = bins.count[kind] as number;
    if (m === 0) continue;
    const xy = bins.xy[kind] as Float32Array;
    ctx.fillStyle = colour[kind] as string;
    ctx.beginPath();
    for (let k = 0; k < 2 * m; k += 2)
      ctx.rect(xy[k] as number, xy[k + 1] as number, lay.tileSize, lay.tileSize);
    ctx.fill();
  }
  // Tiles from the selected KTIR line, on top and larger.
  if (marks.lines !== null) {
    const big = lay.tileSize * 1.8;
    ctx.fillStyle = pal.accent;
    ctx.strokeStyle = pal.bg;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (let k = 0; k < 2 * linked; k += 2)
      ctx.rect(
        (bins.linked[k] as number) - big / 2,
        (bins.linked[k + 1] as number) - big / 2,
        big,
        big,
      );
    ctx.fill();
    ctx.stroke();
  }

  // Centre readout.
  const cx = circle.cx;
  const cy = circle.cy;
  const big = Math.max(11, Math.min(18, circle.r * 0.09));
  ctx.fillStyle = pal.label;
  ctx.font = `600 ${big}px ${pal.font}`;
  ctx.fillText(scene.machineName, cx, cy - big * 2.2);
  ctx.font = `${big}px ${pal.font}`;
  ctx.fillText(
    `cycle ${formatInt(Math.floor(t))} / ${formatInt(scene.totalCycles)}`,
    cx,
    cy - big * 0.7,
  );
  ctx.fillStyle = pal.muted;
  ctx.font = `${Math.round(big * 0.75)}px ${pal.font}`;
  ctx.fillText(`${inFlight} transfers in flight`, cx, cy + big * 0.7);
  ctx.fillText(`PT busy ${ptBusy} · SFP busy ${sfpBusy}`, cx, cy + big * 1.7);
  if (marks.lines !== null) {
    const { from, to } = marks.lines;
    ctx.fillStyle = pal.accent;
    const what = from === to ? `line ${from}` : `lines ${from}–${to}`;
    ctx.fillText(`${what}: ${linked} in flight`, cx, cy + big * 2.7);
  }
  ctx.restore();
}

/** The core under a point of the canvas (CSS pixels), or null. */
export function coreAt(
  width: number,
  height: number,
  scene: RingScene | null,
  x: number,
  y: number,
): number | null {
  if (!scene || scene.stops.length === 0) return null;
  const n = scene.stops.length;
  const lay = layoutRing(width, height, n);
  const pos = stopPositions(n, lay.circle);
  let best: number | null = null;
  let bestD = (lay.stopRadius + 6) ** 2;
  scene.stops.forEach((s, i) => {
    if (s.kind !== "core") return;
    const p = pos[i]!;
    const d = (p.x - x) ** 2 + (p.y - y) ** 2;
    if (d <= bestD) {
      bestD = d;
      best = s.index;
    }
  });
  return best;
}

/** The tile in flight at time `t` under a point of the canvas (CSS pixels), or null. */
export function tileAt(
  width: number,
  height: number,
  scene: RingScene | null,
  t: number,
  x: number,
  y: number,
): Tile | null {
  if (!scene || scene.stops.length === 0) return null;
  const n = scene.stops.length;
  const lay = layoutRing(width, height, n);
  // A finger is wider than a tile: accept a few pixels around it.
  let bestD = (lay.tileSize + 6) ** 2;
  let best: Tile | null = null;
  for (const tile of tilesAt(scene.transfers, scene.stops, t)) {
    const off = tile.direction < 0 ? -lay.laneOffset : lay.laneOffset;
    const p = pointAt(tile.pos, n, lay.circle, off);
    const d = (p.x - x) ** 2 + (p.y - y) ** 2;
    if (d <= bestD) {
      bestD = d;
      best = tile;
    }
  }
  return best;
}

/** Tile positions by kind (x, y pairs), reused from frame to frame. */
interface TileBins {
  count: Uint32Array;
  xy: Float32Array[];
  linked: Float32Array;
}

let bins: TileBins | null = null;

/** Bins for up to `n` tiles (grown, never shrunk). */
function tileBins(n: number): TileBins {
  const need = Math.max(64, n) * 2;
  if (!bins || bins.linked.length < need)
    bins = {
      count: new Uint32Array(3),
      xy: [new Float32Array(need), new Float32Array(need), new Float32Array(need)],
      linked: new Float32Array(need),
    };
  return bins;
}

/** One stamp per canvas pixel: which frame and tile kind last drew there. */
interface PixelStamps {
  stamps: Uint32Array;
  height: number;
  frame: number;
}

let stampsCache: PixelStamps | null = null;

/** The pixel stamps for a `width` x `height` canvas, moved on to a new frame. */
function pixelStamps(width: number, height: number): PixelStamps {
  const need = Math.max(1, width * height);
  if (!stampsCache || stampsCache.stamps.length < need || stampsCache.frame >= 0x4000_0000) {
    stampsCache = { stamps: new Uint32Array(need), height, frame: 0 };
  }
  stampsCache.height = height;
  stampsCache.frame++;
  return stampsCache;
}
