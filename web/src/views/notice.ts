// The notice line: what the page did on its own, and why (a link it could not read in full, a
// run it stopped). Unlike the error banner it is not cleared by the next successful run.

import { byId, el } from "../dom";

/** A button the notice offers with its message ("Download session file"). */
export interface NoticeAction {
  label: string;
  run(): void;
}

export class Notice {
  private readonly root = byId<HTMLDivElement>("notice");
  private readonly text = byId<HTMLSpanElement>("notice-text");

  constructor() {
    byId<HTMLButtonElement>("notice-dismiss").addEventListener("click", () => this.clear());
  }

  private action: HTMLButtonElement | null = null;

  show(message: string, action?: NoticeAction): void {
    this.text.textContent = message;
    this.action?.remove();
    this.action = null;
    if (action) {
      const b = el("button", {
        className: "button small",
        type: "button",
        "data-testid": "notice-action",
        text: action.label,
      });
      b.addEventListener("click", () => action.run());
      this.text.after(b);
      this.action = b;
    }
    this.root.hidden = false;
  }

  clear(): void {
    this.root.hidden = true;
    this.text.textContent = "";
    this.action?.remove();
    this.action = null;
  }
}
