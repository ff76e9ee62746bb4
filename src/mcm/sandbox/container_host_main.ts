/**
 * The container process's main module (bundled into bundles/sandbox_sources.ts as
 * container_host.js). Run by `deno run`, it is the process's main thread and starts the
 * sandboxed worker from sandbox_worker.js beside it. In the single executable the same source
 * runs as a narrowed worker (src/program/container_process.ts), whose first message is a port
 * to the sandboxed worker, a sibling started from the embedded sandbox_worker.js.
 *
 * @module
 */
import { hostContainer } from "./container_host.ts";

/** The worker scope, when this runs in one (lib.deno.worker's, not this file's). */
interface WorkerScope {
  onmessage: ((event: MessageEvent<{ sandbox: MessagePort }>) => void) | null;
  postMessage(message: unknown): void;
}

if ("WorkerGlobalScope" in globalThis) {
  const scope = self as unknown as WorkerScope;
  scope.onmessage = (event) => {
    scope.onmessage = null;
    hostContainer({
      startSandbox: () => event.data.sandbox,
      exit: (code) => scope.postMessage({ exit: code }),
    });
  };
} else {
  hostContainer({
    startSandbox() {
      const worker = new Worker(new URL("./sandbox_worker.js", import.meta.url).href, {
        type: "module",
        name: "microservice",
        deno: { permissions: "none" },
      });
      worker.onerror = (event) => {
        event.preventDefault();
        console.error(`the microservice's worker failed: ${event.message}`);
        Deno.exit(70);
      };
      return worker;
    },
    exit: (code) => Deno.exit(code),
  });
}
