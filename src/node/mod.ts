/**
 * `edgenode node`: its settings, the launcher (narrow permissions) and the node process it
 * starts, and the server that assembles every service.
 *
 * @module
 */
export * from "./config.ts";
export * from "./launcher.ts";
