// Long texts in a `pre`, drawn a window at a time. A full model's SDSC and KTIR run to
// hundreds of thousands of lines: set whole, the browser spent tens of seconds laying them
// out. A long text keeps the `pre` its full height (so bands, line lookups and scrolling
// work as for a short one) and holds only the lines near the view.

/** Texts of more lines than this are drawn by windows. */
export const LONG_LINES = 5000;

/** Lines drawn above and below the view. */
const MARGIN = 200;

/** Lines drawn when the view's height is not known yet (a hidden tab). */
const FIRST_WINDOW = 400;

interface Long {
  /** Line i's text. */
  line: (i: number) => string;
  count: number;
  scroller: HTMLElement;
  window: HTMLElement;
  from: number;
  to: number;
  frame: number;
  onScroll: () => void;
  resize: ResizeObserver;
}

const longs = new WeakMap<HTMLElement, Long>();

/**
 * Shows `text` in `pre`, which scrolls inside `scroller`; drawn by windows when it has more
 * than `LONG_LINES` lines. Returns the number of lines.
 */
export function setText(pre: HTMLElement, text: string, scroller: HTMLElement): number {
  const starts = lineStarts(text);
  const count = starts.length - 1;
  if (count <= LONG_LINES) {
    clear(pre);
    pre.textContent = text;
    return count;
  }
  // Lines are cut from the text when drawn: a split would make every line a string at once.
  let widest = 0;
  for (let i = 0; i < count; i++)
    widest = Math.max(widest, (starts[i + 1] as number) - (starts[i] as number) - 1);
  const line = (i: number): string =>
    text.slice(starts[i] as number, Math.max(starts[i] as number, (starts[i + 1] as number) - 1));
  setLong(pre, line, count, widest, scroller);
  return count;
}

/**
 * Where each line of `text` starts, with one more entry past the end (the start a next line
 * would have): `count + 1` entries for `count` lines (a trailing newline starts none).
 */
export function lineStarts(text: string): Uint32Array {
  if (text.length === 0) return new Uint32Array(1);
  // One scan (a full model's SDSC text is 73 MB): the start after each newline, in an array
  // grown by doubling.
  let out = new Uint32Array(1024);
  let k = 1;
  for (let at = text.indexOf("\n"); at >= 0; at = text.indexOf("\n", at + 1)) {
    if (k + 1 >= out.length) {
      const grown = new Uint32Array(out.length * 2);
      grown.set(out);
      out = grown;
    }
    out[k++] = at + 1;
  }
  // After a trailing newline the last start is the text's end, which closes the last line;
  // otherwise the last line runs to the end.
  if (!text.endsWith("\n")) out[k++] = text.length + 1;
  return out.slice(0, k);
}

/** Shows the numbers 1..`count` in a gutter `pre`, by windows when there are many. */
export function setNumbers(pre: HTMLElement, count: number, scroller: HTMLElement): void {
  if (count <= LONG_LINES) {
    clear(pre);
    const out: string[] = [];
    for (let i = 1; i <= count; i++) out.push(String(i));
    pre.textContent = out.join("\n");
    return;
  }
  setLong(pre, (i) => String(i + 1), count, String(count).length, scroller);
}

/** Whether `pre` holds a long text (drawn by windows). */
export function isLong(pre: HTMLElement): boolean {
  return longs.has(pre);
}

/** Stops drawing `pre` by windows (its text is then set whole). */
function clear(pre: HTMLElement): void {
  const l = longs.get(pre);
  if (!l) return;
  cancelAnimationFrame(l.frame);
  l.scroller.removeEventListener("scroll", l.onScroll);
  l.resize.disconnect();
  longs.delete(pre);
  pre.style.height = "";
  pre.style.minWidth = "";
  delete pre.dataset.lines;
}

interface Metrics {
  lh: number;
  top: number;
  bottom: number;
  left: number;
  right: number;
}

function metrics(pre: HTMLElement): Metrics {
  const cs = getComputedStyle(pre);
  return {
    lh: parseFloat(cs.lineHeight) || parseFloat(cs.fontSize) * 1.5 || 18,
    top: parseFloat(cs.paddingTop) || 0,
    bottom: parseFloat(cs.paddingBottom) || 0,
    left: parseFloat(cs.paddingLeft) || 0,
    right: parseFloat(cs.paddingRight) || 0,
  };
}

function setLong(
  pre: HTMLElement,
  line: (i: number) => string,
  count: number,
  widest: number,
  scroller: HTMLElement,
): void {
  clear(pre);
  const window = document.createElement("div");
  window.className = "long-window";
  pre.replaceChildren(window);
  pre.dataset.lines = String(count);
  const l: Long = {
    line,
    count,
    scroller,
    window,
    from: 0,
    to: 0,
    frame: 0,
    onScroll: () => {
      cancelAnimationFrame(l.frame);
      l.frame = requestAnimationFrame(() => draw(pre, l));
    },
    resize: new ResizeObserver(() => l.onScroll()),
  };
  longs.set(pre, l);
  const m = metrics(pre);
  pre.style.height = `${m.top + m.bottom + count * m.lh}px`;
  pre.style.minWidth = `calc(${widest + 1}ch + ${m.left + m.right}px)`;
  scroller.addEventListener("scroll", l.onScroll, { passive: true });
  l.resize.observe(scroller);
  draw(pre, l, true);
}

/** Draws the lines in and near the view (all of `FIRST_WINDOW` when the view is hidden). */
function draw(pre: HTMLElement, l: Long, force = false): void {
  const m = metrics(pre);
  const view = l.scroller.clientHeight;
  let from = 0;
  let to = Math.min(l.count, FIRST_WINDOW);
  if (view > 0) {
    const offset =
      pre.getBoundingClientRect().top -
      l.scroller.getBoundingClientRect().top +
      l.scroller.scrollTop;
    const first = Math.floor((l.scroller.scrollTop - offset - m.top) / m.lh);
    from = Math.max(0, first - MARGIN);
    to = Math.min(l.count, first + Math.ceil(view / m.lh) + MARGIN);
  }
  // Scrolling within the drawn lines draws nothing.
  if (!force && from >= l.from && to <= l.to) return;
  from = Math.max(0, from - MARGIN);
  to = Math.min(l.count, to + MARGIN);
  const out: string[] = [];
  for (let i = from; i < to; i++) out.push(l.line(i));
  l.window.textContent = out.join("\n");
  l.window.style.top = `${m.top + from * m.lh}px`;
  l.window.style.left = `${m.left}px`;
  l.window.style.right = `${m.right}px`;
  l.from = from;
  l.to = to;
}
