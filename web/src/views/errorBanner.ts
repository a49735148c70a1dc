// The error banner: every failure ends up here as readable text, never a blank page.

import { byId } from "../dom";

export class ErrorBanner {
  private readonly root = byId<HTMLDivElement>("error-banner");
  private readonly message = byId<HTMLPreElement>("error-message");

  constructor() {
    byId<HTMLButtonElement>("error-dismiss").addEventListener("click", () => this.clear());
  }

  /** Shows a failure; `at` ("line 3, column 7") is shown first when the failure says where. */
  show(context: string, message: string, at = ""): void {
    const text = at && !message.includes(at) ? `${at}: ${message}` : message;
    this.message.textContent = context ? `${context}: ${text}` : text;
    this.root.hidden = false;
  }

  clear(): void {
    this.root.hidden = true;
    this.message.textContent = "";
  }

  get visible(): boolean {
    return !this.root.hidden;
  }
}
