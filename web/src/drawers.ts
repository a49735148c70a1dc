// On narrow screens the pass list and the side panel (node, core or run details) are drawers
// that slide over the view; the header's buttons open them, and a tap outside, Esc or the
// button again closes them. On wide screens the buttons are hidden and nothing changes.

import { byId } from "./dom";

export type Drawer = "passes" | "details";

/** Opens and closes the drawers (classes on `.app`; styles.css lays them out). */
export class Drawers {
  private readonly app = byId("app");
  private readonly backdrop = byId("drawer-backdrop");
  private readonly buttons: Record<Drawer, HTMLButtonElement> = {
    passes: byId<HTMLButtonElement>("passes-drawer"),
    details: byId<HTMLButtonElement>("details-drawer"),
  };
  private open: Drawer | null = null;

  constructor() {
    for (const d of ["passes", "details"] as const)
      this.buttons[d].addEventListener("click", () => this.toggle(d));
    this.backdrop.addEventListener("click", () => this.close());
    document.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape" && this.open !== null) this.close();
    });
  }

  /** The drawer that is open, if any. */
  get current(): Drawer | null {
    return this.open;
  }

  toggle(d: Drawer): void {
    this.set(this.open === d ? null : d);
  }

  close(): void {
    this.set(null);
  }

  private set(d: Drawer | null): void {
    this.open = d;
    this.app.classList.toggle("passes-open", d === "passes");
    this.app.classList.toggle("details-open", d === "details");
    this.backdrop.hidden = d === null;
    for (const k of ["passes", "details"] as const)
      this.buttons[k].setAttribute("aria-expanded", String(d === k));
  }
}
