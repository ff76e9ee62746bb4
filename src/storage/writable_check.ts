/**
 * A start refuses a data directory it cannot write, with one line that names the path and the
 * fix, before anything listens. Otherwise the node would say "listening" and then answer every
 * write with a 500 ("attempt to write a readonly database"). What is checked is what the kernel
 * allows this process, whoever it runs as: a probe file is created and removed in each directory
 * the program writes, and each database file is opened for writing. So a read-only mount stops
 * root too, where permission bits would not.
 *
 * @example
 * ```ts
 * import { checkWritable } from "./writable_check.ts";
 *
 * await checkWritable(await Deno.makeTempDir(), { trees: ["models"], files: ["edgenode.db"] });
 * ```
 *
 * @module
 */
import { join } from "node:path";
import { ConfigError } from "../config/config_error.ts";
import { osReason } from "../config/file_errors.ts";

/** What must be writable below a data directory, besides the directory itself. */
export interface WritablePlaces {
  /** Folders written at any depth (each directory in them is checked). */
  trees: string[];
  /** Files written in place, such as a database and its -wal and -shm files. */
  files: string[];
}

/**
 * The error for `path` that could not be written: what the system said, and what to do about
 * it, on one line.
 */
export function unwritable(path: string, error: unknown): ConfigError {
  const reason = osReason(error);
  if ((error as { code?: string }).code === "EROFS" || /read-only file system/i.test(reason)) {
    return new ConfigError(
      `${path} is on a read-only file system: mount it read-write, or pass another --data-dir`,
    );
  }
  if (/no space left|quota/i.test(reason)) {
    return new ConfigError(
      `${path} cannot be written (${reason}): free some space, or pass another --data-dir`,
    );
  }
  return new ConfigError(
    `${path} cannot be written (${reason}): give it to the user edgenode runs as ` +
      `(chown -R), or pass another --data-dir`,
  );
}

/** Creates and removes a file in `dir`; throws unwritable(dir) if it may not. */
async function probeDirectory(dir: string): Promise<void> {
  let probe: string;
  try {
    probe = await Deno.makeTempFile({ dir, prefix: ".edgenode-write-check-" });
  } catch (error) {
    throw unwritable(dir, error);
  }
  await Deno.remove(probe);
}

/** Probes `dir` and every directory below it (links are not followed). */
async function probeTree(dir: string): Promise<void> {
  await probeDirectory(dir);
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isDirectory) await probeTree(join(dir, entry.name));
  }
}

/** Whether `path` exists as something other than a symbolic link. */
async function exists(path: string): Promise<boolean> {
  try {
    return !(await Deno.lstat(path)).isSymlink;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/**
 * Checks that `dataDir` and `places` in it can be written; throws a ConfigError naming the first
 * that cannot. Places that do not exist yet are skipped: they are made in a writable directory.
 */
export async function checkWritable(dataDir: string, places: WritablePlaces): Promise<void> {
  await probeDirectory(dataDir);
  for (const tree of places.trees) {
    const dir = join(dataDir, tree);
    if (await exists(dir)) await probeTree(dir);
  }
  for (const name of places.files) {
    const path = join(dataDir, name);
    if (!(await exists(path))) continue;
    try {
      (await Deno.open(path, { write: true })).close();
    } catch (error) {
      throw unwritable(path, error);
    }
  }
}
