/**
 * Files written off the main thread: a FileSink takes a transfer's chunks as they arrive and a
 * worker (src/storage/file_sink_worker.ts) hashes, writes and syncs them, while the main thread
 * goes on receiving and serving other requests. From 4 cores on, a worker hashes while Tokio's
 * blocking threads write the same buffers, so that the receive, the hash and the write each have
 * a thread (see file_sink_worker.ts). Workers are started when a transfer needs one, at most one
 * a core (four at most), and stop after a while without work.
 *
 * @example
 * ```ts
 * import { FileSinks } from "./file_sinks.ts";
 * const sinks = new FileSinks("/tmp");
 * const sink = sinks.open("/tmp/example.partial");
 * await sink.write(new TextEncoder().encode("hello"));
 * const sha256 = await sink.finish(); // synced and closed
 * sinks.close();
 * ```
 *
 * @module
 */
import {
  fileSinkWorkerUrl,
  type SinkCommand,
  type SinkOptions,
  type SinkReply,
} from "./file_sink_worker.ts";

export type { SinkOptions };
import { BufferPool } from "./file_sinks_pool.ts";

/**
 * The size of the buffers that carry a file's bytes to its worker, and how many a file may use
 * (8 MiB in flight at most). Measured writing 1 GiB through a sink, three rounds each: 1 MiB x 8
 * gave 384-580 MB/s, 256 KiB x 16 630-666, 512 KiB x 16 675-696 (finer pieces overlap the two
 * threads better; fewer in flight starve the worker).
 */
const BUFFER_BYTES = 512 << 10;
const WINDOW_BUFFERS = 16;
/** Bytes between two turns given to the event loop (see FileSink.write). */
const YIELD_BYTES = 8 << 20;
/**
 * From this many cores on, a file's hash and its writes run on two threads (see SinkOptions):
 * with the thread that receives the bytes, the client's and the kernel's work, fewer cores have
 * none to spare for a third stage, and taking turns on one thread costs no thread hops.
 */
const OVERLAP_CORES = 4;
/** A worker without files for this long is stopped. */
const IDLE_MS = 10_000;

/**
 * A worker that may write under `root` and do nothing else: not read, not connect, not run
 * anything (it creates its files with `createNew`, which needs write permission only).
 */
