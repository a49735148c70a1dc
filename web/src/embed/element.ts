// <spyre-playground example="matmul_add" view="ring">: embeds one live example in any page.
//
// The element hosts the playground page (index.html, in embed mode: one view, no chrome) in
// an iframe inside its shadow root, so the page's styles and the embedding page's styles
// never mix, and the wasm worker stays inside the frame. Attributes:
//   example  gallery example name (default: the first)
//   view     graph | passes | ir | ring | timeline | cores (default ring)
//   pass     pass to select;  t  simulated time in cycles
//   machine, allocator, attention-block, double-buffer ("off")   run settings (the CLI's
//            --machine, --allocator, --attention-block, --no-double-buffer)
//   lesson   a lesson id (`05-double-buffering`): frames that lesson from the lessons page
//   src      address of the playground page (default: the index.html beside the standalone
//            script spyre-playground.js when loaded from it, else ./index.html beside this page)
//   height   CSS height (default 480px)
//
// After every run the framed page reports the run's quantities (lessons/metrics.ts); the
// element re-dispatches them as a `spyre-run` event (`detail`: `{ metrics, settings }`, see
// `RunReport` in url.ts), and a failed run as a `spyre-run-failed` event (`detail.message`).

import { ATTRS, embedUrl, RUN_FAILED_MESSAGE, RUN_MESSAGE, type EmbedAttrs } from "./url";

export class SpyrePlaygroundElement extends HTMLElement {
  static get observedAttributes(): readonly string[] {
    return ATTRS;
  }

  private frame: HTMLIFrameElement | null = null;

  private readonly onMessage = (ev: MessageEvent): void => {
    const frame = this.frame;
    if (!frame || ev.source !== frame.contentWindow) return;
    const data: unknown = ev.data;
    if (!data || typeof data !== "object") return;
    const msg = data as { type?: unknown; metrics?: unknown; settings?: unknown };
    if (msg.type === RUN_FAILED_MESSAGE) {
      const message = String((data as { message?: unknown }).message ?? "");
      this.dispatchEvent(
        new CustomEvent("spyre-run-failed", { detail: { message }, bubbles: true }),
      );
      return;
    }
    if (msg.type !== RUN_MESSAGE || !msg.metrics || typeof msg.metrics !== "object") return;
    if (!msg.settings || typeof msg.settings !== "object") return;
    const detail = { metrics: msg.metrics, settings: msg.settings };
    this.dispatchEvent(new CustomEvent("spyre-run", { detail, bubbles: true }));
  };

  connectedCallback(): void {
    if (!this.shadowRoot) {
      const root = this.attachShadow({ mode: "open" });
      const sheet = new CSSStyleSheet();
      sheet.replaceSync(
        ":host{display:block;height:var(--spyre-height,480px);border:1px solid #8884;" +
          "border-radius:6px;overflow:hidden;margin:1em 0}" +
          "iframe{display:block;width:100%;height:100%;border:0}",
      );
      root.adoptedStyleSheets = [sheet];
      this.frame = document.createElement("iframe");
      this.frame.title = `Spyre Playground: ${this.getAttribute("example") ?? this.getAttribute("lesson") ?? "example"}`;
      this.frame.setAttribute("loading", "lazy");
      root.append(this.frame);
    }
    window.addEventListener("message", this.onMessage);
    this.update();
  }

  disconnectedCallback(): void {
    window.removeEventListener("message", this.onMessage);
  }

  attributeChangedCallback(): void {
    this.update();
  }

  /** The embedded frame (for tests and for pages that want to talk to it). */
  get iframe(): HTMLIFrameElement | null {
    return this.frame;
  }

  private update(): void {
    if (!this.frame) return;
    const h = this.getAttribute("height");
    if (h) this.style.setProperty("--spyre-height", h);
    const attrs: EmbedAttrs = {};
    for (const k of ATTRS) attrs[k] = this.getAttribute(k);
    let url: string;
    try {
      // A `src` is the author's, relative to their page; the default page is ours.
      url = embedUrl(attrs.src ? document.baseURI : pageBase(), attrs);
    } catch (e) {
      this.frame.removeAttribute("src");
      this.frame.srcdoc = `<p style="font:14px sans-serif;padding:1em">spyre-playground: ${escapeHtml(
        e instanceof Error ? e.message : String(e),
      )}</p>`;
      return;
    }
    this.frame.removeAttribute("srcdoc");
    if (this.frame.src !== url) this.frame.src = url;
  }
}

/**
 * Where the default playground page is looked up: beside the standalone script when the element
 * came from `spyre-playground.js` (a page outside the project loads it from the playground's
 * host), else beside the embedding page (the project's own demo.html).
 */
function pageBase(): string {
  const here = import.meta.url;
  return /\/spyre-playground\.js(?:[?#]|$)/.test(here) ? here : document.baseURI;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

if (typeof customElements !== "undefined" && !customElements.get("spyre-playground")) {
  customElements.define("spyre-playground", SpyrePlaygroundElement);
}

declare global {
  interface HTMLElementTagNameMap {
    "spyre-playground": SpyrePlaygroundElement;
  }
}
