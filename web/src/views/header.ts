// Header: example picker, file open (button and drag-and-drop), theme toggle, status.

import type { ExampleInfo, NamedBytes } from "../api";
import { byId, el } from "../dom";

export interface HeaderEvents {
  onExample(name: string): void;
  /** A file opened or dropped; `extra`: the files that came with it (external data). */
  onFile(bytes: Uint8Array, fileName: string, extra: NamedBytes[]): void;
  onMachine(name: string): void;
  onFileError(message: string): void;
}

/** Largest file the page reads (the pipeline has its own limits; this keeps the tab alive). */
export const MAX_FILE_BYTES = 32 * 1024 * 1024;

export type Theme = "dark" | "light";

export class Header {
  private readonly picker = byId<HTMLSelectElement>("example-picker");
  private readonly fileInput = byId<HTMLInputElement>("file-input");
  private readonly sourceName = byId<HTMLSpanElement>("source-name");
  private readonly status = byId<HTMLSpanElement>("status");
  private readonly themeButton = byId<HTMLButtonElement>("theme-toggle");
  private readonly machinePicker = byId<HTMLSelectElement>("machine-picker");
  private themeListeners: ((theme: Theme) => void)[] = [];

  constructor(private readonly events: HeaderEvents) {
    this.picker.addEventListener("change", () => {
      if (this.picker.value) events.onExample(this.picker.value);
    });
    this.machinePicker.addEventListener("change", () => {
      if (this.machinePicker.value) events.onMachine(this.machinePicker.value);
    });
    this.fileInput.addEventListener("change", () => {
      const files = [...(this.fileInput.files ?? [])];
      this.fileInput.value = "";
      if (files.length > 0) void this.readFiles(files);
    });
    document.addEventListener("dragover", (ev) => {
      if (ev.dataTransfer?.types.includes("Files")) ev.preventDefault();
    });
    document.addEventListener("drop", (ev) => {
      const files = [...(ev.dataTransfer?.files ?? [])];
      if (files.length === 0) return;
      ev.preventDefault();
      void this.readFiles(files);
    });
    this.themeButton.addEventListener("click", () =>
      this.setTheme(this.theme === "dark" ? "light" : "dark"),
    );
    this.setTheme(initialTheme());
  }

  setExamples(examples: readonly ExampleInfo[], selected: string | null): void {
    this.picker.replaceChildren(
      // Shown (not offered) while the page displays an opened file rather than an example.
      el("option", { value: "", disabled: true, hidden: true, text: "(opened file)" }),
      ...examples.map((ex) =>
        el("option", { value: ex.name, title: ex.description, text: ex.name }),
      ),
    );
    this.picker.disabled = examples.length === 0;
    if (selected !== null) this.picker.value = selected;
  }

  setMachines(names: readonly string[], selected: string): void {
    this.machinePicker.replaceChildren(...names.map((n) => el("option", { value: n, text: n })));
    this.machinePicker.disabled = names.length === 0;
    this.machinePicker.value = selected;
  }

  get machine(): string {
    return this.machinePicker.value || "spyre32";
  }

  setMachine(name: string): void {
    this.machinePicker.value = name;
  }

  /** Shows which source is loaded; for a file that is not an example the picker shows none. */
  setSource(label: string, exampleName: string | null): void {
    this.sourceName.textContent = label;
    this.sourceName.title = label;
    this.picker.value = exampleName ?? "";
  }

  setStatus(text: string): void {
    this.status.textContent = text;
    this.status.title = text;
  }

  get theme(): Theme {
    return document.documentElement.dataset.theme === "light" ? "light" : "dark";
  }

  onThemeChange(fn: (theme: Theme) => void): void {
    this.themeListeners.push(fn);
  }

  setTheme(theme: Theme): void {
    document.documentElement.dataset.theme = theme;
    this.themeButton.textContent = theme === "dark" ? "Light" : "Dark";
    try {
      localStorage.setItem("spyre-playground.theme", theme);
    } catch {
      // storage may be unavailable (private mode, file://); the toggle still works
    }
    for (const fn of this.themeListeners) fn(theme);
  }

  /**
   * Reads files opened or dropped together: the program is the model (.onnx) when there is
   * one, else the first file; the others come with it (an ONNX model's external data).
   */
  private async readFiles(files: File[]): Promise<void> {
    const main = files.find((f) => /\.onnx$/i.test(f.name)) ?? files[0]!;
    const total = files.reduce((n, f) => n + f.size, 0);
    if (total > MAX_FILE_BYTES) {
      const what = files.length > 1 ? `the ${files.length} files come to` : `${main.name} is`;
      this.events.onFileError(
        `${what} ${total} bytes; the playground reads files up to ${MAX_FILE_BYTES} bytes`,
      );
      return;
    }
    try {
      const read = async (f: File): Promise<NamedBytes> => ({
        name: f.name,
        bytes: new Uint8Array(await f.arrayBuffer()),
      });
      const bytes = (await read(main)).bytes;
      const extra = await Promise.all(files.filter((f) => f !== main).map(read));
      this.events.onFile(bytes, main.name, extra);
    } catch (err) {
      this.events.onFileError(`could not read ${main.name}: ${String(err)}`);
    }
  }
}

function initialTheme(): Theme {
  try {
    const saved = localStorage.getItem("spyre-playground.theme");
    if (saved === "dark" || saved === "light") return saved;
  } catch {
    // ignore
  }
  return window.matchMedia?.("(prefers-color-scheme: light)").matches ? "light" : "dark";
}
