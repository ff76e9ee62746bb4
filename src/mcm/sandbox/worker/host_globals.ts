/**
 * What the sandboxed worker takes of its globals before the microservice's code runs, which
 * then no longer sees them (sandbox_globals.ts) and could replace what is shared: its channel's
 * input and output (the process's stdin and stdout, or a port its client's process relays),
 * the port to its host, and its own CPU time and memory for the watchdog (watchdog.ts).
 *
 * A thread's CPU time comes only from Node's `process.threadCpuUsage`, and loading Deno's Node
 * layer into a worker costs it about 3 MiB, a third of a container in a client's process; it
 * cannot be loaded later, once the microservice's code changed the globals it needs. So a
 * worker measures its CPU time only when the host's setup says so (a container with a process
 * of its own); in a client's process the host shares the process's CPU time out among its
 * workers by how late their reports come (tenant_host.ts).
 *
 * For the same reason nothing here touches the global timers: in Deno `setTimeout` and
 * `setInterval` are Node's, and reading either global loads Node's timers into the worker
 * (about 1.5 MiB of a container's 8). The reports' timer waits on a shared cell instead
 * (Atomics.waitAsync, V8's own), and the channel's port is read and written as is, without
 * web streams around it (another 0.8 MiB a worker).
 *
 * A client's process is started with V8's `gc` exposed (container_process.ts), which the
 * sandbox takes here, and the microservice then finds undefined (sandbox_globals.ts): once
 * the code loaded, the worker collects the garbage of its start and gives back the heap pages
 * it no longer uses (`compact`, when: heap_compaction.ts), 1.5 MiB of a container. V8 itself
 * would do it only after a full collection, which a small microservice may never need.
 *
 * Everything it returns runs on intrinsics taken before the microservice's code (intrinsics.ts),
 * so that replacing a global or a prototype method cannot stop or bend the reports.
 *
 * @module
 */
import {
  AtomicsWaitAsync,
  copyBytes,
  JSONStringify,
  onSettled,
  performanceNow,
  PromiseResolve,
  PromiseWithResolvers,
  SafeInt32Array,
  SafeSharedArrayBuffer,
  SafeUint8Array,
  TextEncoderPrototypeEncode,
  TypedArrayPrototypeGetBuffer,
  uncurry,
  whenSettled,
} from "./intrinsics.ts";
import { encodeFrame } from "./channel_frames.ts";

/**
 * The channel's bytes over a port: Uint8Array messages, null for the end of the input; or, as
 * its first message, the token with which to connect to the node's socket instead (then only the
 * host's pings come here, and their pongs go back here).
 */
export interface BytePort {
  postMessage(message: Uint8Array | null, transfer?: Transferable[]): void;
  onmessage: ((event: MessageEvent<Uint8Array | string | null>) => void) | null;
}

const socketEncoder = new TextEncoder();

/** Where the channel's bytes go: the process's stdout, or the port its client's process relays. */
export interface ByteSink {
  write(bytes: Uint8Array): Promise<unknown>;
}

/** What the sandbox took. */
export interface Taken {
  /**
   * Reads the channel's input: `onBytes` for each chunk as it comes, `onEnd` once at its end
   * (callbacks, not an async iterator: `await` is the microservice's to break).
   */
  input(onBytes: (bytes: Uint8Array) => void, onEnd: () => void): void;
  stdout: ByteSink;
  /** Posts to the host. */
  post(message: unknown): void;
  inspect(value: unknown): string;
  /** Microseconds of CPU this thread used; undefined unless measured (measureCpu). */
  threadCpu(): number | undefined;
  /** Measures this thread's CPU time from now: before the microservice's code runs. */
  measureCpu(): void;
  /** Bytes of this worker's heap in use plus its external memory. */
  heap(): number;
  /**
   * Calls `callback` every `ms` from now on, on a timer the microservice's code cannot reach
   * (should it break promises, its reports stop, and the watchdog ends it for its silence).
   */
  every(ms: number, callback: () => void): void;
  /** performance.now, as it was. */
  now(): number;
  /**
   * Collects the worker's garbage and returns its unused heap pages to the system (V8's
   * last-resort collection: a few milliseconds); nothing where V8's `gc` is not exposed.
   */
  compact(): void;
}

