// The shortcuts help panel (a modal dialog). Its rows come from the views' shortcuts, so the
// panel lists exactly the keys the page answers.

import { byId, el } from "../dom";
import type { Shortcut, View } from "./view";

/** What the page's own keys do. */
export interface PageActions {
  share(): void;
  toggleTheme(): void;
  toggleHelp(): void;
}

/** The page's own keys (Esc is handled before any other key, so it only gets a row). */
export function pageShortcuts(a: PageActions): Shortcut[] {
  return [
    {
      keys: ["s"],
      label: "s",
      does: "copy a link to this session",
      run: () => (a.share(), true),
    },
    { keys: ["t"], label: "t", does: "dark / light theme", run: () => (a.toggleTheme(), true) },
    { keys: [], label: "Esc", does: "cancel a run, close this panel", run: () => false },
    { keys: ["?"], label: "?", does: "this panel", run: () => (a.toggleHelp(), true) },
  ];
}

/** The keys that show tabs, and the views' titles: ["1 – 6", "Graph, Passes, …"]. */
export function tabRow(tabs: readonly View[]): [string, string] | null {
  const first = tabs[0]?.key;
  const last = tabs[tabs.length - 1]?.key;
  if (first === undefined || last === undefined) return null;
  return [first === last ? first : `${first} – ${last}`, tabs.map((t) => t.title).join(", ")];
}

/** Help rows: the tab keys, then every listed shortcut in the order given. */
export function helpRows(
  tabs: readonly View[],
  shortcuts: readonly Shortcut[],
): [string, string][] {
  const rows: [string, string][] = [];
  const tab = tabRow(tabs);
  if (tab) rows.push(tab);
  for (const s of shortcuts) if (s.label !== undefined) rows.push([s.label, s.does]);
  return rows;
}

export class Help {
  private readonly dialog = byId<HTMLDialogElement>("help");

  constructor(rows: readonly [string, string][]) {
    byId<HTMLTableElement>("help-table").replaceChildren(
      ...rows.map(([k, v]) =>
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