function startWorker(root: string, options: SinkOptions): Worker {
  const url = fileSinkWorkerUrl(options);
  try {
    return new Worker(url, {
      type: "module",
      name: "file-sink",
      deno: {
        permissions: {
          read: false,
          write: [root],
          net: false,
          env: false,
          run: false,
          sys: false,
          ffi: false,
          import: false,
        },
      },
    });
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** A worker and the sinks it writes. */
class SinkWorker {
  readonly worker: Worker;
  readonly sinks = new Map<number, FileSink>();
  idle: ReturnType<typeof setTimeout> | undefined;

  constructor(root: string, options: SinkOptions, onGone: (worker: SinkWorker) => void) {
    this.worker = startWorker(root, options);
    this.worker.onmessage = ({ data }: MessageEvent<SinkReply>) =>
      this.sinks.get(data.id)?.hear(data);
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
  readonly #root: string;
  readonly #max: number;
  readonly #options: SinkOptions;
  /** Write buffers that finished files left, for the next ones. */
  readonly #pool = new BufferPool(BUFFER_BYTES, WINDOW_BUFFERS);
  #nextId = 1;
  #closed = false;

  /**
   * Sinks for files under `root` (the only place the workers may write); `maxWorkers`: how many
   * files are written at the same time at most (others share a worker); `options`: how a worker
   * writes (by default, hash and writes overlap from OVERLAP_CORES cores on).
   */
  constructor(
    root: string,
    maxWorkers = Math.min(navigator.hardwareConcurrency || 1, 4),
    options: SinkOptions = { overlap: (navigator.hardwareConcurrency || 1) >= OVERLAP_CORES },
  ) {
    this.#root = root;
    this.#max = Math.max(1, maxWorkers);
    this.#options = options;
  }

  /** Creates `path` (it must not exist; mode 0600) and returns a sink that writes to it. */
  open(path: string): FileSink {
    if (this.#closed) throw new Error("the file writers are closed");
    const owner = this.#leastBusy();
    clearTimeout(owner.idle);
    const id = this.#nextId++;
    const post = (command: SinkCommand, transfer: Transferable[]) =>
      owner.worker.postMessage(command, transfer);
    const sink = new FileSink(id, post, () => this.#release(owner, id), this.#pool);
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
    const started = new SinkWorker(this.#root, this.#options, (gone) => this.#forget(gone));
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
      if (this.#workers.length === 0) this.#pool.clear();
    }, IDLE_MS);
    Deno.unrefTimer(idle);
    owner.idle = idle;
  }
}

/**
 * One file being written by a worker. The bytes travel in buffers of BUFFER_BYTES that go to the
 * worker and come back to be filled again, at most WINDOW_BUFFERS of them: the memory a transfer
 * holds is fixed, whatever the file's size and the disk's speed. Moving the callers' own chunks
 * instead saved a copy but not memory: a request body's chunk, once moved, was freed only when
 * the main thread's garbage collector came by, and a 1 GiB upload peaked at 620 MB of RSS.
 */
export class FileSink {
  readonly #id: number;
  readonly #post: (command: SinkCommand, transfer: Transferable[]) => void;
  readonly #release: () => void;
  readonly #pool: BufferPool;
  /** Buffers back from the worker, ready to fill. */
  readonly #free: ArrayBuffer[] = [];
  #allocated = 0;
  #current: Uint8Array | undefined;
  #used = 0;
  #sinceYield = 0;
  #error: Error | undefined;
  #waiter: PromiseWithResolvers<void> | undefined;
  #ended: PromiseWithResolvers<string> | undefined;
  /** Resolves when the worker has closed the file, whichever way. */
  readonly #closed = Promise.withResolvers<void>();

  /**
   * @internal Made by FileSinks.open: `post` sends to the file's worker, `release` is called
   * once the worker has closed the file, `pool` lends the buffers and takes them back.
   */
  constructor(
    id: number,
    post: (command: SinkCommand, transfer: Transferable[]) => void,
    release: () => void,
    pool: BufferPool,
  ) {
    this.#id = id;
    this.#post = post;
    this.#release = release;
    this.#pool = pool;
  }

  /** @internal Sends a command to the worker. */
  send(command: SinkCommand, transfer: Transferable[] = []): void {
    this.#post(command, transfer);
  }

  /**
   * Copies `chunk` for the worker. Resolves at once unless every buffer is with the worker, so
   * memory stays bounded when the disk is slower than the network (or the event loop is due a
   * turn).
   */
  async write(chunk: Uint8Array): Promise<void> {
    for (let offset = 0; offset < chunk.byteLength;) {
      if (this.#error) throw this.#error;
      const buffer = this.#current ??= await this.#nextBuffer();
      const take = Math.min(chunk.byteLength - offset, buffer.byteLength - this.#used);
      buffer.set(chunk.subarray(offset, offset + take), this.#used);
      this.#used += take;
      offset += take;
      if (this.#used === buffer.byteLength) this.#send();
    }
    this.#sinceYield += chunk.byteLength;
    await this.#turn();
  }

  /**
   * Every 8 MiB, waits for a macrotask: a body's buffered chunks resolve as microtasks, and
   * without a break the event loop would serve nothing else while a transfer runs.
   */
  async #turn(): Promise<void> {
    if (this.#sinceYield < YIELD_BYTES) return;
    this.#sinceYield = 0;
    await new Promise((resolve) => setTimeout(resolve, 0));
  }

  /**
   * The free part of the buffer being filled, for a BYOB read (a byte stream reads straight into
   * it, with no copy and no garbage); hand back what the read returned to `filled`.
   */
  async space(): Promise<Uint8Array> {
    if (this.#error) throw this.#error;
    // A BYOB transfer needs the turns too: without them other requests' p99 was 99 ms during a
    // 1 GiB raw upload, against 6 ms idle.
    await this.#turn();
    const buffer = this.#current ??= await this.#nextBuffer();
    return buffer.subarray(this.#used);
  }

  /** Takes back the view a BYOB read filled (its buffer is the one `space` lent, moved). */
  filled(view: Uint8Array): void {
    this.#current = new Uint8Array(view.buffer as ArrayBuffer);
    this.#used = view.byteOffset + view.byteLength;
    this.#sinceYield += view.byteLength;
    if (this.#used === this.#current.byteLength) this.#send();
  }

  /** Waits until everything is written and synced; resolves with the file's hex SHA-256. */
  finish(): Promise<string> {
    if (this.#error) return Promise.reject(this.#error);
    if (this.#used > 0) this.#send();
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
    if ("returned" in reply) {
      this.#free.push(...reply.returned);
      this.#waiter?.resolve();
      return;
    }
    // The buffers back from the worker go to the next file (the worker returns every one before
    // it finishes a file); the one being filled too once the file is complete.
    for (const buffer of this.#free.splice(0)) this.#pool.give(buffer);
    if ("sha256" in reply) {
      if (this.#current) this.#pool.give(this.#current.buffer as ArrayBuffer);
      this.#current = undefined;
      this.#ended?.resolve(reply.sha256);
    } else if ("error" in reply) {
      this.#error ??= new Error(reply.error);
      this.#ended?.reject(this.#error);
      this.#waiter?.reject(this.#error);
    }
    this.#release();
    this.#closed.resolve();
  }

  /** Moves the filled part of the current buffer to the worker. */
  #send(): void {
    const data = this.#current!.buffer as ArrayBuffer;
    this.#post({ id: this.#id, op: "write", data, length: this.#used }, [data]);
    this.#current = undefined;
    this.#used = 0;
  }

  /** A free buffer, a new one while fewer than WINDOW_BUFFERS exist, or the next one back. */
  async #nextBuffer(): Promise<Uint8Array> {
    while (this.#free.length === 0) {
      // The file failed: its buffers went to the pool and no more will come back.
      if (this.#error) throw this.#error;
      if (this.#allocated < WINDOW_BUFFERS) {
        this.#allocated++;
        return new Uint8Array(this.#pool.take());
      }
      this.#waiter = Promise.withResolvers();
      await this.#waiter.promise;
    }
    return new Uint8Array(this.#free.pop()!);
  }
}
