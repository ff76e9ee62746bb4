/**
 * The sandboxed worker's module as a container process run by `deno run` loads it (bundled into
 * bundles/sandbox_sources.ts as sandbox_worker.js).
 *
 * @module
 */
import { serveSandbox } from "./sandbox_worker.ts";

serveSandbox();
