/**
 * The file sink's worker: it creates, hashes, writes and syncs the files that the main thread
 * streams to it (src/storage/file_sinks.ts), so that a transfer's disk and hashing work runs
 * beside the thread that receives the bytes and answers every other request.
 *
 * The worker is a module of its own made from `serveFileSink`'s text (a blob URL): it reads no
 * file, so the node needs no permission for it, and the single executable does not load a
 * second copy of the whole program for it. So `serveFileSink` uses nothing from outside itself
 * but what it is handed.
 *
 * A file's bytes go through three stages after the main thread has received them: the hash
 * (SHA-256, about 500 CPU µs per MB on the machines measured), the write into the page cache
 * (200-1,500 µs per MB: the kernel's copy, and reclaiming memory when the cache is full) and the
 * flush to the disk. Taking turns on one thread, a file goes at the pace of the hash and the
 * write added up: about 700 MB/s on a 16-core machine where `dd conv=fsync` gave 1,200. So, given
 * the cores (`SinkOptions.overlap`), each buffer's write is queued on Tokio's blocking threads
 * (an async write, in order, one at a time) before this thread hashes the same bytes, and the
 * buffer goes back once both are done: the pace is the slower of the two. One async write per
 * 512 KiB buffer costs little; per 64 KiB chunk it was the bound (about 300 MB/s). With fewer
 * cores the writes stay synchronous here, as the third thread has no core of its own.
 *
 * While it writes, the data already written is synced in the background (an async `fdatasync`
 * at most one at a time, through a second descriptor of the file so that the writes do not
 * queue behind it), so that the final sync finds little left to flush: the disk works while the
 * bytes are still arriving instead of after.
 *
 * @module
 */
import type { createHash, Hash } from "node:crypto";

/** What the main thread sends. */
export type SinkCommand =
  | { id: number; op: "open"; path: string }
  /** The first `length` bytes of `data` are the file's next; `data` is handed back after. */
  | { id: number; op: "write"; data: ArrayBuffer; length: number }
  | { id: number; op: "finish" }
  | { id: number; op: "abort" };

/** What the worker answers. */
export type SinkReply =
  /** Writes' buffers, written and handed back for the next bytes. */
  | { id: number; returned: ArrayBuffer[] }
  /** The file is complete, synced and closed. */
  | { id: number; sha256: string }
  /** The file is closed as it was, on the main thread's word. */
  | { id: number; closed: true }
  /** The file failed (its message, for the caller to classify); the file is closed. */
  | { id: number; error: string };

/** A file being written. */
interface OpenFile {
  /** Where the bytes are written, one write at a time, in order. */
  file: Deno.FsFile;
  /**
   * The same file opened a second time, for the syncs: Deno runs a file's async operations one
   * at a time, so a background sync through `file` would hold up the writes queued behind it.
   * Opened before the first write, it is told of every writeback error since (Linux reports
   * such an error to each open file that was open when it happened).
   */
  syncer: Deno.FsFile;
  hash: Hash;
  /** Buffers hashed and waiting for their write, in order; the first is being written. */
  queue: Array<{ data: ArrayBuffer; length: number }>;
  /** The write running, if any. */
  writing: Promise<void> | undefined;
  unsynced: number;
  syncing: Promise<void> | undefined;
  /** A write's or a background sync's failure: the file fails with it. */
  failed: unknown;
  /** The main thread aborted the file: the writes still queued are skipped. */
  aborted: boolean;
  /** Buffers written, to hand back RETURN_BATCH at a time. */
  done: ArrayBuffer[];
}

/** A worker's global scope (lib.deno.worker's, which this file is not type-checked with). */
interface WorkerScope {
  onmessage: ((event: MessageEvent<SinkCommand>) => void) | null;
  postMessage(message: SinkReply, transfer?: Transferable[]): void;
}

/** How the worker writes. */
export interface SinkOptions {
  /**
   * Write on Tokio's blocking threads while this thread hashes the same buffer (async writes),
   * instead of hashing then writing here (sync writes). The hash and the write then overlap:
   * a file goes at the pace of the slower of the two instead of their sum, given a core for each.
   */
  overlap: boolean;
  /**
   * Bytes written between background syncs (default 8 MiB overlapping, 32 MiB taking turns;
   * 0: none, only the final one). For measurements (scripts/bench/sink_throughput.ts).
   */
  syncEveryBytes?: number;
}

/** A blob URL of the worker's module; revoke it once the worker has started. */
export function fileSinkWorkerUrl(options: SinkOptions): string {
  const source = `import { createHash } from "node:crypto";\n` +
    `(${serveFileSink})(createHash, ${JSON.stringify(options)});\n`;
  return URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
}

/**
 * Takes SinkCommands until the worker is terminated. A file that fails is closed and forgotten
 * after its error is sent: the commands still on their way for it are dropped.
 */
