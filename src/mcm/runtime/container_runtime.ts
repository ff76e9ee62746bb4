/**
 * A deployed container kept running: its process is restarted with back-off when it crashes
 * or stops answering, its recent log lines are kept, and requests wait for nothing while it is
 * down (503).
 *
 * In its client's shared process, an end caused by a sibling (tenant_process.ts judged that
 * sibling to have brought the process down) is not its own failure: it restarts without
 * back-off and is counted apart (bystanderRestarts). A container that brings its client's
 * process down twice within 10 minutes runs in a process of its own from then on (quarantined).
 *
 * @module
 */
import { backoffDelay, type BackoffOptions } from "../../async/backoff.ts";
import { Unavailable } from "../../errors/mod.ts";
import { type ChannelOptions, ContainerChannel, LoadError } from "./container_channel.ts";
import { ContainerLog, type LogLine } from "./container_log.ts";
import type { ContainerUsage } from "./container_usage.ts";
import { EXIT_CPU_BUDGET } from "../sandbox/channel_protocol.ts";

/** The states of spec/mcm.yaml's Container. */
export type ContainerState = "starting" | "started" | "restarting" | "failed" | "stopped";

export type { LogLine };
/** Restarts wait 0.25 s, doubling up to 30 s. */
const RESTART_BACKOFF: BackoffOptions = { minTimeout: 250, maxTimeout: 30_000 };
/** A process that ran this long resets the back-off. */
const STABLE_MS = 60_000;
/** A microservice thread that does not answer a ping this soon is stuck. */
const PING_MS = 2000;
/**
 * A container that brings down its client's process this many times within QUARANTINE_MS runs
 * in a process of its own from then on, until it is redeployed (or the node restarts).
 */
const QUARANTINE_ENDS = 2;
const QUARANTINE_MS = 10 * 60_000;

/** What a runtime needs besides the channel options. */
export interface RuntimeOptions extends Omit<ChannelOptions, "onLog" | "onBroughtDown" | "alone"> {
  deadlineMs: number;
  /** Quarantined already (its record says so: a node restart keeps it). */
  quarantined?: boolean;
  /** It was just quarantined: the record keeps it. */
  onQuarantine?(): void;
  /** Each line its log keeps, as it is kept (followers of the log). */
  onLogLine?(line: LogLine): void;
}

/** A container's process, kept alive. */
export class ContainerRuntime {
  readonly #options: RuntimeOptions;
  #channel: ContainerChannel | undefined;
  #state: ContainerState = "starting";
  #restarts = 0;
  /** It last ended over its CPU budget: it restarts with an empty bucket. */
  #cpuOwed = false;
  /** Restarts because a sibling brought down the process they shared (not in #restarts). */
  #bystanderRestarts = 0;
  /** How many times it brought down its client's process (this deployment). */
  #processEnds = 0;
  /** When it did, within QUARANTINE_MS. */
  #recentProcessEnds: number[] = [];
  /** Whether it runs in a process of its own for bringing its client's down (quarantine). */
  #alone = false;
  #failures = 0;
  #lastError: string | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #checking = false;
  /**
   * Bumped by each stop: a load that began before it is stale when it ends (its channel is
   * closed, not kept). Loads run outside the deployment's lock (the restore at boot, the
   * back-off timer), so a stop or restart can come while one is under way.
   */
  #generation = 0;
  readonly #log: ContainerLog;

