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
 * @module
 */

/** The channel's bytes over a port: Uint8Array messages, null for the end of the input. */
export interface BytePort {
  postMessage(message: Uint8Array | null, transfer?: Transferable[]): void;
  onmessage: ((event: MessageEvent<Uint8Array | null>) => void) | null;
}

/** What the sandbox took. */
export interface Taken {
  stdin: ReadableStream<Uint8Array>;
  stdout: WritableStreamDefaultWriter<Uint8Array>;
  /** Posts to the host. */
  post(message: unknown): void;
  inspect(value: unknown): string;
  /** Microseconds of CPU this thread used; undefined unless measured (measureCpu). */
  threadCpu(): number | undefined;
  /** Measures this thread's CPU time from now: before the microservice's code runs. */
  measureCpu(): void;
  /** Bytes of this worker's heap in use plus its external memory. */
  heap(): number;
  setInterval: typeof setInterval;
  /** performance.now, as it was. */
  now(): number;
}

interface NodeProcess {
  threadCpuUsage(): { user: number; system: number };
}

/** The channel's input and output over a port (a client's process relays them). */
function portStreams(port: BytePort): Pick<Taken, "stdin" | "stdout"> {
  const stdin = new ReadableStream<Uint8Array>({
    start(controller) {
      port.onmessage = (event) => {
        if (event.data === null) controller.close();
        else controller.enqueue(event.data);
      };
    },
  });
  const stdout = new WritableStream<Uint8Array>({
    write(bytes) {
      // Our own copy, moved: the writer may reuse what it wrote.
      const copy = bytes.slice();
      port.postMessage(copy, [copy.buffer]);
    },
  });
  return { stdin, stdout: stdout.getWriter() };
}

/** Takes what the sandbox needs; `link` is the host, `pipe` the channel's port if any. */
export function takeHostGlobals(
  link: { postMessage(message: unknown): void },
  pipe?: BytePort,
): Taken {
  const global = globalThis as unknown as { Deno: typeof Deno };
  // Not read unless measuring: reading it loads Node's layer (see the module's text).
  const processGetter = Object.getOwnPropertyDescriptor(globalThis, "process")?.get;
  const inspect = global.Deno.inspect;
  const memory = global.Deno.memoryUsage;
  let cpu: NodeProcess["threadCpuUsage"] | undefined;
  return {
    ...(pipe
      ? portStreams(pipe)
      : { stdin: Deno.stdin.readable, stdout: Deno.stdout.writable.getWriter() }),
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
    setInterval,
    now: performance.now.bind(performance),
  };
}
