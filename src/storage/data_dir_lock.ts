/**
 * One process per data directory. Two nodes on one directory would each run recovery over the
 * other's transfers and start the same containers on the same storage, so the launcher takes an
 * exclusive lock (flock) on `<dataDir>/edgenode.lock` and holds it while it lives; the kernel
 * releases it when the process ends, however it ends, so a crash leaves no stale lock. The file
 * holds the owner's pid, for the message another start prints.
 *
 * @example
 * ```ts
 * import { lockDataDir } from "./data_dir_lock.ts";
 *
 * const lock = await lockDataDir(await Deno.makeTempDir()); // hold it while serving
 * lock.close();
 * ```
 *
 * @module
 */
import { join } from "node:path";
import { ConfigError } from "../config/config_error.ts";
import { unwritable } from "./writable_check.ts";

/** The lock file's name inside a data directory. */
export const LOCK_FILE = "edgenode.lock";

/**
 * Takes the data directory's lock, or throws a ConfigError naming the directory and the pid that
 * holds it. Also the first write of a start: a directory that cannot be written is refused here,
 * with one line, before anything listens.
 */
export async function lockDataDir(dataDir: string): Promise<Deno.FsFile> {
  const path = join(dataDir, LOCK_FILE);
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true, write: true, create: true, mode: 0o600 });
  } catch (error) {
    throw unwritable(dataDir, error);
  }
  if (!(await file.tryLock(true))) {
    file.close();
    const pid = (await Deno.readTextFile(path).catch(() => "")).trim() || "unknown";
    throw new ConfigError(
      `the data directory ${dataDir} is in use by another edgenode (pid ${pid}); stop it, or pass another --data-dir`,
    );
  }
  await file.truncate(0);
  await file.write(new TextEncoder().encode(`${Deno.pid}\n`));
  return file;
}
