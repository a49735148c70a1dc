// The Web Worker that owns the wasm module. The page never calls wasm directly.

import init, * as spyre from "../pkg/spyre.js";
import type { ExampleInfo, SpyreModule } from "./api";
import { indexedDbCache } from "./compileCache";
import { createHandler } from "./handler";
import { transferables, type WorkerMessage } from "./protocol";

interface WorkerScope {
  postMessage(message: WorkerMessage, transfer?: Transferable[]): void;
  addEventListener(type: "message", listener: (ev: MessageEvent<unknown>) => void): void;
}

const scope = self as unknown as WorkerScope;

const handle = createHandler(
  async () => {
    await init();
    const m: SpyreModule = {
      version: () => spyre.version(),
      compilerVersion: () => spyre.compilerVersion(),
      listExamples: () => spyre.listExamples() as ExampleInfo[],
      exampleSource: (name) => spyre.exampleSource(name),
      machinePresets: () => spyre.machinePresets() as string[],
      verifyKtir: (text) => spyre.verifyKtir(text) as unknown,
      open: (bytes, fileName, extra) =>
        extra && extra.length > 0
          ? spyre.Session.openWithFiles(
              bytes,
              fileName,
              extra.map((f) => f.name),
              extra.map((f) => f.bytes),
            )
          : new spyre.Session(bytes, fileName),
    };
    return m;
  },
  (m) => (m.compilerVersion ? indexedDbCache(m.compilerVersion()) : null),
);

scope.addEventListener("message", (ev) => {
  void handle(ev.data, (progress) => scope.postMessage(progress)).then((response) =>
    scope.postMessage(response, transferables(response)),
  );
});
