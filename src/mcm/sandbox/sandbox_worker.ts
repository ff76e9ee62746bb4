/**
 * The sandbox: a Web Worker without any Deno permission, inside the container process. It speaks
 * the channel with the node directly over the process's stdin and stdout (in a client's process,
 * which hosts several containers, over a port its host relays: tenant_host.ts), evaluates the
 * microservice's bundle as a classic script (never as a module graph, whose literal imports
 * would be loaded with the process's permissions), and serves each request with it.
 *
 * @module
 */
import { concatBytes } from "../../tunnel/bytes.ts";
import { FrameDecoder, FrameWriter } from "../../tunnel/pipe_frames.ts";
import { type MuxMessage, StreamMux } from "../../tunnel/stream_mux.ts";
import { outboundClient, syncStorage } from "./context_services.ts";
import { type ContextInfo, mimikContext } from "./mimik_context.ts";
import { type NodeAnswer, nodeAwareFetch, NodeCalls } from "./node_calls.ts";
import { type Incoming, loadModel, type Model, type Outgoing } from "./programming_models.ts";
import { droppedLine, LogRate } from "./log_rate.ts";
import { installGlobals, type LogLevel } from "./sandbox_globals.ts";
import { type BytePort, takeHostGlobals, type Taken } from "./host_globals.ts";
import { compactionSchedule } from "./heap_compaction.ts";
import { type CpuSample, REQUESTS_BEGUN, REQUESTS_IN_FLIGHT, SAMPLE_MS } from "./watchdog.ts";

/** What the container process's host hands the worker once the node said which container. */
interface Setup {
  code: string;
  storagePort: MessagePort;
  storageAnswers: SharedArrayBuffer;
  outboundPort: MessagePort;
  /** Shared with the host's watchdog: requests in flight, and requests begun (REQUESTS_*). */
  activity: SharedArrayBuffer;
  /** Whether this thread measures its own CPU time (host_globals.ts). */
  measureCpu: boolean;
}

/** The node's first message (spec/mcm.yaml): the env and info of this container. */
interface StartMessage {
  t: "start";
  env: Record<string, string>;
  info: ContextInfo;
  maxBodyBytes: number;
  fetchTimeoutMs: number;
}

interface RequestMessage {
  t: "req";
  s: number;
  method: string;
  path: string;
  headers: [string, string][];
  body: boolean;
  inline?: string;
}

class BodyTooLarge extends Error {}

/**
 * The worker name under which the sandbox expects a port to its host as its first message
 * (the single executable, where host and sandbox are siblings).
 */
export const LINKED_SANDBOX = "microservice (linked)";

/**
 * The worker name under which the sandbox expects a port to its host and a port for its
 * channel's bytes as its first message (a client's process: tenant_host.ts).
 */
export const GROUP_SANDBOX = "microservice (in a client's process)";

/** Where the setup comes from and "exit" goes: the worker's scope, or a port to the host. */
export interface HostLink {
  postMessage(message: unknown): void;
  onmessage: ((event: MessageEvent) => void) | null;
}

let taken: Taken;
const evaluate = eval;
/** The shared activity counters (watchdog.ts), set at setup. */
let activity: Int32Array;

async function readBody(body: BodyInit | null, max: number): Promise<Uint8Array | null> {
  if (body === null) return null;
  if (body instanceof Uint8Array) {
    if (body.length > max) throw new BodyTooLarge();
    return body;
  }
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body as ReadableStream<Uint8Array>) {
    size += chunk.length;
    if (size > max) throw new BodyTooLarge();
    parts.push(chunk);
  }
  return concatBytes(parts);
}

function errorOutgoing(status: number, message: string): Outgoing {
  return {
    status,
    headers: [["content-type", "application/json; charset=utf-8"]],
    body: new TextEncoder().encode(JSON.stringify({ error: { code: status, message } })),
  };
}

function describe(error: unknown): string {
  return error instanceof Error
    ? (error.stack ?? `${error.name}: ${error.message}`)
    : String(error);
}

