import { defineConfig } from "vite";

// The page lives in web/; the wasm module is generated into web/pkg by wasm-pack
// (see scripts/). `base: "./"` keeps every asset URL relative, so the built page
// works from any path (a docs site subfolder, a file server, CI artifacts).
// Pages: index.html (the playground), demo.html (a documentation page embedding
// <spyre-playground>), bench.html (the ring frame-rate benchmark, `npm run bench:ring`),
// lessons.html (the guided lessons in lessons/*.md, each with a live example).
const page = (name: string): string =>
  decodeURIComponent(new URL(`./web/${name}`, import.meta.url).pathname);

export default defineConfig({
  root: "web",
  base: "./",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 4096,
    rollupOptions: {
      input: {
        index: page("index.html"),
        demo: page("demo.html"),
        bench: page("bench.html"),
        lessons: page("lessons.html"),
      },
    },
  },
  worker: {
    format: "es",
  },
  server: {
    port: 5173,
    strictPort: true,
  },
  preview: {
    port: 5173,
    strictPort: true,
  },
});