/** V8's `gc` (--expose-gc), with the options this module uses. */
type Collect = (options: { type: "major"; execution: "sync"; flavor: "last-resort" }) => void;

interface NodeProcess {
  threadCpuUsage(): { user: number; system: number };
}

/**
 * The channel's input and output over a port (a client's process relays them): the messages
 * as they come, and a write that posts. Not web streams, which cost a worker 0.8 MiB.
 */
function portChannel(port: BytePort): Pick<Taken, "input" | "stdout"> {
  const post = uncurry(port.postMessage as (message: unknown, transfer: Transferable[]) => void);
  return {
    input(onBytes, onEnd) {
      port.onmessage = (event) => {
        // An own property of the event Deno makes, not a getter the microservice could replace.
        const bytes = event.data;
        if (bytes === null) onEnd();
        else if (typeof bytes !== "string") onBytes(bytes);
      };
    },
    stdout: {
      write(bytes) {
        // Our own copy, moved: the writer may reuse what it wrote.
        const copy = copyBytes(bytes);
        post(port, copy, [TypedArrayPrototypeGetBuffer(copy) as ArrayBuffer]);
        return PromiseResolve(undefined);
      },
    },
  };
}

/**
 * What the channel needs of its connection: its stream reader's `read` and writer's `write`,
 * taken before any user code. Not Deno.Conn's own `read` and `write`, which `await` (and so
 * look up the promise's `constructor`, then a `then` the microservice could have replaced):
 * web streams run on Deno's primordials, as the process's stdin and stdout do.
 */
interface SocketConn {
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  /** The bytes of a read were handled: their buffer is read into next. */
  done(bytes: Uint8Array): void;
  write(bytes: Uint8Array): Promise<void>;
}

/**
 * Bytes read from the node's socket at once, at most: one buffer, read into again and again
 * (a BYOB reader), so reading makes no garbage (an allocating reader's 64 KiB per read is
 * external memory, charged to the container until V8 collects it).
 */
const SOCKET_READ_BYTES = 16 * 1024;

/** Takes the stream reader and writer of `conn`, as SocketConn. */
function socketConn(conn: Deno.Conn): SocketConn {
  const reader = conn.readable.getReader({ mode: "byob" });
  const readInto = uncurry(
    reader.read as (
      this: typeof reader,
      view: Uint8Array,
    ) => Promise<ReadableStreamReadResult<Uint8Array>>,
  );
  let buffer = TypedArrayPrototypeGetBuffer(new SafeUint8Array(SOCKET_READ_BYTES));
  const writer = conn.writable.getWriter();
  const write = uncurry(writer.write as (this: typeof writer, bytes: Uint8Array) => Promise<void>);
  return {
    // The buffer moves into each read and comes back with its bytes (`done` below).
    read: () => readInto(reader, new SafeUint8Array(buffer)),
    done: (bytes) => void (buffer = TypedArrayPrototypeGetBuffer(bytes)),
    write: (bytes) => write(writer, bytes),
  };
}

/**
 * The channel over the node's socket (a client's process whose node listens for its workers:
 * src/mcm/runtime/channel_socket.ts), once the port brings the token to open it with (the
 * connection is made before the node's `take`, so before any user code); the port then
 * carries the host's pings only, each answered at once with a pong on the port (busy_probe.ts
 * times them). A first message of bytes instead: the host relays, as portChannel.
 */