/** Loads the bundle: the model, or the reason it cannot serve. */
function boot(
  setup: Setup,
  start: StartMessage,
  log: (level: LogLevel, line: string) => void,
  calls: NodeCalls,
) {
  const outbound = outboundClient(setup.outboundPort, start.fetchTimeoutMs);
  const fetcher = nodeAwareFetch(outbound.fetch, calls, start.info.httpPort);
  installGlobals(fetcher as typeof fetch, log, taken.inspect);
  const storage = syncStorage(setup.storagePort, setup.storageAnswers);
  const context = mimikContext(start.env, start.info, storage, fetcher, calls);
  const global = globalThis as Record<string, unknown>;
  global.mimikModule = { exports: undefined };
  evaluate(setup.code);
  const exported = (global.mimikModule as { exports?: unknown }).exports ??
    global.__edgenode_module;
  return loadModel(exported, { ...start.env }, context, {
    origin: `http://localhost:${start.info.httpPort}`,
    readFile: outbound.readFile,
    saveFile: (name, bytes) =>
      storage.saveFile(name, (bytes as Uint8Array & { toBase64(): string }).toBase64()),
  });
}

/**
 * Reports this thread's CPU use to the host's watchdog, from a timer the code cannot stop, and
 * compacts the worker's heap when due (heap_compaction.ts).
 */
function reportCpu(): void {
  let due = taken.now() + SAMPLE_MS;
  const compaction = compactionSchedule(taken.now(), activity, taken);
  const report = () => {
    const now = taken.now();
    compaction(now);
    // How late the timer came: the thread was busy then (the host's CPU share: tenant_host.ts).
    const lagMs = Math.max(0, now - due);
    due = now + SAMPLE_MS;
    taken.post({ micros: taken.threadCpu(), heap: taken.heap(), lagMs } satisfies CpuSample);
  };
  report();
  taken.every(SAMPLE_MS, report);
}

/**
 * Serves one request. `ended` aborts when the node aborts it (its client went away, or its time
 * ran out): the calls to the node made for it are cancelled (request_scope.ts).
 */
async function serve(
  message: RequestMessage,
  mux: StreamMux,
  model: Model,
  start: StartMessage,
  log: (level: LogLevel, line: string) => void,
  ended: AbortSignal,
): Promise<void> {
  const s = message.s;
  const body = mux.bodyOf(s, message);
  let out: Outgoing;
  // Counted in shared memory, not by message: a request costs the watchdog nothing.
  Atomics.add(activity, REQUESTS_IN_FLIGHT, 1);
  Atomics.add(activity, REQUESTS_BEGUN, 1);
  try {
    const incoming: Incoming = {
      method: message.method,
      path: message.path,
      headers: message.headers,
      body: await readBody(body, start.maxBodyBytes),
      signal: ended,
    };
    out = await model.handle(incoming);
  } catch (error) {
    if (error instanceof BodyTooLarge) {
      out = errorOutgoing(413, `the request body is over ${start.maxBodyBytes} bytes`);
    } else {
      // The error's text may hold the microservice's secrets: it goes to the log, which only
      // the deployment's credentials read, and the caller gets the reference to it.
      const reference = crypto.randomUUID().slice(0, 8);
      log("error", `[${reference}] ${message.method} ${message.path} failed: ${describe(error)}`);
      out = errorOutgoing(
        500,
        `the microservice failed (logged as ${reference}; GET /mcm/v1/containers/<id>/logs)`,
      );
    }
  }
  // A whole body is the end of the microservice's work; a stream ends when it is sent.
  const streamed = out.body instanceof ReadableStream;
  if (!streamed) Atomics.sub(activity, REQUESTS_IN_FLIGHT, 1);
  try {
    await mux.send(s, {
      t: "res",
      s,
      status: out.status,
      headers: out.headers,
      body: out.body !== null,
    }, out.body);
  } catch {
    // The node aborted the stream (the client left, or the time limit passed).
  }
  if (mux.receiving(s)) mux.cancel(s, "the response is complete");
  if (streamed) Atomics.sub(activity, REQUESTS_IN_FLIGHT, 1);
}

/**
 * The channel's frames as they arrive on stdin, a chunk's at once (text: a JSON message;
 * binary: body data). Not one frame per iteration: the frames of one chunk are handled in one
 * turn, so the answers they lead to leave together (FrameWriter batches a turn's frames).
 */
