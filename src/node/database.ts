/**
 * The node's SQLite database (`<dataDir>/edgenode.db`), shared by the services, each of which
 * creates its own tables.
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";

/** Opens the database in WAL mode with full syncs: records must survive a crash or power loss. */
export function openDatabase(dataDir: string): DatabaseSync {
  const db = new DatabaseSync(join(dataDir, "edgenode.db"));
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 5000;");
  return db;
}
