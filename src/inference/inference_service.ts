/**
 * Running the registry's models: loading on first use with the record's settings, one request
 * at a time per model lane behind a bounded queue (model_slots.ts), idle unloading, and unloading before a model's
 * file is deleted or replaced. The engine itself is another process (engine_process.ts).
 *
 * A container's own GGUF files (caller_files.ts) load the same way, from their place in its
 * storage, with the caller's settings: they take the same memory budget and the same engine.
 *
 * @module
 */
import { Invalid, NotFound } from "../errors/mod.ts";
import type { Model } from "../../gen/store/validators.ts";
import type { ModelRegistry } from "../store/registry.ts";
import { type EngineOptions, EngineProcess, type EngineStatus } from "./engine_process.ts";
import type { GpuSetting } from "./engine_backend.ts";
import { LoadFailures } from "./load_failures.ts";
import { probeLoad } from "./load_probe.ts";
import type {
  ChatJob,
  ChatResult,
  EmbedResult,
  EngineModelKind,
  LoadedModelInfo,
} from "./engine_protocol.ts";
import {
  CallerLedger,
  type CallerUsage,
  type InferenceCaller,
  KEY_HOLDER_CALLER,
} from "./caller_usage.ts";

export { type InferenceCaller, KEY_HOLDER_CALLER };
import { ModelSlot } from "./model_slots.ts";
import {
  type CallerFile,
  callerFileId,
  CallerFileWatch,
  type LoadedCallerFile,
} from "./caller_files.ts";

export type { CallerFile, LoadedCallerFile };
import { chatOnSlot, type ChatOptions, embedOnSlot } from "./slot_jobs.ts";

export type { ChatOptions };
import { availableCores, chooseThreads } from "./threads.ts";

/** inference settings (spec/config.yaml, InferenceConfig). */
export interface InferenceSettings {
  engineDir: string;
  /** Threads per model; 0: chosen from the cores and the model's size (threads.ts). */
  threads: number;
  idleUnloadSeconds: number;
  queueLimit: number;
  /** Of those, the most one microservice client may have waiting per model. */
  clientQueueLimit: number;
  /** Engine seconds a container's detached calls may use (caller_usage.ts). */
  detachedEngineSeconds: number;
  /** Over how many seconds that budget refills. */
  detachedWindowSeconds: number;
  /** Memory models may take, at most; 0: whatever the machine has free. */
  memoryLimitMb: number;
  /** Try a file's first load in a throwaway engine process first (load_probe.ts). */
  probeLoads: boolean;
  /** Give chat models a second sequence for the key holder alone (model_slots.ts). */
  reservedSequence: boolean;
  /** What the engine computes on (engine_backend.ts); absent: "auto". */
  gpu?: GpuSetting;
}

/** A model of the registry as GET /models shows it. */
export interface RunnableModel {
  model: Model;
  slot?: ModelSlot;
}

const RUNNABLE: readonly string[] = ["llm", "vlm", "embed"];

/** What one load needs: a registry record's or a caller's file's. */
interface LoadTarget {
  id: string;
  kind: EngineModelKind;
  path: string;
  totalSize: number;
  contextSize?: number;
  gpuLayers?: number;
  chatTemplateHint?: string;
}

/** The registry's models, run by one engine process. */
export class InferenceService {
  readonly #registry: ModelRegistry;
  readonly #settings: InferenceSettings;
  readonly #engine: EngineProcess;
  readonly #slots = new Map<string, ModelSlot>();
  readonly #loading = new Map<string, Promise<ModelSlot>>();
  readonly #ledger: CallerLedger;
  /** Files whose load failed or crashed the engine, by key: never loaded again. */
  readonly #failures = new LoadFailures();
  /** Files a throwaway engine loaded without crashing (load_probe.ts). */
  readonly #probed = new Set<string>();
  readonly #engineOptions: Omit<EngineOptions, "onExit">;
  /** The loaded files of containers, checked against their storage (caller_files.ts). */
  readonly #callerFiles: CallerFileWatch;
  /** Detection of the backend started by `backend` is running. */
  #detecting = false;

