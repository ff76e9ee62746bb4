/**
 * The node's side of the inference engine process (src/inference/engine_main.ts): chooses what
 * it computes on (engine_status.ts, engine_backend.ts), installs that backend's engine on first
 * need, starts the process with only the permissions it needs, matches its
 * events to requests, and starts it again after it ends (a crash or an out-of-memory kill takes
 * the loaded models with it, never the node).
 *
 * @module
 */
import { join } from "node:path";
import { ENGINE_SOURCE, INSTALLER_SOURCE } from "../../bundles/engine_sources.ts";
import { writeVersioned } from "../storage/versioned_files.ts";
import { Unavailable } from "../errors/mod.ts";
import type { GpuSetting } from "./engine_backend.ts";
import { installFolder, isInstalled } from "./engine_install.ts";
import { engineError, scrubbed } from "./engine_errors.ts";
import { type JoinedInstall, joinInstall } from "./install_runner.ts";
import { readLines } from "./line_reader.ts";
import { engineRunFlags } from "./engine_permissions.ts";
import {
  detectBackendOnce,
  type EngineStatus,
  engineStatus,
  recordEngineStatus,
  type UsableBackend,
} from "./engine_status.ts";
import {
  type EngineBackendInfo,
  type EngineEvent,
  type EngineRequest,
  EVENT_PREFIX,
} from "./engine_protocol.ts";

export type { EngineStatus };

/** Where the engine lives and what it may read. */
export interface EngineOptions {
  /** Holds the installed engine (src/inference/engine_install.ts). */
  engineDir: string;
  /** The model files: the engine's only other readable folder, with `callerFilesDir`. */
  modelsDir: string;
  /** The containers' storage folders, whose GGUF files their calls load (caller_files.ts). */
  callerFilesDir?: string;
  /** Where the node writes the engine's and installer's code (bundles/engine_sources.ts). */
  scriptsDir: string;
  /** Most threads the engine's library may start. */
  maxThreads: number;
  /** inference.gpu: what the engine computes on (engine_backend.ts). Default "auto". */
  gpu?: GpuSetting;
  /** Runs when the process ends: every model it held is gone. */
  onExit: (reason: string) => void;
}

/** An engine request without its id (the process numbers them). */
export type EngineCall = EngineRequest extends infer R ? R extends { id: number } ? Omit<R, "id">
  : never
  : never;

/** Events that end a request. */
type FinalEvent = Extract<
  EngineEvent,
  { type: "loaded" | "chat-done" | "embed-done" | "unloaded" }
>;

interface Pending {
  onEvent: (event: EngineEvent) => void;
  resolve: (event: FinalEvent) => void;
  reject: (error: Error) => void;
}

interface Running {
  child: Deno.ChildProcess;
  writer: WritableStreamDefaultWriter<Uint8Array>;
}

const STANDALONE =
  "a compiled edgenode cannot start the inference engine (it runs on a Deno of its own): " +
  "install with deploy/install.sh, which runs the bundle with Deno, or run from a checkout";

const encoder = new TextEncoder();

/** One engine process at a time, started when first needed. */
export class EngineProcess {
  readonly #options: EngineOptions;
  #running?: Promise<Running>;
  #nextId = 1;
  readonly #pending = new Map<number, Pending>();
  /** The install this engine waits on, if any (shared with the node's other engines). */
  #install?: JoinedInstall;
  /** Counts stop() calls: a start begun before one does not spawn the engine after it. */
  #stops = 0;
  readonly #setting: GpuSetting;

  /** An engine that starts on the first call. */
  constructor(options: EngineOptions) {
    this.#options = options;
    this.#setting = options.gpu ?? "auto";
  }

  /** What the engine computes on, as far as known (nothing before the first detection). */
  get status(): EngineStatus {
    return engineStatus(this.#setting);
  }

  /**
   * The backend chosen for this machine, detected now unless it was already; a backend named
   * that cannot run is an error (Unavailable, 503) naming what is missing.
   */
  async detect(): Promise<UsableBackend> {
    // Its Deno would be the compiled edgenode: nothing to detect with, nor to run.
    if (Deno.build.standalone) throw new Unavailable(STANDALONE);
    return await detectBackendOnce(await this.#scripts(), this.#setting);
  }

  #scripts(): Promise<string> {
    return writeVersioned(this.#options.scriptsDir, {
      "engine_main.js": ENGINE_SOURCE,
      "engine_install.js": INSTALLER_SOURCE,
    });
  }

  /**
   * Sends `call`; `onEvent` sees the events before the final one, which the promise resolves
   * with. `started` gets the request's id (to cancel it).
   */
  async call(
    call: EngineCall,
    onEvent: (event: EngineEvent) => void = () => {},
    started: (id: number) => void = () => {},
  ): Promise<FinalEvent> {
    const running = await this.#ensureRunning();
    const id = this.#nextId++;
    const done = new Promise<FinalEvent>((resolve, reject) => {
      this.#pending.set(id, { onEvent, resolve, reject });
    });
    started(id);
    await this.#send(running, { ...call, id } as EngineRequest);
    return await done;
  }

