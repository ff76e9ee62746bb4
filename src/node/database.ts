/**
 * The node's SQLite database (`<dataDir>/edgenode.db`), shared by the services, each of which
 * creates its own tables.
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";

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
  const db = new DatabaseSync(join(dataDir, file));
  db.exec(
    `PRAGMA journal_mode = WAL; PRAGMA synchronous = ${synchronous}; PRAGMA busy_timeout = 5000;`,
  );
  return db;
}
