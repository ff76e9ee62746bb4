/**
 * A container's own GGUF files that its `context.ml` calls name (src/mcm/services/ml_calls.ts
 * resolves and checks the name inside the container's storage): loaded read-only from there,
 * with the caller's settings, as a slot of its own beside the registry's models.
 *
 * Such a slot must not outlive its file's content. A call stats the file each time, and a
 * changed size or modification time is another load key, so a replaced file is loaded again
 * rather than served stale; between calls a check every CHECK_MS unloads a slot whose file is
 * gone or changed (a deleted container's storage included).
 *
 * @module
 */
import { containerCaller, type LoadedCallerFile } from "./caller_usage.ts";

export type { LoadedCallerFile };
import type { EngineModelKind } from "./engine_protocol.ts";
import type { ModelSlot } from "./model_slots.ts";

/** How often loaded files are checked against their storage. */
export const CHECK_MS = 5_000;

/** A file of a container's storage, resolved and checked, to load with the caller's settings. */
export interface CallerFile {
  /** The container whose storage holds it. */
  container: string;
  /** Its name in that storage (`/`-separated, as the call gave it, normalised). */
  name: string;
  /** Its real path. */
  path: string;
  size: number;
  mtimeMs: number;
  kind: EngineModelKind;
  /** The caller's `max_context`; absent: the engine's choice. */
  contextSize?: number;
  /** The caller's `n_gpu_layers`. */
  gpuLayers?: number;
  /** The caller's `chatTemplateHint`. */
  chatTemplateHint?: string;
}

/** The slot id of a container's file: never a registry id (those have no ':' nor '/'). */
export function callerFileId(container: string, name: string): string {
  return `${containerCaller(container)}/${name}`;
}

interface Watched {
  caller: string;
  name: string;
  path: string;
  size: number;
  mtimeMs: number;
  slot: ModelSlot;
}

/** The loaded files of containers, and the check that unloads those whose file went. */
export class CallerFileWatch {
  readonly #watched = new Map<string, Watched>();
  readonly #onGone: (id: string) => Promise<unknown>;
  #timer?: ReturnType<typeof setInterval>;

  /** `onGone` unloads the slot of a file that was deleted or changed. */
  constructor(onGone: (id: string) => Promise<unknown>) {
    this.#onGone = onGone;
  }

  /** Follows `slot`, loaded from `file`. */
  watch(slot: ModelSlot, file: CallerFile): void {
    this.#watched.set(slot.id, {
      caller: containerCaller(file.container),
      name: file.name,
      path: file.path,
      size: file.size,
      mtimeMs: file.mtimeMs,
      slot,
    });
    if (this.#timer === undefined) {
      const timer = setInterval(() => this.check(), CHECK_MS);
      Deno.unrefTimer(timer);
      this.#timer = timer;
    }
  }

  /** Stops following a slot (it was unloaded). */
  forget(id: string): void {
    this.#watched.delete(id);
    if (this.#watched.size === 0) this.close();
  }

  /** The loaded files of `caller` (a containerCaller id). */
  loadedOf(caller: string): LoadedCallerFile[] {
    return [...this.#watched.values()]
      .filter((watched) => watched.caller === caller)
      .map(({ name, slot }) => ({
        name,
        estimatedBytes: slot.info.estimatedBytes,
        contextSize: slot.info.contextSize,
        loadedAt: slot.metrics.loaded_at,
      }));
  }

  /** Unloads every slot whose file is gone or no longer the one loaded. */
  async check(): Promise<void> {
    for (const [id, watched] of this.#watched) {
      const now = await Deno.stat(watched.path).catch(() => undefined);
      if (now?.isFile && now.size === watched.size && now.mtime?.getTime() === watched.mtimeMs) {
        continue;
      }
      await this.#onGone(id).catch(() => {});
    }
  }

  /** Stops the check. */
  close(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
