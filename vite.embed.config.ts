import { defineConfig } from "vite";

// The standalone embed script `spyre-playground.js`: the <spyre-playground> custom element in
// one self-contained ES module, written next to index.html in web/dist by a second build
// (after the page's, without emptying the folder). A documentation page anywhere loads it
// with one <script type="module" src=".../spyre-playground.js"> tag; the element then frames
// the index.html that sits beside the script.
export default defineConfig({
  root: "web",
  publicDir: false,
  build: {
    outDir: "dist",
    emptyOutDir: false,
    target: "es2022",
    copyPublicDir: false,
    lib: {
      entry: decodeURIComponent(new URL("./web/src/embed/element.ts", import.meta.url).pathname),
      formats: ["es"],
      fileName: () => "spyre-playground.js",
    },
  },
});
