/**
 * The container process's main module as `deno run` loads it (bundled into
 * bundles/sandbox_sources.ts as container_host.js).
 *
 * Usage: container_host.js BUNDLE_FILE STORAGE_DIR STORAGE_MAX_BYTES
 *
 * @module
 */
import { hostContainer } from "./container_host.ts";

hostContainer(Deno.args, {
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