  /** Asks the engine to stop request `id` early (it then finishes as stopped). */
  cancel(id: number): void {
    if (!this.#running || !this.#pending.has(id)) return;
    this.#running.then((running) => this.#send(running, { id: 0, op: "cancel", target: id }))
      .catch(() => {});
  }

  /**
   * Ends the process (its models go with it). An install it waits on is left, and stopped when
   * no other engine waits on it (its installer ends its npm or build and removes what it began).
   */
  async stop(): Promise<void> {
    this.#stops++;
    this.#install?.leave();
    const running = await this.#running?.catch(() => undefined);
    if (!running) return;
    try {
      running.child.kill("SIGTERM");
    } catch { /* gone already */ }
    await running.child.status;
  }

  async #send(running: Running, request: EngineRequest): Promise<void> {
    await running.writer.write(encoder.encode(JSON.stringify(request) + "\n"));
  }

  #ensureRunning(): Promise<Running> {
    if (!this.#running) {
      this.#running = this.#start();
      this.#running.catch(() => (this.#running = undefined));
    }
    return this.#running;
  }

  /**
   * Installs the engine unless it is there already (install_runner.ts), joining the install of
   * the same folder another engine of the node began.
   */
  async #ensureInstalled(
    folder: string,
    scripts: string,
    { backend, build }: UsableBackend,
  ): Promise<void> {
    if (await isInstalled(folder)) return;
    const install = joinInstall({
      folder,
      engineDir: this.#options.engineDir,
      scripts,
      backend,
      setting: this.#setting,
      build,
    });
    this.#install = install;
    try {
      await install.done;
    } finally {
      if (this.#install === install) this.#install = undefined;
      install.leave();
    }
  }

  async #start(): Promise<Running> {
    if (Deno.build.standalone) throw new Unavailable(STANDALONE);
    const { engineDir, modelsDir, maxThreads, callerFilesDir } = this.#options;
    const stops = this.#stops;
    const callerReads = callerFilesDir ? [callerFilesDir] : [];
    const usable = await this.detect();
    const { backend, reason, env } = usable;
    // The backend's build did not load before: not tried again until the node restarts.
    const known = this.status.error;
    if (known) throw new Unavailable(known);
    const folder = installFolder(engineDir, backend, usable.build?.name);
    const scripts = await this.#scripts();
    await this.#ensureInstalled(folder, scripts, usable);
    if (this.#stops !== stops) throw new Unavailable("the inference engine was stopped");
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        ...engineRunFlags(folder, [modelsDir, scripts, ...callerReads]),
        join(scripts, "engine_main.js"),
        folder,
        String(maxThreads),
        backend,
        reason,
      ],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      // No PATH, and ggml's abort handler told not to fork gdb for a backtrace: a crafted model
      // that aborts llama.cpp leaves no debugger's output (host paths, frames) to leak.
      clearEnv: true,
      // The GPU driver's compiled shaders are kept under the engine folder (HOME and
      // XDG_CACHE_HOME), so they are compiled once, not at each start; GPU_ENV (where CUDA
      // is, which GPU and driver) is passed on as detection saw it.
      env: {
        ...env,
        NO_COLOR: "1",
        HOME: engineDir,
        XDG_CACHE_HOME: join(engineDir, "cache"),
        GGML_NO_BACKTRACE: "1",
      },
    }).spawn();
    const ready = Promise.withResolvers<Running>();
    const running: Running = { child, writer: child.stdin.getWriter() };
    readLines(child.stderr, (line) => {
      console.error(`engine: ${line}`);
    });
    let unusable: string | undefined;
    const reading = readLines(child.stdout, (line) => {
      if (!line.startsWith(EVENT_PREFIX)) return console.log(`engine: ${line}`);
      const event = JSON.parse(line.slice(EVENT_PREFIX.length)) as EngineEvent;
      if (event.type === "ready") {
        this.#ready(event, reason);
        return ready.resolve(running);
      }
      if (event.type === "unusable") return void (unusable = scrubbed(event.message));
      this.#dispatch(event);
    });
    Promise.all([child.status, reading.catch(() => {})]).then(([status]) => {
      const how = status.signal ? `killed by ${status.signal}` : `exit code ${status.code}`;
      const hint = status.signal === "SIGKILL" ? " (out of memory?)" : "";
      // Its last words stay in the node's log: they name host paths and native frames.
      const ended = `the inference engine process ended (${how}${hint})`;
      this.#running = undefined;
      if (unusable) {
        // Not the file's fault: the backend named cannot run (every load answers 503 with it).
        const error = `the inference engine cannot run on ${backend}: ${unusable}`;
        recordEngineStatus({ setting: this.#setting, backend, error });
        ready.reject(new Unavailable(error));
      } else {
        ready.reject(new Unavailable(ended));
      }
      const reason = ended;
      for (const pending of this.#pending.values()) pending.reject(new Unavailable(reason));
      this.#pending.clear();
      this.#options.onExit(reason);
    });
    return await ready.promise;
  }

  /** The engine said what it runs on. */
  #ready(info: EngineBackendInfo, reason: string): void {
    const { backend, devices, vramTotal, vramFree } = info;
    recordEngineStatus({ setting: this.#setting, backend, reason, devices, vramTotal, vramFree });
  }

  #dispatch(event: EngineEvent): void {
    const pending = this.#pending.get(event.id);
    if (!pending) return;
    if (event.type === "error") {
      this.#pending.delete(event.id);
      pending.reject(engineError(event));
    } else if (
      event.type === "loaded" || event.type === "chat-done" || event.type === "embed-done" ||
      event.type === "unloaded"
    ) {
      this.#pending.delete(event.id);
      pending.resolve(event);
    } else {
      pending.onEvent(event);
    }
  }
}
