// The shortcuts help panel (a modal dialog).

import { byId, el } from "../dom";

export const SHORTCUTS: [string, string][] = [
  ["1 – 6", "Graph, Passes, IR, Ring, Timeline, Cores"],
  ["↑ / ↓", "previous / next pass"],
  ["Space", "play / pause"],
  [", / .", "step time back / forward"],
  ["[ / ]", "slower / faster"],
  ["+ / − / 0", "timeline zoom in / out / fit"],
  ["← / →", "timeline pan (Timeline view)"],
  ["e", "edit KTIR"],
  ["Ctrl+Enter", "run the edited KTIR"],
  ["/", "filter graph nodes"],
  ["s", "copy a link to this session"],
  ["t", "dark / light theme"],
  ["Esc", "cancel a run, close this panel"],
  ["?", "this panel"],
];

export class Help {
  private readonly dialog = byId<HTMLDialogElement>("help");

  constructor() {
    byId<HTMLTableElement>("help-table").replaceChildren(
      ...SHORTCUTS.map(([k, v]) =>
        el("tr", {}, el("td", {}, el("kbd", { text: k })), el("td", { text: v })),
      ),
    );
    byId("help-close").addEventListener("click", () => this.close());
    byId("help-toggle").addEventListener("click", () => this.toggle());
  }

  get open(): boolean {
    return this.dialog.open;
  }

  toggle(): void {
    if (this.dialog.open) this.close();
    else this.dialog.showModal();
  }

  close(): void {
    if (this.dialog.open) this.dialog.close();
  }
}
