/**
 * Files written off the main thread: a FileSink takes a transfer's chunks as they arrive and a
 * worker (src/storage/file_sink_worker.ts) hashes, writes and syncs them, while the main thread
 * goes on receiving and serving other requests. Workers are started when a transfer needs one,
 * at most one a core (four at most), and stop after a while without work.
 *
 * @example
 * ```ts
 * import { FileSinks } from "./file_sinks.ts";
 * const sinks = new FileSinks();
 * const sink = sinks.open("/tmp/example.partial");
 * await sink.write(new TextEncoder().encode("hello"));
 * const sha256 = await sink.finish(); // synced and closed
 * sinks.close();
 * ```
 *
 * @module
 */
import { fileURLToPath as fromFileUrl } from "node:url";
import { isExecutable, startRoleWorker } from "../program/self_program.ts";
import type { SinkCommand, SinkReply } from "./file_sink_worker.ts";

/** Bytes a sink may have handed to its worker and not yet seen written. */
const WINDOW_BYTES = 16 << 20;
/** Bytes between two turns given to the event loop (see FileSink.write). */
const YIELD_BYTES = 8 << 20;
/** A worker without files for this long is stopped. */
const IDLE_MS = 10_000;

const WORKER_MODULE = new URL("./file_sink_worker_main.ts", import.meta.url);

/**
 * The files a process that writes through FileSinks must be allowed to read: run as a script,
 * its workers load their modules from the source tree (the single executable has them inside).
 */
export function fileSinkModulePaths(): string[] {
  if (isExecutable() || WORKER_MODULE.protocol !== "file:") return [];
  return [WORKER_MODULE, new URL("./file_sink_worker.ts", import.meta.url)].map((url) =>
    fromFileUrl(url)
  );
}

function startWorker(): Worker {
  if (isExecutable()) return startRoleWorker({ role: "file-sink" }, "inherit");
  return new Worker(WORKER_MODULE.href, { type: "module", name: "file-sink" });
}

/** A worker and the sinks it writes. */
class SinkWorker {
  readonly worker = startWorker();
  readonly sinks = new Map<number, FileSink>();
  idle: ReturnType<typeof setTimeout> | undefined;

  constructor(onGone: (worker: SinkWorker) => void) {
    this.worker.onmessage = ({ data }: MessageEvent<SinkReply>) => this.sinks.get(data.id)?.hear(data);
    this.worker.onerror = (event) => {
      event.preventDefault();
      onGone(this);
      this.stop(new Error(`the file writer failed: ${event.message}`));
    };
  }

  /** Ends the worker; its unfinished sinks fail with `reason`. */
  stop(reason: Error): void {
    clearTimeout(this.idle);
    this.worker.terminate();
    for (const sink of this.sinks.values()) sink.hear({ id: 0, error: reason.message });
    this.sinks.clear();
  }
}

/** The pool of file-sink workers. */
export class FileSinks {
  readonly #workers: SinkWorker[] = [];
  readonly #max: number;
  #nextId = 1;
  #closed = false;

  /** `maxWorkers`: how many files are written at the same time at most (others share). */
  constructor(maxWorkers = Math.min(navigator.hardwareConcurrency || 1, 4)) {
    this.#max = Math.max(1, maxWorkers);
  }

