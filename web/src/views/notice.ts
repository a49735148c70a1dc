// The notice line: what the page did on its own, and why (a link it could not read in full, a
// run it stopped). Unlike the error banner it is not cleared by the next successful run.

import { byId } from "../dom";

export class Notice {
  private readonly root = byId<HTMLDivElement>("notice");
  private readonly text = byId<HTMLSpanElement>("notice-text");

  constructor() {
    byId<HTMLButtonElement>("notice-dismiss").addEventListener("click", () => this.clear());
  }

  show(message: string): void {
    this.text.textContent = message;
    this.root.hidden = false;
  }

  clear(): void {
    this.root.hidden = true;
    this.text.textContent = "";
  }
}
