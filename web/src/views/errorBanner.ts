// The error banner: every failure ends up here as readable text, never a blank page.

import { byId } from "../dom";

export class ErrorBanner {
  private readonly root = byId<HTMLDivElement>("error-banner");
  private readonly message = byId<HTMLPreElement>("error-message");

  constructor() {
    byId<HTMLButtonElement>("error-dismiss").addEventListener("click", () => this.clear());
  }

  show(context: string, message: string): void {
    this.message.textContent = context ? `${context}: ${message}` : message;
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
