/**
 * One container and the node's channel to it (spec/mcm.yaml, "Requests to microservices"): a
 * pipe to a worker in its client's process, to a warm spare or to a process of its own
 * (container_placement.ts), the start handshake (`take`, then `start`), requests with a
 * deadline, pings, and its end. What the container says is untrusted: every message is
 * validated, and a malformed one ends the container.
 *
 * @module
 */
import {
  type ContainerCall,
  ContainerCallSchema,
  ContainerCancelSchema,
  ContainerFatalSchema,
  ContainerLogSchema,
  ContainerReadySchema,
  ContainerTookSchema,
} from "../../../gen/mcm/validators.ts";
import { ResponseMessageSchema } from "../../../gen/hub/validators.ts";
import { UpstreamFailed, UpstreamTimeout } from "../../errors/mod.ts";
import { MessageError, MUX, parseMessage } from "../../tunnel/messages.ts";
import { MuxRequests, type RequestHead } from "../../tunnel/mux_requests.ts";
import { FrameDecoder, FrameWriter } from "../../tunnel/pipe_frames.ts";
import { StreamMux } from "../../tunnel/stream_mux.ts";
import { checkBundle, LoadError } from "../images/bundle_check.ts";
import { CallAnswers, CreditError } from "../services/container_calls.ts";
import type { ContainerPlacement, Placement } from "./container_placement.ts";
import type { ContainerUsage } from "./container_usage.ts";
import { verdictReason } from "./process_blame.ts";
import { RequestDeadlines } from "./request_deadlines.ts";
import { plainResponse } from "./response_check.ts";
import {
  type ContainerPipe,
  exitReason,
  ProcessEnded,
  type ProcessProfile,
  processProfile,
} from "./container_process.ts";
import type {
  ContextInfo,
  HostSettings,
  StartMessage,
  TakeMessage,
} from "../sandbox/channel_protocol.ts";

/** What a container process may send. */
const FROM_CONTAINER = {
  ...MUX,
  res: ResponseMessageSchema,
  ready: ContainerReadySchema,
  log: ContainerLogSchema,
  fatal: ContainerFatalSchema,
  call: ContainerCallSchema,
  cancel: ContainerCancelSchema,
  took: ContainerTookSchema,
};

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/** How to run one container. */
export interface ChannelOptions {
  /** The container's id (its siblings' records name it when it brings their process down). */
  id: string;
  /** The folder of container_host.js and sandbox_worker.js (BundleFiles.runtimeDir). */
  runtimeDir: string;
  bundlePath: string;
  storageDir: string;
  storageBytes: number;
  memoryMb: number;
  /** Hosts outbound HTTP may reach; undefined: any. */
  outboundHosts: string[] | undefined;
  /** Where outbound requests may go, and the process's limits. */
  host: HostSettings;
  env: Record<string, string>;
  info: ContextInfo;
  maxBodyBytes: number;
  fetchTimeoutMs: number;
  /**
   * How long the code may take to load (mcm.loadTimeoutSeconds); absent: DEFAULT_LOAD_TIMEOUT_MS.
   * Code that throws while loading fails at once, whatever this says.
   */
  loadTimeoutMs?: number;
  /** Hears the microservice's log lines and the process's stderr. */
  onLog(level: string, message: string): void;
  /**
   * Answers the microservice's calls to its node; throws a DomainError for a refusal, and answers
   * a call that streams or takes a while with a StreamingAnswer (container_calls.ts).
   */
  onCall(call: ContainerCall): Promise<unknown>;
  /** The container's client (containers of one client may share a process). */
  client: string;
  /** Where the container runs (a process of its own, or its client's). */
  placement: ContainerPlacement;
  /** A process of its own even where its client's containers share one (quarantined). */
  alone?: boolean;
  /** It brought down its client's shared process (tenant_process.ts judged so). */
  onBroughtDown?(why: string, suspect?: boolean): void;
}

/** How a container's channel ended. */
export interface ChannelEnd {
  /** Why, in a user's words. */
  reason: string;
  /**
   * Another container brought down the client's process this one shared: its end is not its
   * own failure (no back-off, not counted in its restarts).
   */
  bystander: boolean;
  /** The exit code the container ended with (watchdog.ts's for its own limits). */
  code: number | null;
}

/** The flags a container of `options` needs its process to have (container_process.ts). */
export function profileOf(options: ChannelOptions): ProcessProfile {
  const { memoryMb, outboundHosts, host } = options;
  return processProfile(memoryMb, outboundHosts, host.networks, host.nodeAddresses);
}

export { LoadError };

/**
 * spec/config.yaml's mcm.loadTimeoutSeconds default: a load takes about 0.1 s here (0.4 s at
 * worst on a busy 2-core machine) and more than 10 s under user-mode emulation (issue 38).
 */
export const DEFAULT_LOAD_TIMEOUT_MS = 60_000;
/**
 * The process's own watch (watchdog.ts) lets a loading thread be silent this much longer than
 * the node waits, so that a slow load ends with the node's message, which names the setting.
 */
const LOAD_SILENCE_MARGIN_MS = 1000;