  constructor(options: RuntimeOptions) {
    this.#options = options;
    this.#alone = options.quarantined === true;
    this.#log = new ContainerLog(options.id, options.onLogLine);
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

  /** Restarts because another container brought down the process they shared. */
  get bystanderRestarts(): number {
    return this.#bystanderRestarts;
  }

  /** How many times it brought down its client's process since it was deployed. */
  get processEnds(): number {
    return this.#processEnds;
  }

  /** Whether it was moved to a process of its own for bringing its client's down. */
  get quarantined(): boolean {
    return this.#alone;
  }

  /** Its latest figures while it runs in its client's process (its process's reports). */
  usage(): ContainerUsage | undefined {
    return this.#channel?.usage();
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
   * the caller decides whether to retry). A stop while it loads wins: the start resolves, the
   * process it opened is closed, and the state is the stop's. `prepare` runs first (its
   * storage folder made): a stop meanwhile wins too.
   */
  async start(prepare?: () => Promise<unknown>): Promise<void> {
    this.#state = "starting";
    const generation = this.#generation;
    try {
      await prepare?.();
      if (generation !== this.#generation) return;
      await this.#open();
    } catch (error) {
      if (generation !== this.#generation) return; // Stopped meanwhile: the failure is moot.
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
    const generation = this.#generation;
    const { host } = this.#options;
    const channel = await ContainerChannel.open({
      ...this.#options,
      // Ended for its CPU just before: no fresh burst for crashing, a tenth of one to start
      // with (enough for an idle microservice's timers and collections: watchdog.ts).
      host: this.#cpuOwed
        ? { ...host, limits: { ...host.limits, idleCpuStartMs: host.limits.idleCpuBurstMs / 10 } }
        : host,
      alone: this.#alone,
      onLog: (level, message) => this.log(level, message),
      onBroughtDown: (why, suspect) => this.#broughtDown(why, suspect),
    });
    if (generation !== this.#generation) {
      // Stopped (or stopped and started again) while it loaded: this process is nobody's.
      this.log("node", "a load under way was dropped: the container was stopped meanwhile");
      return await channel.close();
    }
    this.#channel = channel;
    this.#state = "started";
    const where = channel.warm ??
      (this.#alone ? "a process of its own: it brought its client's process down" : undefined);
    this.log("node", `started in ${Date.now() - began} ms${where ? ` (${where})` : ""}`);
    channel.exited.then(({ reason, bystander, code }) => {
      if (this.#channel !== channel) return;
      this.#channel = undefined;
      if (this.#state === "stopped") return;
      this.#lastError = reason;
      this.#cpuOwed = !bystander && code === EXIT_CPU_BUDGET;
      // A sibling's crash is not this container's failure: no back-off, not in its restarts.
      if (!bystander) this.#failures = Date.now() - began > STABLE_MS ? 0 : this.#failures + 1;
      this.#scheduleRestart(`the process ended (${reason})`, bystander);
    });
  }

  /**
   * It brought down its client's process (tenant_process.ts judged so), or was one of the
   * suspects when no one stood out: counted, and the second time within QUARANTINE_MS it is
   * moved to a process of its own for good.
   */
  #broughtDown(why: string, suspect = false): void {
    const now = Date.now();
    this.#processEnds++;
    this.#recentProcessEnds = [...this.#recentProcessEnds, now].filter((at) =>
      now - at < QUARANTINE_MS
    );
    this.#lastError = suspect
      ? `its client's process died, ${why}`
      : `it brought down its client's process: ${why}`;
    const lately = this.#recentProcessEnds.length;
    if (this.#alone || lately < QUARANTINE_ENDS) return;
    this.#alone = true;
    this.#options.onQuarantine?.();
    this.log(
      "node",
      `it brought down its client's process (or was among those that may have) ${lately} ` +
        `times in ${QUARANTINE_MS / 60_000} ` +
        "minutes: from now on it runs in a process of its own, until it is redeployed",
    );
  }

  #scheduleRestart(why: string, bystander = false): void {
    this.#state = "restarting";
    const delay = backoffDelay(bystander ? 0 : this.#failures, RESTART_BACKOFF);
    this.log("node", `${why}; restarting in ${delay} ms`);
    this.#timer = setTimeout(async () => {
      if (this.#state !== "restarting") return;
      if (bystander) this.#bystanderRestarts++;
      else this.#restarts++;
      const generation = this.#generation;
      try {
        await this.#open();
      } catch (error) {
        if (generation !== this.#generation) return; // Stopped meanwhile.
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
    if (this.#state === "stopped") {
      // Stopped on purpose (POST .../stop): no Retry-After, it will not come back by itself.
      return Promise.reject(
        new Unavailable(
          `container ${this.#options.id} is stopped ('edgenode containers restart ` +
            `${this.#options.id}' starts it)`,
        ),
      );
    }
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

  /** Stops the process (for good, unless start is called again: a restart). */
  async stop(): Promise<void> {
    this.#generation++;
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
