/**
 * A container's `context.storage`, kept by its process's main thread in its own SQLite file
 * and files folder: the container process may read and write only its own storage folder, so
 * no microservice can reach another's. The sandboxed worker calls it synchronously (see
 * worker/context_services.ts).
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";
import { StorageFileError, StorageFiles } from "./storage_files.ts";
import { ANSWER_HEADER_BYTES, type StorageAnswer, type StorageCall } from "../host_protocol.ts";

const PAGE_SIZE_BYTES = 4096;

/** The open database of a storage and its statements. */
function openDatabase(file: string, maxBytes: number) {
  const db = new DatabaseSync(file);
  // NORMAL in WAL mode: a crash of the process loses nothing; a power loss may lose the last
  // writes. A full sync on every setItem would cost milliseconds per call.
  db.exec(`
    PRAGMA page_size = ${PAGE_SIZE_BYTES};
    PRAGMA journal_mode = WAL;
    PRAGMA synchronous = NORMAL;
    PRAGMA max_page_count = ${Math.max(16, Math.floor(maxBytes / PAGE_SIZE_BYTES))};
    CREATE TABLE IF NOT EXISTS items (key TEXT PRIMARY KEY, value TEXT NOT NULL, tag TEXT);
    CREATE INDEX IF NOT EXISTS items_by_tag ON items (tag, key);
  `);
  return {
    get: db.prepare("SELECT value FROM items WHERE key = ?"),
    // setItem keeps an item's tag; setItemWithTag replaces it.
    set: db.prepare(
      "INSERT INTO items (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    ),
    setTagged: db.prepare(
      "INSERT INTO items (key, value, tag) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, tag = excluded.tag",
    ),
    remove: db.prepare("DELETE FROM items WHERE key = ?"),
    page: db.prepare("SELECT key, value FROM items WHERE key > ? ORDER BY key LIMIT ?"),
    pageTagged: db.prepare(
      "SELECT key, value FROM items WHERE tag = ? AND key > ? ORDER BY key LIMIT ?",
    ),
    removeTag: db.prepare("DELETE FROM items WHERE tag = ?"),
    pages: db.prepare("PRAGMA page_count"),
  };
}

/**
 * One container's key-value storage with tags. Its database opens at the first call: a
 * microservice that never uses its storage costs no SQLite connection (a client's process
 * hosts many: sandbox/host/tenant_host.ts).
 */
export class StorageHost {
  readonly #file: string;
  readonly #maxBytes: number;
  #statements: ReturnType<typeof openDatabase> | undefined;
  /** The container's files, sharing the quota with the items. */
  readonly files: StorageFiles;

  /** The storage `<dir>/storage.db` (created at the first call); it may grow to `maxBytes`. */
  constructor(dir: string, maxBytes: number) {
    this.#file = `${dir}/storage.db`;
    this.#maxBytes = maxBytes;
    this.files = new StorageFiles(
      dir,
      maxBytes,
      () =>
        Number((this.#open().pages.get() as { page_count: number }).page_count) *
        PAGE_SIZE_BYTES,
    );
  }

  #open(): ReturnType<typeof openDatabase> {
    return this.#statements ??= openDatabase(this.#file, this.#maxBytes);
  }

  /** Runs one call; errors (the storage is full) become the answer's message. */
  async run(call: StorageCall): Promise<StorageAnswer> {
    try {
      if (call.op === "saveFile") {
        let bytes: Uint8Array;
        try {
          bytes = (Uint8Array as unknown as { fromBase64(text: string): Uint8Array })
            .fromBase64(call.base64);
        } catch {
          return { error: "saveFile takes the file's bytes as base64" };
        }
        await this.files.save(call.name, bytes);
        return { value: null };
      }
      if (call.op === "deleteFile") {
        await this.files.delete(call.name);
        return { value: null };
      }
      return { value: this.#run(call) };
    } catch (error) {
      const message = (error as Error).message;
      if (error instanceof StorageFileError) return { error: message };
      return {
        error: /full/i.test(message)
          ? "the container's storage is full (mcm.storageMb in the node's config)"
          : `storage failed: ${message}`,
      };
    }
  }

  #run(call: StorageCall): unknown {
    const s = this.#open();
    switch (call.op) {
      case "get":
        return (s.get.get(call.key) as { value: string } | undefined)?.value ?? null;
      case "set":
        if (call.tag === undefined) s.set.run(call.key, call.value);
        else s.setTagged.run(call.key, call.value, call.tag);
        return null;
      case "remove":
        s.remove.run(call.key);
        return null;
      case "page": {
        const after = call.after ?? "";
        const rows = call.tag === null
          ? s.page.all(after, call.limit)
          : s.pageTagged.all(call.tag, after, call.limit);
        return (rows as { key: string; value: string }[]).map((row) => [row.key, row.value]);
      }
      case "removeTag":
        return Number(s.removeTag.run(call.tag).changes);
      default:
        throw new Error(`unknown storage call`);
    }
  }
}

/** A new answer buffer for the worker's synchronous storage calls (worker/context_services.ts). */
export function answerBuffer(): SharedArrayBuffer {
  return new SharedArrayBuffer(64 * 1024, { maxByteLength: 256 * 1024 * 1024 });
}

/** The host's side: puts `answer` into the buffer and wakes the waiting worker. */
export function answerSync(buffer: SharedArrayBuffer, answer: unknown): void {
  const bytes = new TextEncoder().encode(JSON.stringify(answer));
  if (ANSWER_HEADER_BYTES + bytes.length > buffer.byteLength) {
    buffer.grow(ANSWER_HEADER_BYTES + bytes.length);
  }
  new Uint8Array(buffer, ANSWER_HEADER_BYTES, bytes.length).set(bytes);
  const words = new Int32Array(buffer, 0, 2);
  words[1] = bytes.length;
  Atomics.store(words, 0, 1);
  Atomics.notify(words, 0);
}