  /**
   * A service over `registry`, whose files are in `modelsDir`; the engine's code is written into
   * `scriptsDir`; `callerFilesDir` holds the containers' storage folders, whose files their
   * calls may load (loadFile). The engine starts with the first load.
   */
  constructor(
    registry: ModelRegistry,
    dirs: { modelsDir: string; scriptsDir: string; callerFilesDir?: string },
    settings: InferenceSettings,
  ) {
    this.#registry = registry;
    this.#settings = settings;
    this.#ledger = new CallerLedger({
      engineSeconds: settings.detachedEngineSeconds,
      windowSeconds: settings.detachedWindowSeconds,
    });
    this.#engineOptions = {
      engineDir: settings.engineDir,
      ...dirs,
      maxThreads: Math.max(settings.threads, availableCores()),
      gpu: settings.gpu ?? "auto",
    };
    this.#engine = new EngineProcess({
      ...this.#engineOptions,
      onExit: (reason) => {
        this.#failures.blameCrash(reason, this.#slots.values());
        for (const slot of this.#slots.values()) slot.close(reason);
        this.#slots.clear();
      },
    });
    this.#callerFiles = new CallerFileWatch(
      (id) => this.unload(id, `model '${id}' was deleted or its file replaced`),
    );
  }

  /**
   * What the engine computes on, or why it cannot (the dashboard's status shows it): the
   * engine's own once it started, else what was detected; the first read starts detection.
   */
  get engineStatus(): EngineStatus {
    const { backend, error } = this.#engine.status;
    if (backend === undefined && error === undefined && !this.#detecting) {
      this.#detecting = true;
      this.#engine.detect().catch(() => {}).finally(() => (this.#detecting = false));
    }
    return this.#engine.status;
  }

  /**
   * The engine's backend as the node's description advertises it; undefined until detected
   * and while the backend named cannot run.
   */
  get backend(): string | undefined {
    return this.engineStatus.backend;
  }

  /** Ready models of the kinds the engine runs, oldest first, with their slots when loaded. */
  list(): RunnableModel[] {
    return this.#registry.list({ ready: true })
      .filter((model) => RUNNABLE.includes(model.kind))
      .map((model) => ({ model, slot: this.#slots.get(model.id) }));
  }

  /** The slot of a loaded model, if it is loaded. */
  loaded(id: string): ModelSlot | undefined {
    return this.#slots.get(id);
  }

  /** Loads `id` unless loaded; `onProgress` gets 0..1 while the weights load. */
  load(id: string, onProgress: (progress: number) => void = () => {}): Promise<ModelSlot> {
    const model = this.check(id);
    const target: LoadTarget = {
      id,
      kind: model.kind as EngineModelKind,
      path: this.#registry.mediaFile(model.id).path,
      totalSize: model.totalSize ?? 0,
      contextSize: model.gguf?.initContextSize || undefined,
      gpuLayers: model.gguf?.initGpuLayerSize,
      chatTemplateHint: model.gguf?.chatTemplateHint,
    };
    return this.#loadOnce(target, `${id}@${model.sha256}`, onProgress);
  }

  /**
   * Loads a container's file unless loaded as it is now: a file whose size or modification
   * time changed, or another kind or other settings, is another key, loaded again (the old
   * one unloaded first).
   */
  loadFile(
    file: CallerFile,
    onProgress: (progress: number) => void = () => {},
  ): Promise<ModelSlot> {
    const id = callerFileId(file.container, file.name);
    // The kind and the caller's settings are part of the key too: others are another load.
    const settings = [
      file.kind,
      file.contextSize ?? "",
      file.gpuLayers ?? "",
      file.chatTemplateHint ?? "",
    ];
    const key = `${id}@${file.size}:${file.mtimeMs}:${settings.join(":")}`;
    const target: LoadTarget = {
      id,
      kind: file.kind,
      path: file.path,
      totalSize: file.size,
      contextSize: file.contextSize || undefined,
      gpuLayers: file.gpuLayers,
      chatTemplateHint: file.chatTemplateHint,
    };
    return this.#loadOnce(target, key, onProgress).then((slot) => {
      this.#callerFiles.watch(slot, file);
      return slot;
    });
  }

  /** Unloads a container's file if it is loaded (it was deleted, or its name no longer resolves). */
  async unloadFile(container: string, name: string): Promise<void> {
    await this.unload(
      callerFileId(container, name),
      `model '${name}' was deleted or its file replaced`,
    );
  }

  #loadOnce(
    target: LoadTarget,
    key: string,
    onProgress: (progress: number) => void,
  ): Promise<ModelSlot> {
    const { id } = target;
    const slot = this.#slots.get(id);
    if (slot?.key === key) return Promise.resolve(slot);
    const failed = this.#failures.of(key);
    if (failed) return Promise.reject(new Invalid(failed));
    let pending = this.#loading.get(key);
    if (!pending) {
      pending = (async () => {
        if (slot) await this.unload(id);
        try {
          return await this.#load(target, key, onProgress);
        } catch (error) {
          throw this.#failures.loadFailed(id, key, error);
        }
      })();
      this.#loading.set(key, pending);
      pending.catch(() => {}).finally(() => this.#loading.delete(key));
    }
    return pending;
  }

  async #load(
    target: LoadTarget,
    key: string,
    onProgress: (progress: number) => void,
  ): Promise<ModelSlot> {
    const threads = chooseThreads(target.totalSize, availableCores(), this.#settings.threads);
    const spec = {
      key,
      path: target.path,
      kind: target.kind,
      contextSize: target.contextSize,
      gpuLayers: target.gpuLayers,
      threads,
      chatTemplateHint: target.chatTemplateHint,
      memoryBudget: this.#memoryBudget(),
      sequences: this.#settings.reservedSequence ? 2 : 1,
    };
    if (this.#settings.probeLoads && !this.#probed.has(key)) {
      await probeLoad(this.#engineOptions, spec);
      this.#probed.add(key);
    }
    const event = await this.#engine.call(
      { op: "load", spec },
      (e) => e.type === "progress" && onProgress(e.progress),
    );
    if (event.type !== "loaded") throw new Error(`unexpected engine answer ${event.type}`);
    const slot = new ModelSlot(
      { id: target.id, key, kind: target.kind, info: event.info },
      {
        queueLimit: this.#settings.queueLimit,
        perClientLimit: this.#settings.clientQueueLimit,
        idleMs: this.#settings.idleUnloadSeconds * 1000,
        onIdle: () => this.unload(target.id).catch(() => {}),
      },
    );
    this.#slots.set(target.id, slot);
    return slot;
  }

  /** Unloads `id`; false when it was not loaded. A request running on it is stopped. */
  async unload(id: string, reason = `model '${id}' was unloaded`): Promise<boolean> {
    const slot = this.#slots.get(id);
    if (!slot) return false;
    this.#slots.delete(id);
    this.#callerFiles.forget(id);
    slot.close(reason);
    for (const request of slot.activeRequests) this.#engine.cancel(request);
    await this.#engine.call({ op: "unload", key: slot.key }).catch(() => {});
    return true;
  }

  /**
   * A chat completion on `id`, loading it first if needed; `onText` gets the reply as it comes.
   * `max_tokens` is capped to the model's context (absent: the context); a detached caller's
   * request is refused when its budget is spent, and stopped when it would overdraw it.
   */
  async chat(
    id: string | CallerFile,
    job: ChatJob,
    options: ChatOptions,
  ): Promise<{ result: ChatResult; info: LoadedModelInfo }> {
    const caller = options.caller ?? KEY_HOLDER_CALLER;
    if (caller.detached) this.#ledger.detachedAllowance(caller.id);
    const slot = await this.#slotFor(id, ["llm", "vlm"], "chat completions", options.onLoad);
    const context = slot.info.contextSize;
    const bounded = { ...job, maxTokens: Math.min(job.maxTokens || context, context) };
    const runner = { engine: this.#engine, ledger: this.#ledger };
    const result = await chatOnSlot(runner, slot, bounded, options, caller);
    slot.record(result.completionTokens, result.decodeMs);
    return { result, info: slot.info };
  }

  /** Embeddings of each input on `id` (a model of kind embed). */
  async embed(
    id: string | CallerFile,
    input: string[],
    signal?: AbortSignal,
    caller: InferenceCaller = KEY_HOLDER_CALLER,
  ): Promise<EmbedResult> {
    if (caller.detached) this.#ledger.detachedAllowance(caller.id);
    const slot = await this.#slotFor(id, ["embed"], "embeddings");
    return await embedOnSlot(
      { engine: this.#engine, ledger: this.#ledger },
      slot,
      input,
      signal,
      caller,
    );
  }

  /** What each caller used (caller_usage.ts): KEY_HOLDER, and `container:<id>` per container. */
  usage(): Map<string, CallerUsage> {
    return this.#ledger.all();
  }

  /**
   * What one caller used: `usageOf(containerCaller(id))` for a container, with its files
   * loaded now (`loadedFiles`, when any).
   */
  usageOf(caller: string): CallerUsage {
    const usage = this.#ledger.of(caller);
    const loadedFiles = this.#callerFiles.loadedOf(caller);
    return loadedFiles.length > 0 ? { ...usage, loadedFiles } : usage;
  }

  /** Forgets a caller's figures and budget (a deleted container). */
  forgetCaller(caller: string): void {
    this.#ledger.forget(caller);
  }

  /** Unloads a model before its file changes or goes (the registry's hook). */
  async beforeFileChange(id: string): Promise<void> {
    await this.unload(id, `model '${id}' was deleted or its file replaced`);
  }

  /** Ends the engine process. */
  async close(): Promise<void> {
    this.#callerFiles.close();
    for (const slot of this.#slots.values()) slot.close("the node is stopping");
    this.#slots.clear();
    await this.#engine.stop();
  }

  async #slotFor(
    id: string | CallerFile,
    kinds: string[],
    what: string,
    onLoad?: (progress: number) => void,
  ): Promise<ModelSlot> {
    if (typeof id !== "string") {
      if (!kinds.includes(id.kind)) {
        throw new Invalid(`${what} need a model of kind ${kinds.join(" or ")}`);
      }
      return await this.loadFile(id, onLoad);
    }
    const model = this.check(id);
    if (!kinds.includes(model.kind)) {
      throw new Invalid(
        `model '${id}' is of kind ${model.kind}; ${what} need a model of kind ${
          kinds.join(" or ")
        }`,
      );
    }
    return await this.load(id, onLoad);
  }

  /**
   * Whether a request of `caller` for registry model `id` (of one of `kinds`) would be served
   * here now rather than refused: the model is here, ready, and, when loaded, its queue has a
   * place (a cheap look: mesh routing asks it before each request).
   */
  canServeNow(id: string, kinds: readonly string[], caller = KEY_HOLDER_CALLER): boolean {
    let model: Model;
    try {
      model = this.check(id);
    } catch {
      return false;
    }
    if (!kinds.includes(model.kind)) return false;
    return !(this.#slots.get(id)?.wouldRefuse(caller) ?? false);
  }

  /** The record of a model the engine can run, or the error that says why not. */
  check(id: string): Model {
    let model: Model;
    try {
      model = this.#registry.get(id);
    } catch (error) {
      if (error instanceof NotFound) {
        throw new NotFound(
          `model '${id}' not found in the model registry (GET /models lists it)`,
          { resource: "model", id },
        );
      }
      throw error;
    }
    if (!RUNNABLE.includes(model.kind)) {
      throw new Invalid(
        `model '${id}' is of kind ${model.kind}; the engine runs GGUF models (llm, vlm, embed)`,
      );
    }
    if (!model.readyToUse) {
      throw new Invalid(`model: ${id} is not ready to be used (upload or download its file first)`);
    }
    return model;
  }

  /**
   * What a new load may take: the free memory (which the loaded models have already taken from),
   * and within inference.memoryLimitMb what the loaded models' estimates leave of it.
   */
  #memoryBudget(): number {
    const free = Deno.systemMemoryInfo().available;
    const limit = this.#settings.memoryLimitMb * 2 ** 20;
    if (limit <= 0) return free;
    let taken = 0;
    for (const slot of this.#slots.values()) taken += slot.info.estimatedBytes;
    return Math.min(free, Math.max(0, limit - taken));
  }
}
