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
 * Writes are synchronous here: this thread has nothing else to do, and one async write per
 * 64 KiB chunk costs a thread hop each (measured on Deno 2.9.6: about 300 MB/s at most). While
 * it writes, the data already written is synced in the background (an async `fdatasync` at most
 * one at a time), so that the final sync finds little left to flush: the disk works while the
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
  /** A write's buffer, written and handed back for the next bytes. */
  | { id: number; returned: ArrayBuffer }
  /** The file is complete, synced and closed. */
  | { id: number; sha256: string }
  /** The file is closed as it was, on the main thread's word. */
  | { id: number; closed: true }
  /** The file failed (its message, for the caller to classify); the file is closed. */
  | { id: number; error: string };

/** A file being written. */
interface OpenFile {
  file: Deno.FsFile;
  hash: Hash;
  unsynced: number;
  syncing: Promise<void> | undefined;
  /** A background sync's failure, thrown at the next write or at the finish. */
  failed: unknown;
}

/** A worker's global scope (lib.deno.worker's, which this file is not type-checked with). */
interface WorkerScope {
  onmessage: ((event: MessageEvent<SinkCommand>) => void) | null;
  postMessage(message: SinkReply, transfer?: Transferable[]): void;
}

/** A blob URL of the worker's module; revoke it once the worker has started. */
export function fileSinkWorkerUrl(): string {
  const source = `import { createHash } from "node:crypto";\n(${serveFileSink})(createHash);\n`;
  return URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
}

/**
 * Takes SinkCommands until the worker is terminated. A file that fails is closed and forgotten
 * after its error is sent: the commands still on their way for it are dropped.
 */
export function serveFileSink(hashOf: typeof createHash): void {
  /** Bytes written between background syncs. */
  const SYNC_BYTES = 32 << 20;
  const scope = self as unknown as WorkerScope;
  const files = new Map<number, OpenFile>();
  const failed = (id: number, error: unknown) =>
    scope.postMessage({ id, error: error instanceof Error ? error.message : String(error) });

  /** Hashes and writes `bytes`, starting a background sync every SYNC_BYTES. */
  const write = (open: OpenFile, bytes: Uint8Array) => {
    if (open.failed) throw open.failed;
    open.hash.update(bytes);
    for (let done = 0; done < bytes.byteLength;) {
      done += open.file.writeSync(bytes.subarray(done));
    }
    open.unsynced += bytes.byteLength;
    if (open.unsynced >= SYNC_BYTES && open.syncing === undefined) {
      open.unsynced = 0;
      // Kept, not left for the final sync to report: Linux reports a writeback error once per
      // open file, so after a failed background sync the final one would succeed.
      open.syncing = open.file.syncData().catch((error) => {
        open.failed ??= error;
      }).finally(() => open.syncing = undefined);
    }
  };

  scope.onmessage = async ({ data: command }) => {
    const { id } = command;
    if (command.op === "open") {
      try {
        const file = Deno.openSync(command.path, { write: true, createNew: true, mode: 0o600 });
        const hash = hashOf("sha256");
        files.set(id, { file, hash, unsynced: 0, syncing: undefined, failed: undefined });
      } catch (error) {
        failed(id, error);
      }
      return;
    }
    const open = files.get(id);
    if (!open) return;
    try {
      if (command.op === "write") {
        write(open, new Uint8Array(command.data, 0, command.length));
        scope.postMessage({ id, returned: command.data }, [command.data]);
        return;
      }
      files.delete(id);
      await open.syncing;
      if (command.op === "finish") {
        if (open.failed) throw open.failed;
        open.file.syncDataSync();
      }
      open.file.close();
      scope.postMessage(
        command.op === "finish" ? { id, sha256: open.hash.digest("hex") } : { id, closed: true },
      );
    } catch (error) {
      files.delete(id);
      await open.syncing;
      try {
        open.file.close();
      } catch { /* closed already */ }
      failed(id, error);
    }
  };
}