/** The process's settings: `host`, its watch waiting for the code as long as the node does. */
function hostSettingsOf(options: ChannelOptions): HostSettings {
  const loadTimeoutMs = options.loadTimeoutMs ?? DEFAULT_LOAD_TIMEOUT_MS;
  const limits = { ...options.host.limits, loadSilenceMs: loadTimeoutMs + LOAD_SILENCE_MARGIN_MS };
  return { ...options.host, limits };
}

/** A running container process. */
export class ContainerChannel {
  readonly #child: ContainerPipe;
  readonly #stdin: WritableStreamDefaultWriter<Uint8Array>;
  readonly #writer: FrameWriter;
  readonly #mux: StreamMux;
  readonly #requests: MuxRequests;
  readonly #ready = Promise.withResolvers<void>();
  readonly #calls: CallAnswers;
  #pongs: (() => void)[] = [];
  /** The deadlines of its requests in flight (one sweep, not a timer per request). */
  readonly #deadlines = new RequestDeadlines();
  #stderrTail = "";
  readonly #placed: Placement;
  /** Resolves with why the process ended. */
  readonly exited: Promise<ChannelEnd>;

  /** Where it went when no process had to start for it (a warm spare, its client's process). */
  readonly warm: string | undefined;

  private constructor(options: ChannelOptions, placed: Placement) {
    this.#child = placed.pipe;
    this.#placed = placed;
    this.warm = placed.warm ? placed.where : undefined;
    this.#stdin = this.#child.stdin.getWriter();
    const direct = this.#child.direct;
    this.#writer = new FrameWriter(
      direct ? (bytes) => direct.write(bytes) : (bytes) => this.#stdin.write(bytes),
      () => this.kill(),
    );
    this.#mux = new StreamMux((frame) => this.#writer.send(frame));
    this.#requests = new MuxRequests(this.#mux);
    this.#calls = new CallAnswers(
      (text) => this.#writer.send(text),
      options.onCall,
      (message) => options.onLog("node", message),
    );
    placed.shared?.describe({
      id: options.id,
      serving: () => this.#requests.waiting,
      memoryLimitBytes: options.memoryMb * 2 ** 20,
      broughtDown: (why, suspect) => options.onBroughtDown?.(why, suspect),
    });
    const readingOut = this.#readStdout(options);
    const readingErr = this.#readStderr(options);
    this.exited = this.#child.status.then(async (status) => {
      await Promise.allSettled([readingOut, readingErr]);
      const gone = new UpstreamFailed("the microservice's process ended during the request");
      this.#requests.failAll(gone);
      this.#mux.abortAll(gone.message);
      this.#calls.cancelAll();
      this.#deadlines.stop();
      const verdict = placed.shared?.verdict();
      const { reason, byCode } = verdict
        ? verdictReason(verdict)
        : exitReason(status, this.#stderrTail, options.memoryMb);
      this.#ready.reject(new ProcessEnded(reason, byCode));
      return { reason, bystander: verdict?.culprit === false, code: status.code };
    });
    this.#ready.promise.catch(() => {});
    this.#writer.send(JSON.stringify(
      {
        t: "take",
        bundle: options.bundlePath,
        storageDir: options.storageDir,
        storageBytes: options.storageBytes,
        settings: hostSettingsOf(options),
      } satisfies TakeMessage,
    ));
    this.#writer.send(JSON.stringify(
      {
        t: "start",
        env: options.env,
        info: options.info,
        maxBodyBytes: options.maxBodyBytes,
        fetchTimeoutMs: options.fetchTimeoutMs,
      } satisfies StartMessage,
    ));
  }

  /**
   * Starts a container and waits until its code loaded. LoadError when the code does not load;
   * another error when its process dies or it does not answer within `loadTimeoutMs`. A
   * container placed warm (a spare, its client's process) whose process ended before the code
   * loaded (it may have died while waiting), not by the code's own limits, is placed once more
   * in a process started for it.
   */
  static async open(options: ChannelOptions): Promise<ContainerChannel> {
    const timeoutMs = options.loadTimeoutMs ?? DEFAULT_LOAD_TIMEOUT_MS;
    await checkBundle(options.bundlePath);
    const request = {
      client: options.client,
      profile: profileOf(options),
      bundlePath: options.bundlePath,
      storageDir: options.storageDir,
      cold: false,
      alone: options.alone,
    };
    const first = options.placement.place(request);
    if (!first.warm) return await ContainerChannel.#loaded(options, first, timeoutMs);
    try {
      return await ContainerChannel.#loaded(options, first, timeoutMs);
    } catch (error) {
      if (!(error instanceof ProcessEnded) || error.byCode) throw error;
      const which = first.where === "a warm spare" ? "the warm spare" : "its client's process";
      options.onLog("node", `${which} failed (${error.message}); starting a process`);
    }
    const cold = options.placement.place({ ...request, cold: true });
    return await ContainerChannel.#loaded(options, cold, timeoutMs);
  }

  /** The channel of a started process, once its code loaded (see open). */
  static async #loaded(
    options: ChannelOptions,
    placed: Placement,
    timeoutMs: number,
  ): Promise<ContainerChannel> {
    const channel = new ContainerChannel(options, placed);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new Error(
              `the code did not load within ${timeoutMs / 1000} s (mcm.loadTimeoutSeconds)`,
            ),
          ),
        timeoutMs,
      );
    });
    try {
      await Promise.race([channel.#ready.promise, late]);
      return channel;
    } catch (error) {
      channel.kill();
      await channel.exited;
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  async #readStdout(options: ChannelOptions): Promise<void> {
    const decoder = new FrameDecoder();
    const onChunk = (chunk: Uint8Array) => {
      for (const frame of decoder.push(chunk)) {
        if (typeof frame === "string") this.#onMessage(frame, options);
        else this.#mux.onData(frame);
      }
    };
    try {
      if (this.#child.direct) await this.#child.direct.read(onChunk);
      else for await (const chunk of this.#child.stdout) onChunk(chunk);
    } catch (error) {
      options.onLog("node", `the channel broke (${(error as Error).message}); stopping it`);
      this.kill();
    }
  }

  async #readStderr(options: ChannelOptions): Promise<void> {
    for await (const text of this.#child.stderr.pipeThrough(new TextDecoderStream())) {
      this.#stderrTail = (this.#stderrTail + text).slice(-4096);
      for (const line of text.split("\n")) if (line.trim()) options.onLog("error", line);
    }
  }

  #onMessage(frame: string, options: ChannelOptions): void {
    // A response's head, the message of every request, checked by hand when it is plain
    // (response_check.ts); anything else by the generic check, which names what is wrong.
    let parsed: unknown;
    try {
      parsed = JSON.parse(frame);
    } catch {
      throw new MessageError("it sent a bad message: a message is not JSON");
    }
    if (plainResponse(parsed)) return this.#requests.onResponse(parsed);
    let message;
    try {
      message = parseMessage(frame, FROM_CONTAINER);
    } catch (error) {
      if (!(error instanceof MessageError)) throw error;
      throw new MessageError(`it sent a bad message: ${error.message}`);
    }
    switch (message.t) {
      case "res":
        return this.#requests.onResponse(message);
      case "log":
        return options.onLog(message.level, message.message);
      case "ready":
        return this.#ready.resolve();
      case "fatal":
        this.#ready.reject(new LoadError(message.message));
        return this.kill();
      case "pong":
        for (const resolve of this.#pongs.splice(0)) resolve();
        return;
      case "call":
        return void this.#calls.answer(message);
      case "cancel":
        return this.#calls.cancel(message.id);
      case "took":
        try {
          return this.#calls.took(message.id, message.bytes);
        } catch (error) {
          if (!(error instanceof CreditError)) throw error;
          throw new MessageError(`it broke the calls' flow control: ${error.message}`);
        }
      case "ping":
        return this.#writer.send(JSON.stringify({ t: "pong" }));
      case "abort":
        return this.#requests.onAbort(message, "the microservice");
      default:
        this.#mux.onControl(message);
    }
  }

  /**
   * Sends a request; its response must be complete within `deadlineMs`, else a request still
   * waiting gets 504 and a body still streaming is cut off. `onLate` runs then.
   */
  async forward(
    request: Request,
    path: string,
    port: number,
    deadlineMs: number,
    onLate: () => void,
  ): Promise<Response> {
    const headers: [string, string][] = [];
    for (const [name, value] of request.headers) {
      if (!HOP_BY_HOP.has(name)) headers.push([name, value]);
    }
    const head: RequestHead = { method: request.method, path, port, headers };
    const { stream, response } = this.#requests.send(head, request.body);
    const deadline = this.#deadlines.add(deadlineMs, () => {
      onLate();
      this.#requests.abandon(
        stream,
        new UpstreamTimeout(
          `the microservice did not answer within ${
            deadlineMs / 1000
          } s (MCM.MAX_EXECUTION_TIME_SEC)`,
        ),
      );
    });
    let answer: Response;
    try {
      answer = await response;
    } catch (error) {
      deadline.done();
      throw error;
    }
    // Not `answer.body` first: reading it turns a complete body into a stream, which Deno.serve
    // then sends the slow way.
    if (!this.#mux.receiving(stream) || !answer.body) {
      deadline.done();
      return answer;
    }
    const body = answer.body.pipeThrough(
      new TransformStream({
        flush: () => deadline.done(),
        cancel: () => deadline.done(),
      }),
    );
    return new Response(body, answer);
  }

  /** The container's latest figures, as its client's process reports them (none alone). */
  usage(): ContainerUsage | undefined {
    return this.#placed.usage();
  }

  /** Whether the microservice's thread answers a ping within `ms`. */
  ping(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      this.#pongs.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
      this.#writer.send(JSON.stringify({ t: "ping" }));
    });
  }

  /** Ends the process at once. */
  kill(): void {
    try {
      this.#child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
  }

  /** Closes the channel: the process ends by itself, or is killed after `graceMs`. */
  async close(graceMs = 2000): Promise<void> {
    this.#stdin.close().catch(() => {});
    const timer = setTimeout(() => this.kill(), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}
