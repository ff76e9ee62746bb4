/**
 * What keeps an engine install (engine_install.ts, run as its own process) from clashing with
 * another or leaving litter behind:
 * - `${folder}.lock`, a file lock holding the installer's pid, so two nodes sharing an engine
 *   folder install (or build from source) once: the second waits, then finds the engine there.
 *   A killed installer's lock is free at once (see lockFolder).
 * - the temporary folders (`${folder}.partial-<pid>`) of installers that ended unfinished are
 *   removed at an install's start (an installer killed hard leaves its own behind).
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

/**
 * Ends the install's children (SIGTERM) and waits for them (a few seconds at most), so none is
 * left behind unreaped when the installer exits.
 */
export async function killInstallChildren(waitMs = 5000): Promise<void> {
  const children = [...installChildren];
  for (const child of children) {
    try {
      child.kill("SIGTERM");
    } catch { /* ended already */ }
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    Promise.allSettled(children.map((child) => child.status)),
    new Promise((resolve) => (timer = setTimeout(resolve, waitMs))),
  ]);
  clearTimeout(timer);
}

/**
 * Takes `${folder}.lock` (waiting while another installer holds it) and resolves with what
 * releases it. The lock is the file's flock(2), which the system releases when its holder ends
 * however it ends: a killed installer's lock is free at once, and a pid reused by another
 * process (a restarted container) holds nothing. (A check of the pid written in the file would
 * need /proc or Deno.kill, which Deno allows only with every permission or every program.) The
 * file holds the holder's pid for whoever looks, and is removed on release.
 */
export async function lockFolder(folder: string): Promise<() => Promise<void>> {
  const path = `${folder}.lock`;
  // The engine folder itself may not exist yet (a first install into a new one).
  await Deno.mkdir(dirname(path), { recursive: true });
  for (;;) {
    const file = await Deno.open(path, { read: true, write: true, create: true });
    try {
      await file.lock(true);
      // Released and removed while this waited: the file at the path now is another's.
      const held = await file.stat();
      const now = await Deno.lstat(path).catch(() => undefined);
      if (now?.ino === held.ino && now?.dev === held.dev) {
        await file.truncate();
        await file.write(new TextEncoder().encode(`${Deno.pid}\n`));
        return async () => {
          await Deno.remove(path).catch(() => {});
          file.close();
        };
      }
    } catch (error) {
      file.close();
      throw error;
    }
    file.close();
  }
}

/**
 * Removes the `${folder}.partial-<pid>` folders of installers that ended before they finished:
 * called while holding the folder's lock, no other installer of it is running.
 */
export async function removeDeadPartials(folder: string): Promise<void> {
  const parent = dirname(folder);
  const prefix = `${basename(folder)}.partial-`;
  const entries = await Array.fromAsync(Deno.readDir(parent)).catch(() => []);
  for (const entry of entries) {
    if (!entry.name.startsWith(prefix)) continue;
    // A name not an installer's (no pid) is left alone.
    if (!/^\d+$/.test(entry.name.slice(prefix.length))) continue;
    await Deno.remove(join(parent, entry.name), { recursive: true }).catch(() => {});
  }
}
