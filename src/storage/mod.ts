/**
 * Storage utilities shared by every service, with no dependency on the composition roots
 * (`node`, `hub`): the SQLite database and per-key serialisation of work.
 *
 * @example
 * ```ts
 * import { KeyedLock } from "./mod.ts";
 * const lock = new KeyedLock();
 * await lock.exclusive("model-1", async () => {});
 * ```
 *
 * @module
 */
export { openDatabase } from "./database.ts";
export { KeyedLock } from "./keyed_lock.ts";
export { lockDataDir } from "./data_dir_lock.ts";
export { checkWritable } from "./writable_check.ts";
export * from "./file_sinks.ts";
export * from "./versioned_files.ts";
