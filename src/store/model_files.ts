/**
 * Model files on disk: `<dataDir>/models/<id>/<id>.<gguf|onnx>` (and a vlm's projector
 * `<id>.mmproj.gguf` beside it), written through a temporary
 * `.<name>.<uuid>.partial` file in the same folder that is hashed as it is written, synced, and
 * renamed into place only after it has been checked.
 *
 * @module
 */
import { abortable } from "../async/abortable.ts";
import { createHash } from "node:crypto";
import { type FileSink, FileSinks, type SinkOptions } from "../storage/file_sinks.ts";
import { byobReader } from "../streams/mod.ts";
import { statfs } from "node:fs/promises";
import { join, resolve, sep as SEP } from "node:path";
import { Invalid, NoSpace, TooLarge } from "../errors/mod.ts";
import { isModelId } from "./model_id.ts";
import type { Kind } from "../../gen/store/validators.ts";
import { formatOf } from "./model_format.ts";

/** Suffix of temporary files; anything with it is removed at start. */
export const PARTIAL_SUFFIX = ".partial";

/** Which of a model's files: the model file itself or a vlm's projector. */
export type FileRole = "model" | "mmproj";

/** The name of a model's file in its folder: `<id>.<gguf|onnx>` or `<id>.mmproj.gguf`. */
export function storedFileName(record: { id: string; kind: Kind }, role: FileRole): string {
  return role === "mmproj" ? `${record.id}.mmproj.gguf` : `${record.id}.${formatOf(record.kind)}`;
}

/** A file written to a temporary name, not yet in place. */
export interface WrittenFile {
  tempPath: string;
  size: number;
  sha256: string;
  /** The first bytes, for header checks. */
  head: Uint8Array;
}

/** Options for writing a file. */
export interface WriteOptions {
  /** Aborts the write; the temporary file is removed. */
  signal?: AbortSignal;
  /** Largest size accepted; larger is 413. */
  maxBytes?: number;
  /** Bytes kept from the start of the file in `head`. */
  headBytes: number;
}

/** The 413 for a file over the configured limit, whether seen in Content-Length or while writing. */
export function fileTooLarge(limit: number): TooLarge {
  return new TooLarge(`the file is larger than the limit of ${limit} bytes`);
}

function isNoSpace(error: unknown): boolean {
  return error instanceof Error && /ENOSPC|No space left|os error 28/.test(String(error));
}

/** The model files under one root folder. */
export class ModelFiles {
  /** The models folder, resolved to a real path. */
  readonly root: string;
  readonly #sinks: FileSinks;
  readonly #beforeChange: Array<(id: string) => Promise<void>> = [];

  private constructor(root: string, sinkOptions?: SinkOptions) {
    this.root = root;
    this.#sinks = new FileSinks(root, undefined, sinkOptions);
  }

  /** Stops the threads that write files; a transfer still running fails. */
  close(): void {
    this.#sinks.close();
  }

  /**
   * Opens (creating if needed) `<dataDir>/models`; `sinkOptions`: how files are written (by
   * default as the machine's cores suit, see FileSinks; tests pick each way).
   */
  static async open(dataDir: string, sinkOptions?: SinkOptions): Promise<ModelFiles> {
    const root = join(dataDir, "models");
    await Deno.mkdir(root, { recursive: true, mode: 0o700 });
    return new ModelFiles(await Deno.realPath(root), sinkOptions);
  }

  /** The folder of a model; the id is checked and the path must resolve inside the root. */
  dirOf(id: string): string {
    if (!isModelId(id)) throw new Invalid(`invalid model id '${id}'`);
    const dir = resolve(this.root, id);
    if (!dir.startsWith(this.root + SEP) || dir.slice(this.root.length + 1).includes(SEP)) {
      throw new Invalid(`invalid model id '${id}'`);
    }
    return dir;
  }

  /** Where one of a model's files lives. */
  pathFor(record: { id: string; kind: Kind }, role: FileRole): string {
    return join(this.dirOf(record.id), storedFileName(record, role));
  }

  /** The model's folder, created if needed; a symlink in its place is refused. */
  private async ensureDir(id: string): Promise<string> {
    const dir = this.dirOf(id);
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    const info = await Deno.lstat(dir);
    if (!info.isDirectory) throw new Error(`${dir} is not a plain directory`);
    return dir;
  }

  /**
   * Throws 507 when the file system has less than `bytes` free. Best effort: where free space
   * cannot be read, the write goes ahead and a full disk is caught by ENOSPC instead.
   */
  async requireFreeSpace(bytes: number): Promise<void> {
    const stats = await statfs(this.root).catch(() => undefined);
    if (!stats) return;
    const free = Number(stats.bavail) * Number(stats.bsize);
    if (bytes > free) {
      throw new NoSpace(
        `not enough disk space: the file needs ${bytes} bytes and ${free} are free`,
      );
    }
  }

