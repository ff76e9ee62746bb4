/**
 * What the node remembers about its account, position and stored account token, in SQLite: a
 * small key/value table, each value JSON, each write one statement. Values are read once and
 * kept in memory (this process is the only writer), since listings read the account on every
 * request.
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";

/** A GPS fix as updateGps gives it. */
export interface GpsFix {
  longitude: number;
  latitude: number;
  speed: number;
  bearing: number;
  /** When it was recorded, milliseconds since the epoch. */
  at: number;
}

/** The account token stored with PUT /token. */
export interface StoredToken {
  token: string;
  /** Unix seconds. */
  expiresAt: number;
}

/** The node's own state. */
export class NodeState {
  readonly #db: DatabaseSync;
  readonly #cache = new Map<string, unknown>();

  /** Uses `db`, creating the table when it is missing. */
  constructor(db: DatabaseSync) {
    this.#db = db;
    db.exec(
      "CREATE TABLE IF NOT EXISTS node_state (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT",
    );
  }

  #get<T>(key: string): T | undefined {
    if (!this.#cache.has(key)) {
      const row = this.#db.prepare("SELECT value FROM node_state WHERE key = ?").get(key);
      this.#cache.set(key, row ? JSON.parse(row.value as string) : undefined);
    }
    return this.#cache.get(key) as T | undefined;
  }

  #set(key: string, value: unknown): void {
    // Forgotten first: if the write fails, the next read goes to the database.
    this.#cache.delete(key);
    if (value === undefined) {
      this.#db.prepare("DELETE FROM node_state WHERE key = ?").run(key);
    } else {
      this.#db.prepare(
        "INSERT INTO node_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      ).run(key, JSON.stringify(value));
    }
  }

  /** The associated account, "" when none. */
  get accountId(): string {
    return this.#get<string>("account") ?? "";
  }

  /** Associates the node with an account, or (with "") unassociates it and drops its token. */
  setAccount(accountId: string): void {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      this.#set("account", accountId || undefined);
      if (!accountId) this.#set("token", undefined);
      this.#db.exec("COMMIT");
    } catch (error) {
      this.#db.exec("ROLLBACK");
      this.#cache.clear();
      throw error;
    }
  }

  /** The last GPS fix. */
  get gps(): GpsFix | undefined {
    return this.#get<GpsFix>("gps");
  }

  set gps(fix: GpsFix) {
    this.#set("gps", fix);
  }

  /** The stored account token, expired or not. */
  get token(): StoredToken | undefined {
    return this.#get<StoredToken>("token");
  }

  /** Stores a token, or clears it with undefined. */
  setToken(token: StoredToken | undefined): void {
    this.#set("token", token);
  }
}
