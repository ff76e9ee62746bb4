/**
 * The file sink's worker module when edgenode runs as a script (the single executable starts
 * the same code as a role of its own main module: src/program/worker_roles.ts).
 *
 * @module
 */
import { serveFileSink } from "./file_sink_worker.ts";

serveFileSink();
