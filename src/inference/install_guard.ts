/**
 * What keeps an engine install (engine_install.ts, run as its own process) from clashing with
 * another or leaving litter behind:
 * - `${folder}.lock`, created exclusively and holding the installer's pid, so two nodes sharing
 *   an engine folder install (or build from source) once: the second waits, then finds the
 *   engine there. A lock whose pid is no longer alive (its installer was killed) is taken over.
 * - the temporary folders (`${folder}.partial-<pid>`) of installers no longer alive are removed
 *   at an install's start (an installer killed hard leaves its own behind).
 * - the install's current child (npm, git, node) is kept, so a SIGTERM to the installer (the
 *   node stopping) ends it too.
 *
 * @module
 */
import { basename, dirname, join } from "node:path";

/** The processes the install runs now (npm, git, node): ended with the installer. */
export const installChildren: Set<Deno.ChildProcess> = new Set();

/** Runs `child` to its end as one of {@link installChildren}. */
export async function tracked<T>(child: Deno.ChildProcess, until: Promise<T>): Promise<T> {
  installChildren.add(child);
  try {
    return await until;
  } finally {
    installChildren.delete(child);
  }
}

/** Ends the install's children (SIGTERM), e.g. when the installer is told to stop. */
export function killInstallChildren(): void {
  for (const child of installChildren) {
    try {
      child.kill("SIGTERM");
    } catch { /* ended already */ }
  }
}

/** How old a lock may be where no pid can be checked (not Linux) before it is taken over. */
const LOCK_AGE_MS = 2 * 60 * 60_000;

/**
 * Whether the process `pid` (as written in `path`, a lock or temporary folder) still runs. On
 * Linux, /proc says; elsewhere a file younger than two hours counts as alive (Deno.kill, the
 * portable check, needs a permission the installer does not have). A pid of another machine or
 * pid namespace sharing the folder may read as alive or dead wrongly: the lock then waits, or
 * the engine is installed twice (each renames a whole install into place, so still whole).
 */
export async function isAlive(pid: number, path: string): Promise<boolean> {
  if (!Number.isSafeInteger(pid) || pid <= 0) return true; // being written
  if (pid === Deno.pid) return true;
  if (Deno.build.os === "linux") {
    return await Deno.stat(`/proc/${pid}`).then(() => true, () => false);
  }
  const info = await Deno.lstat(path).catch(() => undefined);
  return info?.mtime ? Date.now() - info.mtime.getTime() < LOCK_AGE_MS : false;
}

/**
 * Takes `${folder}.lock` (waiting, `pollMs` apart, while a live installer holds it) and resolves
 * with what releases it.
 */
export async function lockFolder(
  folder: string,
  pollMs = 1000,
): Promise<() => Promise<void>> {
  const lock = `${folder}.lock`;
  for (;;) {
    try {
      await Deno.writeTextFile(lock, String(Deno.pid), { createNew: true });
      return () => Deno.remove(lock).catch(() => {});
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
    }
    const holder = Number((await Deno.readTextFile(lock).catch(() => "")).trim());
    if (await isAlive(holder, lock)) {
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    } else {
      // Taken over: whoever creates it next (createNew) holds it.
      await Deno.remove(lock).catch(() => {});
    }
  }
}

/** Removes the `${folder}.partial-<pid>` folders whose installer is no longer alive. */
export async function removeDeadPartials(folder: string): Promise<void> {
  const parent = dirname(folder);
  const prefix = `${basename(folder)}.partial-`;
  const entries = await Array.fromAsync(Deno.readDir(parent)).catch(() => []);
  for (const entry of entries) {
    if (!entry.name.startsWith(prefix)) continue;
    const path = join(parent, entry.name);
    const pid = Number(entry.name.slice(prefix.length));
    // A name not ours to judge (no pid) is left alone.
    if (!Number.isSafeInteger(pid) || pid <= 0) continue;
    if (!await isAlive(pid, path)) await Deno.remove(path, { recursive: true }).catch(() => {});
  }
}