function socketChannel(port: BytePort, socket: string): Pick<Taken, "input" | "stdout"> {
  const connect = Deno.connect;
  const post = uncurry(port.postMessage as (message: unknown, transfer: Transferable[]) => void);
  const pong = encodeFrame(JSONStringify({ t: "pong" }));
  const connected = PromiseWithResolvers<SocketConn>();
  let conn: SocketConn | undefined;
  const relay = portChannel(port);
  let mode: "socket" | "relay" | undefined;
  let opening = false;
  return {
    input(onBytes, onEnd) {
      let ended = false;
      const end = () => {
        if (ended) return;
        ended = true;
        onEnd();
      };
      const open = (token: string) => {
        onSettled(connect({ transport: "unix", path: socket }), (made) => {
          const taken = socketConn(made);
          // Its bytes handled before the next read, which reuses their buffer (the channel's
          // decoder copies what it keeps).
          const next = () =>
            onSettled(taken.read(), (result) => {
              if (result.done) return end();
              onBytes(result.value);
              taken.done(result.value);
              next();
            }, end);
          onSettled(taken.write(TextEncoderPrototypeEncode(socketEncoder, token)), () => {
            conn = taken;
            connected.resolve(taken);
            next();
          }, end);
        }, end);
      };
      port.onmessage = (event) => {
        const data = event.data;
        if (data === null) return end();
        // The first message says which: a token (connect), or the channel's bytes (relayed).
        mode ??= typeof data === "string" ? "socket" : "relay";
        if (mode === "relay") {
          if (typeof data !== "string") onBytes(data);
        } else if (typeof data === "string") {
          if (!opening) open(data);
          opening = true;
        } else {
          // A ping of the host's: answered on its own port, at once.
          const copy = copyBytes(pong);
          post(port, copy, [TypedArrayPrototypeGetBuffer(copy) as ArrayBuffer]);
        }
      };
    },
    stdout: {
      write(bytes) {
        if (conn) return conn.write(bytes);
        if (mode !== "socket") return relay.stdout.write(bytes);
        const done = PromiseWithResolvers<void>();
        onSettled(connected.promise, (ready) => {
          onSettled(ready.write(bytes), () => done.resolve(), done.reject);
        }, done.reject);
        return done.promise;
      },
    },
  };
}

/** The process's stdin and stdout (a container with a process of its own). */
function stdioChannel(): Pick<Taken, "input" | "stdout"> {
  const reader = Deno.stdin.readable.getReader();
  const read = uncurry(
    reader.read as (this: typeof reader) => Promise<ReadableStreamReadResult<Uint8Array>>,
  );
  const writer = Deno.stdout.writable.getWriter();
  const write = uncurry(writer.write as (this: typeof writer, bytes: Uint8Array) => Promise<void>);
  return {
    input(onBytes, onEnd) {
      const next = () =>
        onSettled(read(reader), (result) => {
          if (result.done) return onEnd();
          next();
          onBytes(result.value);
        }, onEnd);
      next();
    },
    stdout: { write: (bytes) => write(writer, bytes) },
  };
}

/**
 * A repeating timer of V8's own (see the module's text): a wait on a cell nobody notifies,
 * which ends after `ms`, again and again. Not `await`, which looks up the promise's
 * `constructor` (and then a `then` the microservice could have replaced): whenSettled.
 */
function every(ms: number, callback: () => void): void {
  const cell = new SafeInt32Array(new SafeSharedArrayBuffer(4));
  const wait = () => {
    const { value } = AtomicsWaitAsync(cell, 0, 0, ms);
    whenSettled(value as Promise<string>, tick);
  };
  const tick = () => {
    wait();
    callback();
  };
  wait();
}

/**
 * Takes what the sandbox needs; `link` is the host, `pipe` the channel's port if any, `socket`
 * the node's socket where the port brings a token to connect with.
 */
export function takeHostGlobals(
  link: { postMessage(message: unknown): void },
  pipe?: BytePort,
  socket?: string,
): Taken {
  const global = globalThis as unknown as { Deno: typeof Deno };
  // Not read unless measuring: reading it loads Node's layer (see the module's text).
  const processGetter = Object.getOwnPropertyDescriptor(globalThis, "process")?.get;
  const inspect = global.Deno.inspect;
  const memory = global.Deno.memoryUsage;
  const collect = (globalThis as { gc?: Collect }).gc;
  let cpu: NodeProcess["threadCpuUsage"] | undefined;
  return {
    ...(pipe && socket ? socketChannel(pipe, socket) : pipe ? portChannel(pipe) : stdioChannel()),
    post: link.postMessage.bind(link),
    inspect: (value) => inspect(value, { depth: 4, colors: false }),
    threadCpu: () => {
      if (!cpu) return undefined;
      const { user, system } = cpu();
      return user + system;
    },
    measureCpu: () => {
      if (cpu || !processGetter) return;
      const process = processGetter.call(globalThis) as NodeProcess;
      cpu = process.threadCpuUsage.bind(process);
    },
    heap: () => {
      const usage = memory();
      return usage.heapUsed + usage.external;
    },
    every,
    now: performanceNow,
    compact: () => collect?.({ type: "major", execution: "sync", flavor: "last-resort" }),
  };
}
