/**
 * The SQLite database of the node (`<dataDir>/edgenode.db`) or the hub (`hub.db`), shared by
 * the services, each of which creates its own tables.
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { ConfigError } from "../config/config_error.ts";
import { unwritable } from "./writable_check.ts";

/** Narrows a file that others may read to 0600; a missing file is left alone. */
function ownerOnly(path: string): void {
  try {
    if (((Deno.statSync(path).mode ?? 0) & 0o077) !== 0) Deno.chmodSync(path, 0o600);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}

/** A database file and the -wal and -shm files SQLite keeps beside it. */
export function databaseFiles(file: string): string[] {
  return [file, `${file}-wal`, `${file}-shm`];
}

/**
 * The error of a database that cannot be used, in the user's words: what is wrong with which
 * file, and what to do. Other errors are returned as they are.
 */
function openingError(path: string, error: unknown): unknown {
  const message = (error as Error).message ?? "";
  if (/file is not a database|malformed|corrupt/i.test(message)) {
    return new ConfigError(
      `${path} is not a usable SQLite database (${message}): restore it (with its -wal file) ` +
        `from a backup, or start over with another --data-dir`,
    );
  }
  if (
    /readonly|read-only|unable to open/i.test(message) ||
    error instanceof Deno.errors.PermissionDenied
  ) {
    return unwritable(path, error);
  }
  return error;
}

/**
 * Opens the database (`edgenode.db`, or the hub's `hub.db`) in WAL mode. The node syncs fully:
 * its records must survive a power loss. The hub's fixes and accounts may lose the last second
 * on a power loss (NORMAL), which spares a sync on every node connection. A file that is not a
 * database, or is damaged where SQLite's quick check looks, is refused with a ConfigError.
 */
export function openDatabase(
  dataDir: string,
  file = "edgenode.db",
  synchronous: "FULL" | "NORMAL" = "FULL",
): DatabaseSync {
  const path = join(dataDir, file);
  let db: DatabaseSync | undefined;
  try {
    // It holds the account token and other secrets: readable by the owner only. SQLite gives
    // the -wal and -shm files the database file's mode, so creating it 0600 covers them too; an
    // older file is narrowed as well.
    try {
      Deno.openSync(path, { write: true, createNew: true, mode: 0o600 }).close();
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
      for (const existing of databaseFiles(path)) ownerOnly(existing);
    }
    db = new DatabaseSync(path);
    db.exec(
      `PRAGMA journal_mode = WAL; PRAGMA synchronous = ${synchronous}; PRAGMA busy_timeout = 5000;`,
    );
    const check = db.prepare("PRAGMA quick_check(1)").get()?.quick_check;
    if (check !== "ok") throw new Error(`database disk image is malformed: ${check}`);
    return db;
  } catch (error) {
    db?.close();
    throw openingError(path, error);
  }
}
