// The details box over the ring and the timeline: what a hovered or tapped tile or bar is
// (tensor slice, bytes, route, kernel and KTIR line, time). Hover shows it; a click or tap
// pins it until closed or another one is picked.

import type { TraceEvent } from "../api";
import { el } from "../dom";
import { eventDetails, type DetailsContext } from "../eventDetails";

export class EventBox {
  private readonly box: HTMLDivElement;
  private readonly body: HTMLTableElement;
  private pinnedEvent: TraceEvent | null = null;
  private shownEvent: TraceEvent | null = null;
  private ctx: DetailsContext | null = null;

  /** `host`: the positioned element the box floats in; `open`: show the event's KTIR line. */
  constructor(
    private readonly host: HTMLElement,
    testId: string,
    open: (e: TraceEvent) => void,
  ) {
    this.body = el("table", {});
    const close = el("button", {
      className: "button small",
      type: "button",
      title: "Close",
      "aria-label": "Close the details",
      text: "✕",
    });
    close.addEventListener("click", () => this.hide(true));
    const ktir = el("button", {
      className: "button small",
      type: "button",
      text: "Show in KTIR",
      "data-testid": `${testId}-ktir`,
    });
    ktir.addEventListener("click", () => {
      if (this.shownEvent) open(this.shownEvent);
    });
    this.box = el(
      "div",
      { className: "event-box", "data-testid": testId, role: "status", hidden: true },
      el("div", { className: "event-box-head" }, ktir, close),
      this.body,
    );
    // Pointer input on the box must not reach the canvas under it.
    this.box.addEventListener("pointerdown", (ev) => ev.stopPropagation());
    host.append(this.box);
  }

  setContext(ctx: DetailsContext): void {
    this.ctx = ctx;
    this.hide(true);
  }

  get pinned(): boolean {
    return this.pinnedEvent !== null;
  }

  /** Shows `e` near (x, y) in the host's pixels; `pin` keeps it after the pointer leaves. */
  show(e: TraceEvent, x: number, y: number, pin: boolean): void {
    if (!this.ctx) return;
    if (this.pinnedEvent && !pin) return;
    if (pin) this.pinnedEvent = e;
    if (this.shownEvent !== e) {
      this.shownEvent = e;
      this.body.replaceChildren(
        ...eventDetails(e, this.ctx).map(([k, v]) =>
          el("tr", {}, el("th", { text: k }), el("td", { text: v })),
        ),
      );
    }
    this.box.dataset.pinned = String(this.pinnedEvent !== null);
    this.box.hidden = false;
    // Beside the pointer, kept inside the host.
    const w = this.host.clientWidth;
    const h = this.host.clientHeight;
    const bw = this.box.offsetWidth;
    const bh = this.box.offsetHeight;
    const left = x + 14 + bw > w ? Math.max(0, x - 14 - bw) : x + 14;
    const top = Math.max(0, Math.min(y + 14, h - bh));
    this.box.style.left = `${Math.round(left)}px`;
    this.box.style.top = `${Math.round(top)}px`;
  }

  /** Hides the box unless it is pinned (`force`: even then). */
  hide(force = false): void {
    if (this.pinnedEvent && !force) return;
    this.pinnedEvent = null;
    this.shownEvent = null;
    this.box.hidden = true;
  }
}
