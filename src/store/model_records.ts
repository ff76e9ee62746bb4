/**
 * Model records in SQLite. A record is the spec's Model plus two "pending" columns: the size and
 * hash of a file that is about to be renamed into place. They are written before the rename and
 * cleared after it, so that a crash between the two can be told apart at start (see
 * ModelRegistry.recover).
 *
 * @module
 */
import type { DatabaseSync, SQLInputValue, StatementSync } from "node:sqlite";
import type { Gguf, Kind, Model, Onnx } from "../../gen/store/validators.ts";

/** A stored record. */
export interface ModelRecord {
  id: string;
  version: string;
  kind: Kind;
  ready: boolean;
  totalSize: number | undefined;
  sha256: string | undefined;
  createdAt: number;
  gguf: Gguf | undefined;
  onnx: Onnx | undefined;
  pendingSize: number | undefined;
  pendingSha256: string | undefined;
}

type Row = Record<string, SQLInputValue>;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS models (
  id TEXT PRIMARY KEY,
  version TEXT NOT NULL,
  kind TEXT NOT NULL,
  ready INTEGER NOT NULL DEFAULT 0,
  total_size INTEGER,
  sha256 TEXT,
  created_at INTEGER NOT NULL,
  gguf TEXT,
  onnx TEXT,
  pending_size INTEGER,
  pending_sha256 TEXT
) STRICT;
CREATE INDEX IF NOT EXISTS models_by_created ON models (created_at, id);
`;

function fromRow(row: Row): ModelRecord {
  const optional = <T>(value: SQLInputValue) => (value === null ? undefined : value as T);
  return {
    id: row.id as string,
    version: row.version as string,
    kind: row.kind as Kind,
    ready: row.ready === 1,
    totalSize: optional<number>(row.total_size),
    sha256: optional<string>(row.sha256),
    createdAt: row.created_at as number,
    gguf: row.gguf === null ? undefined : JSON.parse(row.gguf as string),
    onnx: row.onnx === null ? undefined : JSON.parse(row.onnx as string),
    pendingSize: optional<number>(row.pending_size),
    pendingSha256: optional<string>(row.pending_sha256),
  };
}

/** The Model a client sees for a record. */
export function toModel(record: ModelRecord): Model {
  const model: Model = {
    id: record.id,
    version: record.version,
    kind: record.kind,
    readyToUse: record.ready,
    createdAt: record.createdAt,
  };
  if (record.ready && record.totalSize !== undefined) {
    model.totalSize = record.totalSize;
    if (record.sha256) model.sha256 = record.sha256;
  }
  if (record.gguf) model.gguf = record.gguf;
  if (record.onnx) model.onnx = record.onnx;
  return model;
}

const json = (value: unknown) => (value === undefined ? null : JSON.stringify(value));

/** Reads and writes model records. Every method is one statement, hence one transaction. */
export class ModelRecords {
  #db: DatabaseSync;
  #statements = new Map<string, StatementSync>();
  #generation = 0;

  /** Uses `db`, creating the table when it is missing. */
  constructor(db: DatabaseSync) {
    this.#db = db;
    db.exec(SCHEMA);
  }

  /** Counts writes; anything derived from the records is stale once it has moved on. */
  get generation(): number {
    return this.#generation;
  }

  /** Runs a writing statement. Every write goes through here, so `generation` never misses one. */
  #write(text: string, ...params: SQLInputValue[]): number {
    this.#generation++;
    return Number(this.#sql(text).run(...params).changes);
  }

  /** A prepared statement, prepared once per SQL text. */
  #sql(text: string): StatementSync {
    let statement = this.#statements.get(text);
    if (!statement) {
      statement = this.#db.prepare(text);
      this.#statements.set(text, statement);
    }
    return statement;
  }

  /** The record with this id, if any. */
  get(id: string): ModelRecord | undefined {
    const row = this.#sql("SELECT * FROM models WHERE id = ?").get(id) as Row | undefined;
    return row ? fromRow(row) : undefined;
  }

  /** Records, oldest first, optionally only of one kind and/or readiness. */
  list(filter: { kind?: Kind; ready?: boolean } = {}): ModelRecord[] {
    const rows = this.#sql(
      `SELECT * FROM models WHERE (:kind IS NULL OR kind = :kind)
       AND (:ready IS NULL OR ready = :ready) ORDER BY created_at, id`,
    ).all({
      kind: filter.kind ?? null,
      ready: filter.ready === undefined ? null : Number(filter.ready),
    });
    return (rows as Row[]).map(fromRow);
  }

  /** Inserts a new, not-ready record. */
  insert(
    record: Pick<ModelRecord, "id" | "version" | "kind" | "createdAt" | "gguf" | "onnx">,
  ): void {
    this.#write(
      `INSERT INTO models (id, version, kind, created_at, gguf, onnx) VALUES (?, ?, ?, ?, ?, ?)`,
      record.id,
      record.version,
      record.kind,
      record.createdAt,
      json(record.gguf),
      json(record.onnx),
    );
  }

  /** Replaces the metadata of a record (version, kind, gguf, onnx). */
  updateMetadata(record: Pick<ModelRecord, "id" | "version" | "kind" | "gguf" | "onnx">): void {
    this.#write(
      `UPDATE models SET version = ?, kind = ?, gguf = ?, onnx = ? WHERE id = ?`,
      record.version,
      record.kind,
      json(record.gguf),
      json(record.onnx),
      record.id,
    );
  }

  /** Notes the file about to be renamed into place. */
  setPending(id: string, size: number, sha256: string): void {
    this.#write(
      `UPDATE models SET pending_size = ?, pending_sha256 = ? WHERE id = ?`,
      size,
      sha256,
      id,
    );
  }

  /** Marks the record ready with its file's size and hash, and clears any pending note. */
  markReady(id: string, size: number, sha256: string): void {
    this.#write(
      `UPDATE models SET ready = 1, total_size = ?, sha256 = ?, pending_size = NULL,
       pending_sha256 = NULL WHERE id = ?`,
      size,
      sha256,
      id,
    );
  }

  /** Marks the record not ready: no file, no size. */
  markNotReady(id: string): void {
    this.#write(
      `UPDATE models SET ready = 0, total_size = NULL, sha256 = NULL, pending_size = NULL,
       pending_sha256 = NULL WHERE id = ?`,
      id,
    );
  }

  /** Forgets a pending file that never made it into place. */
  clearPending(id: string): void {
    this.#write(`UPDATE models SET pending_size = NULL, pending_sha256 = NULL WHERE id = ?`, id);
  }

  /** Deletes a record; false when there was none. */
  delete(id: string): boolean {
    return this.#write("DELETE FROM models WHERE id = ?", id) > 0;
  }
}
