/**
 * The sandbox: a Web Worker without any Deno permission, inside the container process. It speaks
 * the channel with the node directly over the process's stdin and stdout (in a client's process,
 * which hosts several containers, over a port its host relays: tenant_host.ts), evaluates the
 * microservice's bundle as a classic script (never as a module graph, whose literal imports
 * would be loaded with the process's permissions), and serves each request with it.
 *
 * @module
 */
import { ChannelDecoder, ChannelWriter } from "./channel_frames.ts";
import { channelCodec } from "./channel_codec.ts";
import { type MuxMessage, StreamMux } from "../../../tunnel/stream_mux.ts";
import { outboundClient, syncStorage } from "./context_services.ts";
import type { StartMessage, TakeMessage, WatchdogLimits } from "../channel_protocol.ts";
import { type CpuSample, SAMPLE_MS, type SandboxSetup } from "../host_protocol.ts";
import { mimikContext } from "./mimik_context.ts";
import { type NodeAnswer, nodeAwareFetch, NodeCalls } from "./node_calls.ts";
import { loadModel, type Model } from "./programming_models.ts";
import { droppedLine, LogRate } from "../log_rate.ts";
import { installGlobals, type LogLevel } from "./sandbox_globals.ts";
import { type BytePort, takeHostGlobals, type Taken } from "./host_globals.ts";
import { compactionSchedule } from "./heap_compaction.ts";
import {
  ArrayPrototypePush,
  ArrayPrototypeShift,
  DateNow,
  JSONParse,
  JSONStringify,
  MapPrototypeDelete,
  MapPrototypeGet,
  MapPrototypeSet,
  MathMax,
  SafeMap,
  StringPrototypeSlice,
  whenSettled,
} from "./intrinsics.ts";
import { RequestActivity } from "./request_activity.ts";
import { describe, type RequestMessage, serve } from "./serve_request.ts";
import { chargeMemory, type MemoryCharge } from "./memory_charge.ts";
import { neutralPaths, neutralStacks } from "./stack_paths.ts";

/** The node's `take`, as far as the worker reads it: the container's limits (an older node's has none). */
type TakeAsRead = Pick<TakeMessage, "t"> & { settings?: { limits?: WatchdogLimits } };

/** Where the setup comes from and "exit" goes: the worker's scope, or a port to the host. */
export interface HostLink {
  postMessage(message: unknown): void;
  onmessage: ((event: MessageEvent) => void) | null;
}

let taken: Taken;
const evaluate = eval;
/** The requests in flight (request_activity.ts), set at setup. */
let activity: RequestActivity;
/** What the sandbox charges beyond V8's heap count (memory_charge.ts), set at boot. */
let memory: MemoryCharge | undefined;
/** Without a `take` that says (an older node): the defaults of container_env.ts. */
const DEFAULT_LIMITS = { executionMs: 30_000, heapBytes: 128 * 2 ** 20 };

