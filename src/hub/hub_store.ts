/**
 * What the hub remembers across restarts (spec/hub.yaml, "State"): the accounts it has seen, and
 * each node's last GPS fix and public address. Connections are not stored: nodes reconnect.
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import type { GpsPoint } from "../../gen/hub/validators.ts";

/** The hub's database tables. */
export class HubStore {
  readonly #db: DatabaseSync;

  /** Uses `db`, creating the tables when they are missing. */
  constructor(db: DatabaseSync) {
    this.#db = db;
    db.exec(`
      CREATE TABLE IF NOT EXISTS hub_accounts (
        id TEXT PRIMARY KEY, first_seen INTEGER NOT NULL, last_seen INTEGER NOT NULL) STRICT;
      CREATE TABLE IF NOT EXISTS hub_nodes (
        id TEXT PRIMARY KEY, account_id TEXT NOT NULL, fix TEXT, public_address TEXT NOT NULL,
        last_seen INTEGER NOT NULL) STRICT;`);
  }

  /**
   * Records that a node of an account connected (from `publicAddress`), keeping its fix when a
   * new one is given. Returns the fix the hub now holds for it.
   */
  nodeSeen(
    nodeId: string,
    accountId: string,
    publicAddress: string,
    fix: GpsPoint | undefined,
  ): GpsPoint | undefined {
    const now = Date.now();
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      this.#db.prepare(
        `INSERT INTO hub_accounts (id, first_seen, last_seen) VALUES (?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET last_seen = excluded.last_seen`,
      ).run(accountId, now, now);
      this.#db.prepare(
        `INSERT INTO hub_nodes (id, account_id, fix, public_address, last_seen) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET account_id = excluded.account_id,
           fix = coalesce(excluded.fix, fix), public_address = excluded.public_address,
           last_seen = excluded.last_seen`,
      ).run(nodeId, accountId, fix ? JSON.stringify(fix) : null, publicAddress, now);
      this.#db.exec("COMMIT");
    } catch (error) {
      this.#db.exec("ROLLBACK");
      throw error;
    }
    const row = this.#db.prepare("SELECT fix FROM hub_nodes WHERE id = ?").get(nodeId);
    return row?.fix ? JSON.parse(row.fix as string) : undefined;
  }

  /** Stores a node's new fix. */
  fixChanged(nodeId: string, fix: GpsPoint): void {
    this.#db.prepare("UPDATE hub_nodes SET fix = ?, last_seen = ? WHERE id = ?")
      .run(JSON.stringify(fix), Date.now(), nodeId);
  }

  /** The account a node last connected with, if it ever did. */
  accountOf(nodeId: string): string | undefined {
    const row = this.#db.prepare("SELECT account_id FROM hub_nodes WHERE id = ?").get(nodeId);
    return row ? String(row.account_id) : undefined;
  }

  /** How many accounts the hub has seen. */
  accountCount(): number {
    return Number(this.#db.prepare("SELECT count(*) AS n FROM hub_accounts").get()!.n);
  }
}
