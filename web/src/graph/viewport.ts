// The graph view's camera: a scale and an offset mapping layout (world) coordinates to screen
// pixels. Pure, so zoom, pan, fit and the visible area can be tested without a page.

/** A rectangle in world coordinates. */
export interface Rect {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** screen = world * k + (tx, ty). */
export interface Camera {
  k: number;
  tx: number;
  ty: number;
}

/** The zoom range: far enough out for a whole 32-layer model, close enough to read labels. */
export const MIN_SCALE = 0.002;
export const MAX_SCALE = 4;

export function clampScale(k: number): number {
  return Math.min(MAX_SCALE, Math.max(MIN_SCALE, k));
}

/** Zooms by `factor` keeping the world point under screen point (sx, sy) where it is. */
export function zoomAt(c: Camera, factor: number, sx: number, sy: number): Camera {
  const k = clampScale(c.k * factor);
  const wx = (sx - c.tx) / c.k;
  const wy = (sy - c.ty) / c.k;
  return { k, tx: sx - wx * k, ty: sy - wy * k };
}

/** Puts world point (wx, wy) at the centre of a `vw` x `vh` viewport, at scale `k`. */
export function centreOn(wx: number, wy: number, vw: number, vh: number, k: number): Camera {
  const s = clampScale(k);
  return { k: s, tx: vw / 2 - wx * s, ty: vh / 2 - wy * s };
}

/** The whole of `world` in view, with `pad` pixels around it, at most at scale 1. */
export function fit(world: Rect, vw: number, vh: number, pad = 16): Camera {
  const k = clampScale(
    Math.min(1, (vw - 2 * pad) / Math.max(world.w, 1), (vh - 2 * pad) / Math.max(world.h, 1)),
  );
  return centreOn(world.x + world.w / 2, world.y + world.h / 2, vw, vh, k);
}

/**
 * Where a graph opens: fitted when that leaves it readable; otherwise its top, as wide as
 * the viewport allows but no smaller than `minK`.
 */
export function opening(world: Rect, vw: number, vh: number, minK = 0.5, pad = 16): Camera {
  const f = fit(world, vw, vh, pad);
  if (f.k >= minK) return f;
  const k = clampScale(Math.min(1, Math.max(minK, (vw - 2 * pad) / Math.max(world.w, 1))));
  const tx = world.w * k <= vw - 2 * pad ? (vw - world.w * k) / 2 - world.x * k : pad;
  return { k, tx, ty: pad - world.y * k };
}

/** The world rectangle a `vw` x `vh` viewport shows. */
export function visible(c: Camera, vw: number, vh: number): Rect {
  return { x: -c.tx / c.k, y: -c.ty / c.k, w: vw / c.k, h: vh / c.k };
}

/** `r` grown by `f` of its size on every side. */
export function grow(r: Rect, f: number): Rect {
  return { x: r.x - r.w * f, y: r.y - r.h * f, w: r.w * (1 + 2 * f), h: r.h * (1 + 2 * f) };
}

export function contains(outer: Rect, inner: Rect): boolean {
  return (
    inner.x >= outer.x &&
    inner.y >= outer.y &&
    inner.x + inner.w <= outer.x + outer.w &&
    inner.y + inner.h <= outer.y + outer.h
  );
}

export function intersects(a: Rect, b: Rect): boolean {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

/**
 * The camera after a plain wheel of (`dx`, `dy`) pixels pans a `vw` x `vh` view over `world`,
 * stopping where the world's edge (and `pad`) comes into view; null when it cannot move that
 * way, so the wheel scrolls the page instead.
 */
export function wheelPan(
  c: Camera,
  world: Rect,
  vw: number,
  vh: number,
  dx: number,
  dy: number,
  pad = 16,
): Camera | null {
  const axis = (t: number, d: number, lo: number, size: number, v: number): number => {
    // Offsets at which the world's far edge, or its near edge, sits `pad` inside the view.
    const farIn = v - pad - (lo + size) * c.k;
    const nearIn = pad - lo * c.k;
    // Never pulls back a view already past an edge; only stops the wheel there.
    if (d > 0) return Math.max(t - d, Math.min(t, farIn));
    if (d < 0) return Math.min(t - d, Math.max(t, nearIn));
    return t;
  };
  const tx = axis(c.tx, dx, world.x, world.w, vw);
  const ty = axis(c.ty, dy, world.y, world.h, vh);
  return tx === c.tx && ty === c.ty ? null : { k: c.k, tx, ty };
}
