// Builds long lists of DOM a slice at a time, giving the browser back its thread between
// slices: a full model's views list thousands of ops, and built in one go they froze the
// page for seconds.

/** Time spent building per slice (ms): well under a frame. */
const SLICE_MS = 12;

/** Runs `fn` at the next frame (soon, without frames). */
function nextFrame(fn: () => void): void {
  if (typeof requestAnimationFrame === "function") requestAnimationFrame(() => fn());
  else setTimeout(fn, 0);
}

/**
 * Whether `el` is in a hidden view (a panel with the `hidden` attribute). Read from the
 * attributes, not from the layout: asking the layout before the frame's other slices would
 * lay the page out twice in one frame.
 */
function hidden(el: Element): boolean {
  return el.closest("[hidden]") !== null;
}

/** A list built in slices; a new `render` stops the one before it. */
export class ChunkedList {
  private generation = 0;

  /**
   * Fills `container` with `make(item, i)` for each item, a slice at a time. `note`, when
   * given, is kept last in the container while items remain, its text saying how far the
   * building is; `done` runs once every item is in.
   */
  render<T>(
    container: HTMLElement,
    items: readonly T[],
    make: (item: T, index: number) => Node,
    note?: HTMLElement,
    done?: () => void,
  ): void {
    const generation = ++this.generation;
    container.replaceChildren();
    let next = 0;
    const slice = (): void => {
      if (generation !== this.generation) return;
      // A list in a hidden view waits for it to be shown (looking once a frame): its slices
      // would take time from the view on screen.
      if (next > 0 && hidden(container)) {
        nextFrame(slice);
        return;
      }
      const t0 = performance.now();
      const frag = document.createDocumentFragment();
      while (next < items.length && (next === 0 || performance.now() - t0 < SLICE_MS)) {
        frag.append(make(items[next] as T, next));
        next++;
      }
      if (note) note.remove();
      container.append(frag);
      if (next < items.length) {
        if (note) {
          note.textContent = `showing ${next} of ${items.length}…`;
          container.append(note);
        }
        container.dataset.pending = String(items.length - next);
        setTimeout(slice, 0);
      } else {
        delete container.dataset.pending;
        done?.();
      }
    };
    slice();
  }

  /** Stops the list being built (its slices so far stay). */
  stop(): void {
    this.generation++;
  }
}
