/**
 * A deployed container kept running: its process is restarted with back-off when it crashes
 * or stops answering, its recent log lines are kept, and requests wait for nothing while it is
 * down (503).
 *
 * @module
 */
import { backoffDelay, type BackoffOptions } from "../async/backoff.ts";
import { Unavailable } from "../errors/mod.ts";
import { type ChannelOptions, ContainerChannel, LoadError } from "./container_channel.ts";
import { ContainerLog, type LogLine } from "./container_log.ts";

/** The states of spec/mcm.yaml's Container. */
export type ContainerState = "starting" | "started" | "restarting" | "failed" | "stopped";

export type { LogLine };
/** Restarts wait 0.25 s, doubling up to 30 s. */
const RESTART_BACKOFF: BackoffOptions = { minTimeout: 250, maxTimeout: 30_000 };
/** A process that ran this long resets the back-off. */
const STABLE_MS = 60_000;
/** A microservice thread that does not answer a ping this soon is stuck. */
const PING_MS = 2000;

/** What a runtime needs besides the channel options. */
export interface RuntimeOptions extends Omit<ChannelOptions, "onLog"> {
  /** The container id, for the node's own log lines. */
  id: string;
  deadlineMs: number;
}

/** A container's process, kept alive. */
export class ContainerRuntime {
  readonly #options: RuntimeOptions;
  #channel: ContainerChannel | undefined;
  #state: ContainerState = "starting";
  #restarts = 0;
  #failures = 0;
  #lastError: string | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #checking = false;
  readonly #log: ContainerLog;

  constructor(options: RuntimeOptions) {
    this.#options = options;
    this.#log = new ContainerLog(options.id);
  }

  get state(): ContainerState {
    return this.#state;
  }

  get restarts(): number {
    return this.#restarts;
  }

  get lastError(): string | undefined {
    return this.#lastError;
  }

  /** The recent log lines, oldest first. */
  logs(): LogLine[] {
    return this.#log.lines();
  }

  /** Adds a line to the log; the node's own lines, warnings and errors also go to its output. */
  log(level: string, message: string): void {
    this.#log.add(level, message);
  }

  /**
   * Starts the process; resolves once the code loaded. LoadError when it does not load (state
   * `failed`); another error when the process died or hung while starting (state `failed` too:
   * the caller decides whether to retry).
   */
  async start(): Promise<void> {
    this.#state = "starting";
    try {
      await this.#open();
    } catch (error) {
      this.#state = "failed";
      this.#lastError = (error as Error).message;
      this.log("node", `did not start: ${this.#lastError}`);
      throw error;
    }
  }

  /** After a start that failed for a reason other than the code: try again with back-off. */
  retry(): void {
    this.#failures++;
    this.#scheduleRestart("the start failed");
  }

  async #open(): Promise<void> {
    const began = Date.now();
    const channel = await ContainerChannel.open(
      { ...this.#options, onLog: (level, message) => this.log(level, message) },
    );
    this.#channel = channel;
    this.#state = "started";
    this.log(
      "node",
      `started in ${Date.now() - began} ms${channel.warm ? ` (${channel.warm})` : ""}`,
    );
    channel.exited.then((reason) => {
      if (this.#channel !== channel) return;
      this.#channel = undefined;
      if (this.#state === "stopped") return;
      this.#lastError = reason;
      this.#failures = Date.now() - began > STABLE_MS ? 0 : this.#failures + 1;
      this.#scheduleRestart(`the process ended (${reason})`);
    });
  }

  #scheduleRestart(why: string): void {
    this.#state = "restarting";
    const delay = backoffDelay(this.#failures, RESTART_BACKOFF);
    this.log("node", `${why}; restarting in ${delay} ms`);
    this.#timer = setTimeout(async () => {
      if (this.#state !== "restarting") return;
      this.#restarts++;
      try {
        await this.#open();
      } catch (error) {
        this.#lastError = (error as Error).message;
        if (error instanceof LoadError) {
          this.#state = "failed";
          this.log("node", `the code no longer loads: ${this.#lastError}`);
        } else {
          this.#failures++;
          this.#scheduleRestart(`the restart failed (${this.#lastError})`);
        }
      }
    }, delay);
  }

  /** Passes a request to the microservice; 503 while it is not running. */
  forward(request: Request, path: string, port: number): Promise<Response> {
    const channel = this.#channel;
    if (!channel || this.#state !== "started") {
      const retry = this.#state === "restarting" || this.#state === "starting";
      return Promise.reject(
        new Unavailable(
          `the microservice is ${this.#state}${this.#lastError ? ` (${this.#lastError})` : ""}`,
          retry ? { retryAfterSeconds: 1 } : undefined,
        ),
      );
    }
    return channel.forward(request, path, port, this.#options.deadlineMs, () => this.#check());
  }

  /** A request ran out of time: a thread that no longer answers pings is restarted. */
  async #check(): Promise<void> {
    const channel = this.#channel;
    if (!channel || this.#checking) return;
    this.#checking = true;
    try {
      if (!(await channel.ping(PING_MS)) && this.#channel === channel) {
        this.log("node", `no answer to a ping within ${PING_MS} ms (a runaway loop?); killing it`);
        channel.kill();
      }
    } finally {
      this.#checking = false;
    }
  }

  /** Stops the process for good. */
  async stop(): Promise<void> {
    this.#state = "stopped";
    clearTimeout(this.#timer);
    const channel = this.#channel;
    this.#channel = undefined;
    if (channel) {
      await channel.close();
      this.log("node", "stopped");
    }
  }
}