  /** Streams `chunks` into a new temporary file beside `finalName`, hashing and syncing it. */
  async writeTemp(
    id: string,
    finalName: string,
    chunks: AsyncIterable<Uint8Array>,
    options: WriteOptions,
  ): Promise<WrittenFile> {
    const dir = await this.ensureDir(id);
    const tempPath = join(dir, `.${finalName}.${crypto.randomUUID()}${PARTIAL_SUFFIX}`);
    // Hashed, written and synced by a worker (src/storage/file_sinks.ts): this thread only
    // receives. Measured with 256 MiB raw uploads on this project's 2-core VM: 350 MB/s hashing
    // and writing here, 577 MB/s with the worker, and p99 of other requests meanwhile 24 -> 1.5 ms.
    const sink = this.#sinks.open(tempPath);
    const head = new Uint8Array(options.headBytes);
    let size = 0;
    let sha256: string;
    try {
      for await (const chunk of abortable(intoSink(chunks, sink), options.signal)) {
        if (size < head.length) head.set(chunk.subarray(0, head.length - size), size);
        size += chunk.byteLength;
        if (options.maxBytes !== undefined && size > options.maxBytes) {
          throw fileTooLarge(options.maxBytes);
        }
      }
      options.signal?.throwIfAborted();
      sha256 = await sink.finish();
    } catch (error) {
      await sink.abort();
      await Deno.remove(tempPath).catch(() => {});
      if (isNoSpace(error)) throw new NoSpace("the disk became full while writing the file");
      throw error;
    }
    return { tempPath, size, sha256, head: head.subarray(0, size) };
  }

  /** Renames a checked temporary file into place (atomically replacing any old file). */
  async commit(written: WrittenFile, finalPath: string): Promise<void> {
    await Deno.rename(written.tempPath, finalPath);
    await syncDir(finalPath.slice(0, finalPath.lastIndexOf(SEP)));
  }

  /** Removes a temporary file that will not be used. */
  async discard(written: WrittenFile): Promise<void> {
    await Deno.remove(written.tempPath).catch(() => {});
  }

  /**
   * Adds a step that runs before a model's file is replaced or removed (the inference engine
   * unloads the model, so that it never runs a file that is going).
   */
  beforeChange(step: (id: string) => Promise<void>): void {
    this.#beforeChange.push(step);
  }

  /** Runs the beforeChange steps for model `id`. */
  async changing(id: string): Promise<void> {
    for (const step of this.#beforeChange) await step(id);
  }

  /** Removes a model's folder and everything in it. */
  async removeModel(id: string): Promise<void> {
    await this.changing(id);
    await Deno.remove(this.dirOf(id), { recursive: true }).catch((error) => {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    });
  }

  /** Size and modification time of a file, or undefined when it does not exist. */
  async stat(path: string): Promise<Deno.FileInfo | undefined> {
    return await Deno.stat(path).catch((error) => {
      if (error instanceof Deno.errors.NotFound) return undefined;
      throw error;
    });
  }

  /** Hex SHA-256 of a file, read in a stream. */
  async hashFile(path: string): Promise<string> {
    const hash = createHash("sha256");
    using file = await Deno.open(path, { read: true });
    for await (const chunk of file.readable) hash.update(chunk);
    return hash.digest("hex");
  }

  /**
   * Removes every temporary file left by an earlier run and returns the names of the model
   * folders found (including folders no record knows of, for the caller to judge).
   */
  async sweep(): Promise<{ folders: string[]; removedPartials: number }> {
    const folders: string[] = [];
    let removedPartials = 0;
    for await (const entry of Deno.readDir(this.root)) {
      if (!entry.isDirectory || !isModelId(entry.name)) continue;
      folders.push(entry.name);
      for await (const inner of Deno.readDir(join(this.root, entry.name))) {
        if (inner.isFile && inner.name.endsWith(PARTIAL_SUFFIX)) {
          await Deno.remove(join(this.root, entry.name, inner.name));
          removedPartials++;
        }
      }
    }
    return { folders, removedPartials };
  }
}

/**
 * The source's chunks, each placed in the sink once the consumer has looked at it (and asks for
 * the next; a byte stream's are in place already, and the consumer throwing ends the write
 * anyway). A byte stream (a raw request body) is read straight into the sink's buffers: a
 * 1 GiB upload then peaked at 115-118 MB of RSS instead of 183-188 MB, the difference being
 * 64 KiB chunks waiting for the garbage collector.
 */
async function* intoSink(
  source: AsyncIterable<Uint8Array>,
  sink: FileSink,
): AsyncGenerator<Uint8Array> {
  const reader = byobReader(source);
  if (!reader) {
    for await (const chunk of source) {
      yield chunk;
      await sink.write(chunk);
    }
    return;
  }
  try {
    while (true) {
      const { value, done } = await reader.read(await sink.space());
      if (done) {
        // The lent buffer comes back with the end too: it still holds the last bytes.
        if (value) sink.filled(value);
        return;
      }
      yield value;
      // After the consumer has read it: filling may send the buffer away, detaching `value`.
      sink.filled(value);
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** Makes a rename durable by syncing its folder; skipped where the platform cannot. */
async function syncDir(dir: string): Promise<void> {
  try {
    using handle = await Deno.open(dir, { read: true });
    await handle.syncData();
  } catch {
    // Not every platform can sync a directory; the rename itself is still atomic.
  }
}
