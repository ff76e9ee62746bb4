/**
 * The files the engine must not load again: those whose load it refused or that ended it while
 * loading or running, by load key (a registry model's id@sha256, a container file's id with its
 * size and time: caller_files.ts). A changed file is another key, tried again.
 *
 * @module
 */
import { Invalid, Unavailable } from "../errors/mod.ts";
import type { ModelSlot } from "./model_slots.ts";

/** Failed loads by key, with the message a caller gets. */
export class LoadFailures {
  readonly #failed = new Map<string, string>();

  /** The refusal of `key`, when its file failed. */
  of(key: string): string | undefined {
    return this.#failed.get(key);
  }

  /**
   * A load's failure as callers see it. A file the engine refuses (400) or that ends the engine
   * while it loads is marked failed: it is not loaded again until its file changes (another
   * sha256 is another key), so no caller can crash the engine with it again and again. Memory
   * (507) is not the file's fault: that load may be tried again.
   */
  loadFailed(id: string, key: string, error: unknown): unknown {
    const crashed = error instanceof Unavailable && /engine process ended/.test(error.message);
    const failed = error instanceof Unavailable &&
      /^the inference engine failed: /.test(error.message);
    if (!(error instanceof Invalid) && !crashed && !failed) return error;
    const why = crashed
      ? "the inference engine ended while loading it (the file is crafted or corrupt)"
      : (error as Error).message;
    const message = `model '${id}' failed to load: ${why}; it is not loaded again until its ` +
      "file changes (upload or download its file again)";
    this.#failed.set(key, message);
    return new Invalid(message);
  }

  /**
   * The engine crashed (not a kill: SIGKILL is the kernel's out-of-memory or an operator's)
   * while one model alone was running a job: its file did it (one that loads but aborts
   * llama.cpp when it evaluates), and is marked failed like a file that crashes its load.
   */
  blameCrash(reason: string, slots: Iterable<ModelSlot>): void {
    if (!/killed by SIG(ABRT|SEGV|BUS|ILL|FPE|TRAP)/.test(reason)) return;
    const running = [...slots].filter((slot) => slot.activeRequests.size > 0);
    if (running.length !== 1) return;
    const [slot] = running;
    this.#failed.set(
      slot.key,
      `model '${slot.id}' ended the inference engine while it ran (${reason}: the file is ` +
        "crafted or corrupt); it is not loaded again until its file changes (upload or " +
        "download its file again)",
    );
  }
}
