import { describe, expect, it } from "vitest";
import { clockShortcuts } from "../transport";
import { EMPTY_STATE, formatUrlState, PAGE_FIELDS, parseUrlState } from "../urlState";
import { helpRows, pageShortcuts } from "./help";
import { createViews, isView, TABS, VIEWS } from "./registry";
import type { Clock, Shortcut } from "./view";

const idleClock: Clock = {
  time: 0,
  isPlaying: false,
  totalCycles: 0,
  setTime: () => {},
  setPlaying: () => {},
  stepSpeed: () => {},
};

function allShortcuts(): Shortcut[] {
  return [
    ...clockShortcuts(idleClock, () => true),
    ...VIEWS.flatMap((v) => v.shortcuts ?? []),
    ...pageShortcuts({ share: () => {}, toggleTheme: () => {}, toggleHelp: () => {} }),
  ];
}

describe("view registry", () => {
  it("builds without a DOM", () => {
    expect(createViews().map((v) => v.id)).toEqual(VIEWS.map((v) => v.id));
  });

  it("has unique ids", () => {
    const ids = VIEWS.map((v) => v.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^[a-z][a-z0-9-]*$/);
  });

  it("keeps the tabs old links name, in order, on keys 1 to 6", () => {
    const old = ["graph", "passes", "ir", "ring", "timeline", "cores"];
    expect(TABS.slice(0, old.length).map((t) => t.id)).toEqual(old);
    expect(TABS.slice(0, old.length).map((t) => t.key)).toEqual(["1", "2", "3", "4", "5", "6"]);
    expect(isView("timeline")).toBe(true);
    expect(isView("results")).toBe(false); // a fixed pane, not a tab
    expect(isView("bogus")).toBe(false);
  });

  it("gives every key one meaning", () => {
    const keys = [...TABS.map((t) => t.key ?? ""), ...allShortcuts().flatMap((s) => s.keys)];
    const dup = keys.filter((k, i) => keys.indexOf(k) !== i);
    expect(dup).toEqual([]);
    expect(keys).not.toContain("Escape"); // handled by the page before any shortcut
  });

  it("lists every labelled shortcut in the help panel", () => {
    const rows = helpRows(TABS, allShortcuts());
    expect(rows[0]?.[0]).toBe(`1 – ${TABS[TABS.length - 1]?.key}`);
    expect(rows[0]?.[1]).toMatch(/^Graph, Passes, IR, Ring, Timeline, Cores\b/);
    const labels = rows.map(([k]) => k);
    for (const k of ["↑ / ↓", "Space", ", / .", "[ / ]", "+ / − / 0", "← / →", "e", "/", "?"])
      expect(labels).toContain(k);
    expect(new Set(labels).size).toBe(labels.length);
  });

  it("keeps URL fields unique across the page and the views", () => {
    const fields = [...PAGE_FIELDS, "v", "s"];
    for (const v of VIEWS) {
      if (!v.url) continue;
      const own = Object.keys(v.url.empty);
      expect(Object.keys(v.url.sample).sort()).toEqual([...own].sort());
      for (const f of own) expect(fields).not.toContain(f);
      fields.push(...own);
    }
  });

  for (const v of VIEWS) {
    if (!v.url) continue;
    const part = v.url;
    it(`round-trips the ${v.id} view's URL part`, async () => {
      expect(part.sample).not.toEqual(part.empty);
      expect(part.decode(part.encode(part.sample))).toEqual(part.sample);
      expect(part.decode({})).toEqual(part.empty);
      // Through the versioned, compressed URL, beside the page's fields.
      const state = { ...EMPTY_STATE, example: "x", view: v.key ? v.id : null, ...part.sample };
      const back = await parseUrlState(await formatUrlState(state));
      expect(back).toEqual(state);
      expect(part.decode(back)).toEqual(part.sample);
    });
  }
});