/** Loads the bundle: the model, or the reason it cannot serve. */
function boot(
  setup: SandboxSetup,
  start: StartMessage,
  log: (level: LogLevel, line: string) => void,
  calls: NodeCalls,
  heapBytes: number,
) {
  memory = chargeMemory(globalThis, heapBytes, taken.heap);
  const outbound = outboundClient(setup.outboundPort, start.fetchTimeoutMs);
  const fetcher = nodeAwareFetch(
    outbound.fetch,
    calls,
    start.info.httpPort,
    start.fetchTimeoutMs,
  );
  installGlobals(fetcher as typeof fetch, log, taken.inspect);
  const storage = syncStorage(setup.storagePort, setup.storageAnswers);
  const context = mimikContext(start.env, start.info, storage, fetcher, calls);
  const global = globalThis as Record<string, unknown>;
  global.mimikModule = { exports: undefined };
  // Its frames named as the microservice's, not by the sandbox's path (stack_paths.ts).
  const image = encodeURIComponent(start.info.serviceType || "microservice");
  evaluate(`${setup.code}\n//# sourceURL=microservice:/${image}/index.js\n`);
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
function reportCpu(counters: Int32Array): void {
  let due = taken.now() + SAMPLE_MS;
  const compaction = compactionSchedule(taken.now(), counters, taken);
  const report = () => {
    const now = taken.now();
    activity.expire(now);
    compaction(now);
    // How late the timer came: the thread was busy then (the host's CPU share: tenant_host.ts).
    const lagMs = MathMax(0, now - due);
    due = now + SAMPLE_MS;
    const heap = taken.heap() + (memory?.charged() ?? 0);
    taken.post({ micros: taken.threadCpu(), heap, lagMs } satisfies CpuSample);
  };
  report();
  taken.every(SAMPLE_MS, report);
}

/**
 * Runs the channel: waits for the node's `take` (which container this process is to be: it goes
 * to the host, which answers with the setup), then serves until the node closes the channel. A
 * spare process waits here, its worker loaded, until the node hands it a container. The frames
 * of one chunk are handled in one turn, so the answers they lead to leave together (the
 * writer batches a turn's frames).
 */
async function run(setupFromHost: Promise<SandboxSetup>): Promise<void> {
  const decoder = new ChannelDecoder();
  /** Frames that came before the worker could handle them (the take, and what came with it). */
  const early: (string | Uint8Array)[] = [];
  // deno-lint-ignore prefer-const -- set once the container is set up; read by the input first
  let handle: ((frame: string | Uint8Array) => void) | undefined;
  let closed = false;
  const firstFrame = Promise.withResolvers<void>();
  const ended = () => {
    closed = true;
    // The node closed the channel: it is stopping this container.
    if (handle) taken.post("exit");
    firstFrame.resolve();
  };
  taken.input((chunk) => {
    if (closed) return;
    let frames: (string | Uint8Array)[];
    try {
      frames = decoder.push(chunk);
    } catch {
      return ended();
    }
    for (let i = 0; i < frames.length; i++) {
      if (handle) handle(frames[i]);
      else ArrayPrototypePush(early, frames[i]);
    }
    if (early.length > 0) firstFrame.resolve();
  }, ended);
  await firstFrame.promise;
  const head = ArrayPrototypeShift(early);
  const take: TakeAsRead = typeof head === "string" ? JSONParse(head) : {};
  // No container for it (the node stopped a spare, or broke the protocol): the process ends.
  if (take.t !== "take") return taken.post("exit");
  taken.post(take);
  const limits = take.settings?.limits;
  const executionMs = limits ? limits.busySilenceMs - 2000 : DEFAULT_LIMITS.executionMs;
  const heapBytes = limits?.heapBytes ?? DEFAULT_LIMITS.heapBytes;
  const setup = await setupFromHost;
  // Before any of the microservice's code: it needs the globals as they are (host_globals.ts).
  if (setup.measureCpu) taken.measureCpu();
  const writer = new ChannelWriter((bytes) => taken.stdout.write(bytes), () => taken.post("exit"));
  const send = (message: Record<string, unknown>) => writer.send(JSONStringify(message));
  const rate = new LogRate(DateNow);
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
  const mux = new StreamMux((frame) => writer.send(frame), { codec: channelCodec });
  const calls = new NodeCalls(send);
  /** The requests being served, by stream: aborted when the node aborts the stream. */
  const serving = new SafeMap<number, AbortController>();
  let model: Model | undefined;
  let start: StartMessage | undefined;
  const counters = new Int32Array(setup.activity);
  activity = new RequestActivity(counters, executionMs);
  const handleFrame = (frame: string | Uint8Array) => {
    if (typeof frame !== "string") return mux.onData(frame);
    const message = JSONParse(frame);
    if (message.t === "req" && model && start) {
      const ended = new AbortController();
      const s = (message as RequestMessage).s;
      MapPrototypeSet(serving, s, ended);
      const served = { mux, model, maxBodyBytes: start.maxBodyBytes, log, activity };
      whenSettled(serve(message, served, ended.signal), () => {
        if (MapPrototypeGet(serving, s) === ended) MapPrototypeDelete(serving, s);
      });
    } else if (message.t === "ping") {
      send({ t: "pong" });
    } else if (message.t === "answer" || message.t === "event") {
      calls.onAnswer(message as NodeAnswer);
    } else if (message.t === "start" && !start) {
      start = message as StartMessage;
      try {
        model = boot(setup, start, log, calls, heapBytes);
        // The first report once the code loaded: the watchdog's load allowance ends.
        reportCpu(counters);
        send({ t: "ready", model: model.kind });
      } catch (error) {
        send({ t: "fatal", message: StringPrototypeSlice(describe(error), 0, 4096) });
      }
    } else {
      if (message.t === "abort") {
        // Aborted by the node: no longer in flight, whether or not its handler settles.
        activity.end(message.s);
        MapPrototypeGet(serving, message.s)?.abort();
      }
      mux.onControl(message as MuxMessage);
    }
  };
  // A frame the microservice's replaced globals make fail fails alone: the channel goes on.
  handle = (frame) => {
    try {
      handleFrame(frame);
    } catch (error) {
      log("error", `the channel dropped a frame: ${describe(error)}`);
    }
  };
  // The frames that came with the take (the node sends `start` right after it).
  for (let i = 0; i < early.length; i++) handle(early[i]);
  if (closed) taken.post("exit");
}

/**
 * Makes this worker the sandbox: takes the process's stdin and stdout (or `pipe`, a port for
 * the channel's bytes or for the token to connect to the node's `socket` with), passes the node's `take` to the host on `link` (by default the
 * worker's own scope, whose parent is the host), waits for the host's setup message and runs
 * the microservice until the node closes the channel.
 */
export function serveSandbox(
  link: HostLink = self as unknown as HostLink,
  pipe?: BytePort,
  socket?: string,
): void {
  taken = takeHostGlobals(link, pipe, socket);
  neutralStacks(neutralPaths(import.meta.url));
  const setup = Promise.withResolvers<SandboxSetup>();
  link.onmessage = (event: MessageEvent<SandboxSetup>) => {
    link.onmessage = null;
    setup.resolve(event.data);
  };
  run(setup.promise).catch((error) => {
    console.error(`the container channel failed: ${describe(error)}`);
    taken.post("exit");
  });
}
