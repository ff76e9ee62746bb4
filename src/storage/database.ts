/**
 * The SQLite database of the node (`<dataDir>/edgenode.db`) or the hub (`hub.db`), shared by
 * the services, each of which creates its own tables.
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";

/** Narrows a file that others may read to 0600; a missing file is left alone. */
function ownerOnly(path: string): void {
  try {
    if (((Deno.statSync(path).mode ?? 0) & 0o077) !== 0) Deno.chmodSync(path, 0o600);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}

/**
 * Opens the database (`edgenode.db`, or the hub's `hub.db`) in WAL mode. The node syncs fully:
 * its records must survive a power loss. The hub's fixes and accounts may lose the last second
 * on a power loss (NORMAL), which spares a sync on every node connection.
 */
export function openDatabase(
  dataDir: string,
  file = "edgenode.db",
  synchronous: "FULL" | "NORMAL" = "FULL",
): DatabaseSync {
  const path = join(dataDir, file);
  // It holds the account token and other secrets: readable by the owner only. SQLite gives the
  // -wal and -shm files the database file's mode, so creating it 0600 covers them too; an older
  // file is narrowed as well.
  try {
    Deno.openSync(path, { write: true, createNew: true, mode: 0o600 }).close();
  } catch (error) {
    if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
    for (const existing of [path, `${path}-wal`, `${path}-shm`]) ownerOnly(existing);
  }
  const db = new DatabaseSync(path);
  db.exec(
    `PRAGMA journal_mode = WAL; PRAGMA synchronous = ${synchronous}; PRAGMA busy_timeout = 5000;`,
  );
  return db;
}
