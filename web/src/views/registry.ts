// Every view of the page, in tab order. The page builds its tabs, panels, keyboard shortcuts,
// help panel and URL state from this list and from nothing else.
//
// Adding a view:
//   1. Write web/src/views/NAME.ts exporting a class that implements `View` (view.ts):
//      - `id` (also the `view=` URL value and the section id `view-<id>`), `title` (tab
//        label) and `key` (the digit that shows it; leave it out for a fixed pane, which is
//        mounted into the element `#<id>`);
//      - `mount(container, ctx)` builds its DOM inside `container` (an empty
//        <section class="view"> the page creates) and keeps `ctx` to report clicks;
//      - `update(state, changed)` renders the parts of the page state named in `changed`;
//      - optional `shortcuts` (keys, help text, handler), `usesClock` (time runs and Space
//        plays while it is shown) and `url` (its own fields in the URL state: decode, encode,
//        read, apply, and a `sample` the registry test round-trips).
//      The constructor must not touch the DOM: this list is unit-tested without one.
//   2. Add it to `createViews` below (its import and one line).
//   3. Optionally, its styles in web/src/styles.css.
// registry.test.ts then checks that ids, keys and URL fields stay unique and that the view's
// URL part round-trips through the versioned URL format.

import { CompareTab } from "./compare";
import { CoresTab } from "./cores";
import { GraphTab } from "./graph";
import { IrTab } from "./ir";
import { PassesTab } from "./passes";
import { ResultsPane } from "./results";
import { RingTab } from "./ring";
import { RooflineTab } from "./roofline";
import { RunInputsTab } from "./runInputs";
import { ServingTab } from "./serving";
import { SystemTab } from "./system";
import { TimelineTab } from "./timeline";
import type { View } from "./view";

/** A fresh set of views (one per page). */
export function createViews(): View[] {
  return [
    new GraphTab(),
    new PassesTab(),
    new IrTab(),
    new RingTab(),
    new TimelineTab(),
    new CoresTab(),
    new RooflineTab(),
    new RunInputsTab(),
    new SystemTab(),
    new ServingTab(),
    new CompareTab(),
    new ResultsPane(),
  ];
}

/** The page's views. */
export const VIEWS: readonly View[] = createViews();

/** The views shown as tabs (those with a key), in tab order. */
export const TABS: readonly View[] = VIEWS.filter((v) => v.key !== undefined);

/** Whether `v` is the id of a tab (the `view=` URL value). */
export function isView(v: unknown): v is string {
  return typeof v === "string" && TABS.some((t) => t.id === v);
}
