// The built page's size: `npm run size` (after `bash scripts/build-web.sh`).
// Prints the wasm module, the JavaScript (page and worker) and CSS, raw and gzip (level 9).

import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const DIST = join(resolve(dirname(fileURLToPath(import.meta.url)), ".."), "web", "dist");
const files = readdirSync(join(DIST, "assets")).map((f) => join("assets", f));
files.push(...readdirSync(DIST).filter((f) => f.endsWith(".html")));
const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
const groups = new Map();
console.log("file".padEnd(48), "raw".padStart(12), "gzip".padStart(12));
for (const f of files.sort()) {
  const buf = readFileSync(join(DIST, f));
  const gz = gzipSync(buf, { level: 9 }).length;
  console.log(f.padEnd(48), kib(buf.length).padStart(12), kib(gz).padStart(12));
  const kind = f.endsWith(".wasm")
    ? "wasm"
    : f.endsWith(".js")
      ? "js"
      : f.endsWith(".css")
        ? "css"
        : "html";
  const g = groups.get(kind) ?? { raw: 0, gz: 0 };
  g.raw += buf.length;
  g.gz += gz;
  groups.set(kind, g);
}
console.log();
for (const [kind, g] of groups)
  console.log(`${kind.padEnd(6)} raw ${kib(g.raw).padStart(11)}  gzip ${kib(g.gz).padStart(11)}`);
