import { describe, expect, it } from "vitest";
import { MAX_SCALE, centreOn, fit, opening, visible, wheelPan, zoomAt } from "./viewport";

describe("graph camera", () => {
  it("zooms about the pointer and clamps the scale", () => {
    const c = zoomAt({ k: 1, tx: 0, ty: 0 }, 2, 100, 50);
    // The world point (100, 50) stays under the pointer.
    expect(100 * c.k + c.tx).toBeCloseTo(100);
    expect(50 * c.k + c.ty).toBeCloseTo(50);
    expect(zoomAt(c, 1000, 0, 0).k).toBe(MAX_SCALE);
  });

  it("fits a graph, and opens a tall one at its top, readable", () => {
    const small = fit({ x: 0, y: 0, w: 200, h: 100 }, 800, 600);
    expect(small.k).toBe(1);
    const tall = { x: 0, y: 0, w: 400, h: 100_000 };
    expect(fit(tall, 800, 600).k).toBeLessThan(0.01);
    const o = opening(tall, 800, 600);
    expect(o.k).toBe(1);
    expect(visible(o, 800, 600).y).toBeLessThan(0);
    const c = centreOn(50, 60, 200, 100, 2);
    const v = visible(c, 200, 100);
    expect(v.x + v.w / 2).toBeCloseTo(50);
    expect(v.y + v.h / 2).toBeCloseTo(60);
  });

  it("pans on a plain wheel until the graph's edge is in view, then lets the page scroll", () => {
    const world = { x: 0, y: 0, w: 400, h: 2000 };
    const c = { k: 1, tx: 16, ty: 16 };
    // Down: the graph moves up.
    const down = wheelPan(c, world, 800, 600, 0, 100);
    expect(down).toEqual({ k: 1, tx: 16, ty: -84 });
    // Up at the top, or sideways when the graph is narrower than the view: nothing to pan.
    expect(wheelPan(c, world, 800, 600, 0, -100)).toBeNull();
    expect(wheelPan(c, world, 800, 600, 50, 0)).toBeNull();
    // Down near the bottom stops with the bottom edge in view.
    const end = wheelPan({ k: 1, tx: 16, ty: -1350 }, world, 800, 600, 0, 500);
    expect(end?.ty).toBe(600 - 16 - 2000);
    expect(wheelPan({ k: 1, tx: 16, ty: 600 - 16 - 2000 }, world, 800, 600, 0, 10)).toBeNull();
  });
});