  /** Creates `path` (it must not exist; mode 0600) and returns a sink that writes to it. */
  open(path: string): FileSink {
    if (this.#closed) throw new Error("the file writers are closed");
    const owner = this.#leastBusy();
    clearTimeout(owner.idle);
    const id = this.#nextId++;
    const sink = new FileSink(id, (command, transfer) => {
      owner.worker.postMessage(command, transfer);
    }, () => this.#release(owner, id));
    owner.sinks.set(id, sink);
    sink.send({ id, op: "open", path });
    return sink;
  }

  /** Stops every worker; unfinished files fail. */
  close(): void {
    this.#closed = true;
    for (const worker of this.#workers.splice(0)) {
      worker.stop(new Error("the node is shutting down"));
    }
  }

  #leastBusy(): SinkWorker {
    const least = this.#workers.reduce<SinkWorker | undefined>(
      (best, worker) => (best && best.sinks.size <= worker.sinks.size ? best : worker),
      undefined,
    );
    if (least && (least.sinks.size === 0 || this.#workers.length >= this.#max)) return least;
    const started = new SinkWorker((gone) => this.#forget(gone));
    this.#workers.push(started);
    return started;
  }

  #forget(worker: SinkWorker): void {
    const at = this.#workers.indexOf(worker);
    if (at >= 0) this.#workers.splice(at, 1);
  }

  #release(owner: SinkWorker, id: number): void {
    owner.sinks.delete(id);
    if (owner.sinks.size > 0 || !this.#workers.includes(owner)) return;
    const idle = setTimeout(() => {
      this.#forget(owner);
      owner.worker.terminate();
    }, IDLE_MS);
    Deno.unrefTimer(idle);
    owner.idle = idle;
  }
}

/** One file being written by a worker. */
export class FileSink {
  readonly #id: number;
  readonly #post: (command: SinkCommand, transfer: Transferable[]) => void;
  readonly #release: () => void;
  #posted = 0;
  #written = 0;
  #sinceYield = 0;
  #error: Error | undefined;
  #waiter: PromiseWithResolvers<void> | undefined;
  #ended: PromiseWithResolvers<string> | undefined;
  /** Resolves when the worker has closed the file, whichever way. */
  readonly #closed = Promise.withResolvers<void>();

  constructor(
    id: number,
    post: (command: SinkCommand, transfer: Transferable[]) => void,
    release: () => void,
  ) {
    this.#id = id;
    this.#post = post;
    this.#release = release;
  }

  /** @internal Sends a command to the worker. */
  send(command: SinkCommand, transfer: Transferable[] = []): void {
    this.#post(command, transfer);
  }

  /**
   * Hands `chunk` to the worker. With `transfer`, a chunk that spans its whole buffer is moved
   * rather than copied (the caller must not use it again). Resolves at once unless the worker
   * is a window behind, so memory stays bounded when the disk is slower than the network.
   *
   * Every 8 MiB it also waits for a macrotask: a body's buffered chunks resolve as microtasks,
   * and without a break the event loop would serve nothing else while a transfer runs.
   */
  async write(chunk: Uint8Array, transfer = false): Promise<void> {
    if (this.#error) throw this.#error;
    if (chunk.byteLength === 0) return;
    const whole = transfer && chunk.byteOffset === 0 &&
      chunk.buffer instanceof ArrayBuffer && chunk.byteLength === chunk.buffer.byteLength;
    // A copy by the constructor: a Node Buffer's slice() is a view, not a copy.
    const data = whole ? chunk.buffer as ArrayBuffer : new Uint8Array(chunk).buffer;
    this.#post({ id: this.#id, op: "write", data }, [data]);
    this.#posted += chunk.byteLength;
    this.#sinceYield += chunk.byteLength;
    if (this.#sinceYield >= YIELD_BYTES) {
      this.#sinceYield = 0;
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
    while (this.#posted - this.#written > WINDOW_BYTES) {
      this.#waiter = Promise.withResolvers();
      await this.#waiter.promise;
    }
  }

  /** Waits until everything is written and synced; resolves with the file's hex SHA-256. */
  finish(): Promise<string> {
    if (this.#error) return Promise.reject(this.#error);
    this.#ended = Promise.withResolvers();
    this.#post({ id: this.#id, op: "finish" }, []);
    return this.#ended.promise;
  }

  /**
   * Closes the file without syncing it; resolves once it is closed, so that the caller can
   * remove it knowing that nothing queued for it will create or write it again.
   */
  async abort(): Promise<void> {
    if (!this.#error) this.#post({ id: this.#id, op: "abort" }, []);
    await this.#closed.promise;
  }

  /** @internal What the worker said about this file. */
  hear(reply: SinkReply): void {
    if ("written" in reply) {
      this.#written = reply.written;
      this.#waiter?.resolve();
      return;
    }
    if ("sha256" in reply) {
      this.#ended?.resolve(reply.sha256);
    } else if ("error" in reply) {
      this.#error ??= new Error(reply.error);
      this.#ended?.reject(this.#error);
      this.#waiter?.reject(this.#error);
    }
    this.#release();
    this.#closed.resolve();
  }
}