async function* chunkFrames(
  stdin: AsyncIterable<Uint8Array>,
): AsyncGenerator<(string | Uint8Array)[]> {
  const decoder = new FrameDecoder();
  for await (const chunk of stdin) {
    const frames = decoder.push(chunk);
    if (frames.length > 0) yield frames;
  }
}

/**
 * Runs the channel: waits for the node's `take` (which container this process is to be: it goes
 * to the host, which answers with the setup), then serves until the node closes the channel. A
 * spare process waits here, its worker loaded, until the node hands it a container.
 */
async function run(setupFromHost: Promise<Setup>): Promise<void> {
  const incoming = chunkFrames(taken.stdin);
  const first = await incoming.next();
  const head = first.done ? undefined : first.value.shift();
  const take = typeof head === "string" ? JSON.parse(head) : {};
  // No container for it (the node stopped a spare, or broke the protocol): the process ends.
  if (take.t !== "take") return taken.post("exit");
  taken.post(take);
  const setup = await setupFromHost;
  // Before any of the microservice's code: it needs the globals as they are (host_globals.ts).
  if (setup.measureCpu) taken.measureCpu();
  const writer = new FrameWriter((bytes) => taken.stdout.write(bytes), () => taken.post("exit"));
  const send = (message: Record<string, unknown>) => writer.send(JSON.stringify(message));
  const rate = new LogRate();
  const log = (level: LogLevel, line: string) => {
    if (
      rate.admit(
        line.length,
        (count) => send({ t: "log", level: "warn", message: droppedLine(count) }),
      )
    ) {
      send({ t: "log", level, message: line });
    }
  };
  const mux = new StreamMux((frame) => writer.send(frame));
  const calls = new NodeCalls(send);
  /** The requests being served, by stream: aborted when the node aborts the stream. */
  const serving = new Map<number, AbortController>();
  let model: Model | undefined;
  let start: StartMessage | undefined;
  activity = new Int32Array(setup.activity);
  const handle = (frame: string | Uint8Array) => {
    if (typeof frame !== "string") return mux.onData(frame);
    const message = JSON.parse(frame);
    if (message.t === "req" && model && start) {
      const ended = new AbortController();
      serving.set(message.s, ended);
      serve(message, mux, model, start, log, ended.signal)
        .finally(() => serving.delete(message.s));
    } else if (message.t === "ping") {
      send({ t: "pong" });
    } else if (message.t === "answer" || message.t === "event") {
      calls.onAnswer(message as NodeAnswer);
    } else if (message.t === "start" && !start) {
      start = message as StartMessage;
      try {
        model = boot(setup, start, log, calls);
        // The first report once the code loaded: the watchdog's load allowance ends.
        reportCpu();
        send({ t: "ready", model: model.kind });
      } catch (error) {
        send({ t: "fatal", message: describe(error).slice(0, 4096) });
      }
    } else {
      if (message.t === "abort") serving.get(message.s)?.abort();
      mux.onControl(message as MuxMessage);
    }
  };
  // The frames that came with the take (the node sends `start` right after it).
  if (!first.done) first.value.forEach(handle);
  for await (const frames of incoming) frames.forEach(handle);
  // The node closed the channel: it is stopping this container.
  taken.post("exit");
}

/**
 * Makes this worker the sandbox: takes the process's stdin and stdout (or `pipe`, a port for
 * the channel's bytes), passes the node's `take` to the host on `link` (by default the
 * worker's own scope, whose parent is the host), waits for the host's setup message and runs
 * the microservice until the node closes the channel.
 */
export function serveSandbox(link: HostLink = self as unknown as HostLink, pipe?: BytePort): void {
  taken = takeHostGlobals(link, pipe);
  const setup = Promise.withResolvers<Setup>();
  link.onmessage = (event: MessageEvent<Setup>) => {
    link.onmessage = null;
    setup.resolve(event.data);
  };
  run(setup.promise).catch((error) => {
    console.error(`the container channel failed: ${describe(error)}`);
    taken.post("exit");
  });
}