export function serveFileSink(hashOf: typeof createHash, options: SinkOptions): void {
  /**
   * Written buffers go back this many at a time: each message wakes the main thread, and with
   * one per 512 KiB buffer the main thread spent about twice the CPU of a bare body read (4 at
   * a time: about 15% less on the main thread, 2-core VM). A file's sink waits for buffers only
   * when all of its 16 are here (WINDOW_BUFFERS), so a batch always fills: keep this below that.
   */
  const RETURN_BATCH = 4;
  /**
   * Bytes written between background syncs. With the writes on other threads, syncing every
   * 8 MiB left the final sync of a 1 GiB file 11-29 ms instead of 46-53 at 32 MiB (2-core VM);
   * hashing and writing on this thread keeps the 32 MiB measured before.
   */
  const SYNC_BYTES = options.syncEveryBytes === 0
    ? Infinity
    : options.syncEveryBytes ?? (options.overlap ? 8 : 32) << 20;
  const scope = self as unknown as WorkerScope;
  const files = new Map<number, OpenFile>();

  /** Writes all of `bytes` (a file's write may take fewer bytes than it was given). */
  const writeAll = async (open: OpenFile, bytes: Uint8Array) => {
    for (let done = 0; done < bytes.byteLength;) {
      done += await open.file.write(bytes.subarray(done));
    }
  };
  const writeAllSync = (open: OpenFile, bytes: Uint8Array) => {
    for (let done = 0; done < bytes.byteLength;) {
      done += open.file.writeSync(bytes.subarray(done));
    }
  };

  /** Counts bytes that reached the page cache, starting a background sync every SYNC_BYTES. */
  const written = (open: OpenFile, bytes: number) => {
    open.unsynced += bytes;
    if (open.unsynced < SYNC_BYTES || open.syncing !== undefined) return;
    open.unsynced = 0;
    // Kept, not left for the final sync to report: Linux reports a writeback error once per
    // open file, so after a failed background sync the final one would succeed.
    open.syncing = open.syncer.syncData().catch((error) => {
      open.failed ??= error;
    }).finally(() => open.syncing = undefined);
  };

  /** Hands `data` back, with the others written, once RETURN_BATCH are (or at once: `flush`). */
  const giveBack = (id: number, open: OpenFile, data: ArrayBuffer | undefined, flush = false) => {
    if (data) open.done.push(data);
    if (open.done.length === 0 || (open.done.length < RETURN_BATCH && !flush)) return;
    const returned = open.done.splice(0);
    scope.postMessage({ id, returned }, returned);
  };

  /** Closes the file once nothing runs on it any more; for a file already out of `files`. */
  const close = async (open: OpenFile) => {
    while (open.writing) await open.writing;
    await open.syncing;
    for (const file of [open.file, open.syncer]) {
      try {
        file.close();
      } catch { /* closed already */ }
    }
  };

  /** Fails the file `id` (once): closes it and tells the main thread. */
  const fail = async (id: number, open: OpenFile, error: unknown) => {
    open.failed ??= error;
    if (files.get(id) !== open) return; // finished, aborted or failed already
    files.delete(id);
    await close(open);
    // No buffers go back: the sink would fill them again before it hears of the failure.
    scope.postMessage({ id, error: error instanceof Error ? error.message : String(error) });
  };

  /**
   * Starts writing the first queued buffer unless a write runs; each write starts the next as
   * it ends. Started here, at once, not from a promise's callback: that would wait for this
   * thread to finish hashing, and the two would take turns again.
   */
  const writeNext = (id: number, open: OpenFile) => {
    if (open.writing || open.queue.length === 0 || open.failed || open.aborted) return;
    const { data, length } = open.queue[0];
    open.writing = writeAll(open, new Uint8Array(data, 0, length)).then(() => {
      open.queue.shift();
      written(open, length);
      giveBack(id, open, data);
    }, (error) => {
      // Not awaited: the failure waits for this write to end before closing the file.
      fail(id, open, error);
    }).finally(() => {
      open.writing = undefined;
      writeNext(id, open);
    });
  };

  /** Hashes and writes the first `length` bytes of `data`, then hands `data` back. */
  const write = (id: number, open: OpenFile, data: ArrayBuffer, length: number) => {
    if (open.failed) throw open.failed;
    const bytes = new Uint8Array(data, 0, length);
    if (!options.overlap) {
      open.hash.update(bytes);
      writeAllSync(open, bytes);
      written(open, length);
      giveBack(id, open, data);
      return;
    }
    // Queued before the hash, so that a blocking thread writes while this one hashes; the
    // buffer goes back once both are done (the hash is, by the time a write's promise settles).
    open.queue.push({ data, length });
    writeNext(id, open);
    open.hash.update(bytes);
  };

  scope.onmessage = async ({ data: command }) => {
    const { id } = command;
    if (command.op === "open") {
      let file: Deno.FsFile | undefined;
      try {
        file = Deno.openSync(command.path, { write: true, createNew: true, mode: 0o600 });
        const syncer = Deno.openSync(command.path, { write: true });
        // The syncs go through this second descriptor, opened right after the file was created
        // in the node's own 0700 folder, so nothing else can put another file at the path
        // between the two opens. (Comparing their inodes would need read access, which this
        // worker does not have: it may only write under models/.)
        files.set(id, {
          file,
          syncer,
          hash: hashOf("sha256"),
          queue: [],
          writing: undefined,
          unsynced: 0,
          syncing: undefined,
          failed: undefined,
          aborted: false,
          done: [],
        });
      } catch (error) {
        file?.close();
        scope.postMessage({ id, error: error instanceof Error ? error.message : String(error) });
      }
      return;
    }
    const open = files.get(id);
    if (!open) return;
    try {
      if (command.op === "write") return write(id, open, command.data, command.length);
      files.delete(id);
      if (command.op === "abort") {
        open.aborted = true;
        await close(open);
        // Buffers left unwritten go back with the others, for the next file.
        open.done.push(...open.queue.splice(0).map(({ data }) => data));
        giveBack(id, open, undefined, true);
        scope.postMessage({ id, closed: true });
        return;
      }
      while (open.writing) await open.writing;
      await open.syncing;
      if (open.failed) throw open.failed;
      open.syncer.syncDataSync();
      await close(open);
      // Every buffer goes back before the file's end, for the next file (file_sinks.ts).
      giveBack(id, open, undefined, true);
      scope.postMessage({ id, sha256: open.hash.digest("hex") });
    } catch (error) {
      files.set(id, open);
      await fail(id, open, error);
    }
  };
}
