/**
 * Model records in SQLite. A record is the spec's Model plus "pending" columns: the size and
 * hash of the files about to be renamed into place. They are written before the renames and
 * cleared after them, so that a crash in between can be told apart at start (see
 * recoverStore).
 *
 * @module
 */
import type { DatabaseSync, SQLInputValue, StatementSync } from "node:sqlite";
import { NotFound } from "../errors/mod.ts";
import type {
  ChatTemplateHint,
  Gguf,
  GgufInfo,
  Kind,
  Model,
  Onnx,
} from "../../gen/store/validators.ts";

/** Size and hash of a stored file. */
export interface FileFacts {
  size: number;
  sha256: string;
}

/** What a commit records about the files it put in place. */
export interface CommittedFiles {
  model?: FileFacts & { ggufInfo?: GgufInfo; templateHint?: ChatTemplateHint };
  mmproj?: FileFacts;
}

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
  pendingModel: FileFacts | undefined;
  mmproj: FileFacts | undefined;
  pendingMmproj: FileFacts | undefined;
  ggufInfo: GgufInfo | undefined;
  templateHint: ChatTemplateHint | undefined;
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

/** Columns added after the first release; a database without them gets them at open. */
const ADDED_COLUMNS = {
  mmproj_size: "INTEGER",
  mmproj_sha256: "TEXT",
  pending_mmproj_size: "INTEGER",
  pending_mmproj_sha256: "TEXT",
  gguf_info: "TEXT",
  template_hint: "TEXT",
};

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
    pendingModel: facts(row.pending_size, row.pending_sha256),
    mmproj: facts(row.mmproj_size, row.mmproj_sha256),
    pendingMmproj: facts(row.pending_mmproj_size, row.pending_mmproj_sha256),
    ggufInfo: row.gguf_info === null ? undefined : JSON.parse(row.gguf_info as string),
    templateHint: optional<ChatTemplateHint>(row.template_hint),
  };
}

function facts(size: SQLInputValue, sha256: SQLInputValue): FileFacts | undefined {
  return size === null || sha256 === null
    ? undefined
    : { size: size as number, sha256: sha256 as string };
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
  if (record.mmproj) model.mmproj = { totalSize: record.mmproj.size, sha256: record.mmproj.sha256 };
  if (record.ready && record.ggufInfo) model.ggufInfo = record.ggufInfo;
  if (record.ready && record.templateHint && !record.gguf?.chatTemplateHint) {
    model.suggestedChatTemplateHint = record.templateHint;
  }
  return model;
}

/** The 404 for an id without a record. */
export const notFound = (id: string): NotFound =>
  new NotFound(`model '${id}' does not exist`, { resource: "model", id });

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
    const present = new Set(
      (db.prepare("PRAGMA table_info(models)").all() as Row[]).map((column) => column.name),
    );
    for (const [name, type] of Object.entries(ADDED_COLUMNS)) {
      if (!present.has(name)) db.exec(`ALTER TABLE models ADD COLUMN ${name} ${type}`);
    }
  }

  /** Counts writes; anything derived from the records is stale once it has moved on. */
  get generation(): number {
    return this.#generation;
  }

  /** Runs a writing statement. Every write goes through here, so `generation` never misses one. */
  #write(text: string, ...params: SQLInputValue[] | [Record<string, SQLInputValue>]): number {
    this.#generation++;
    // deno-lint-ignore no-explicit-any
    return Number(this.#sql(text).run(...(params as any[])).changes);
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

  /** The record with this id; 404 when there is none. */
  require(id: string): ModelRecord {
    const record = this.get(id);
    if (!record) throw notFound(id);
    return record;
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

  /** Notes the files about to be renamed into place. */
  setPending(id: string, files: CommittedFiles): void {
    this.#write(
      `UPDATE models SET pending_size = ?, pending_sha256 = ?, pending_mmproj_size = ?,
       pending_mmproj_sha256 = ? WHERE id = ?`,
      files.model?.size ?? null,
      files.model?.sha256 ?? null,
      files.mmproj?.size ?? null,
      files.mmproj?.sha256 ?? null,
      id,
    );
  }

  /**
   * Records the files now in place and clears the pending note, in one statement: a model file
   * makes the record ready; a projector alone leaves readiness as it was.
   */
  commitFiles(id: string, files: CommittedFiles): void {
    const { model, mmproj } = files;
    this.#write(
      `UPDATE models SET
       ready = CASE WHEN :model THEN 1 ELSE ready END,
       total_size = CASE WHEN :model THEN :size ELSE total_size END,
       sha256 = CASE WHEN :model THEN :sha256 ELSE sha256 END,
       gguf_info = CASE WHEN :model THEN :info ELSE gguf_info END,
       template_hint = CASE WHEN :model THEN :hint ELSE template_hint END,
       mmproj_size = CASE WHEN :mmproj THEN :mmprojSize ELSE mmproj_size END,
       mmproj_sha256 = CASE WHEN :mmproj THEN :mmprojSha256 ELSE mmproj_sha256 END,
       pending_size = NULL, pending_sha256 = NULL, pending_mmproj_size = NULL,
       pending_mmproj_sha256 = NULL WHERE id = :id`,
      {
        id,
        model: Number(model !== undefined),
        size: model?.size ?? null,
        sha256: model?.sha256 ?? null,
        info: json(model?.ggufInfo),
        hint: model?.templateHint ?? null,
        mmproj: Number(mmproj !== undefined),
        mmprojSize: mmproj?.size ?? null,
        mmprojSha256: mmproj?.sha256 ?? null,
      },
    );
  }

  /** Marks the record not ready: no model file, no size, no header metadata. */
  markNotReady(id: string): void {
    this.#write(
      `UPDATE models SET ready = 0, total_size = NULL, sha256 = NULL, gguf_info = NULL,
       template_hint = NULL, pending_size = NULL, pending_sha256 = NULL WHERE id = ?`,
      id,
    );
  }

  /** Forgets the projector file (it is missing or damaged). */
  clearMmproj(id: string): void {
    this.#write(`UPDATE models SET mmproj_size = NULL, mmproj_sha256 = NULL WHERE id = ?`, id);
  }

  /** Forgets a pending file that never made it into place. */
  clearPending(id: string): void {
    this.#write(
      `UPDATE models SET pending_size = NULL, pending_sha256 = NULL, pending_mmproj_size = NULL,
       pending_mmproj_sha256 = NULL WHERE id = ?`,
      id,
    );
  }

  /** Deletes a record; false when there was none. */
  delete(id: string): boolean {
    return this.#write("DELETE FROM models WHERE id = ?", id) > 0;
  }
}
