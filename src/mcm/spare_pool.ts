/**
 * Warm spares (mcm.spareContainers): container processes started ahead of need, their sandboxed
 * worker loaded, each waiting for the node's `take`. A start, redeploy or restart takes one and
 * skips starting a process (the bulk of a cold start: Deno's own start, loading the sandboxed
 * worker); a new spare is started a moment later, off the path of the answer. A spare's host
 * starts at the take, narrowed to the container's files, and its other flags are the node's
 * defaults (container_process.ts): a container is as isolated in a spare as in a cold process.
 *
 * @module
 */
import { backoffDelay } from "../async/backoff.ts";
import { type ProcessProfile, sameProfile, spawnContainer } from "./container_process.ts";

/** After a take, the next spare starts this much later: not while the taken one loads. */
const REFILL_DELAY_MS = 250;

/** How the pool starts its spares. */
export interface SparePoolOptions {
  /** Spares kept (0: none). */
  count: number;
  /** The sandbox's code (BundleFiles.runtimeDir). */
  runtimeDir: string;
  /** The folders of all bundles and of all storage (BundleFiles): what a spare's process may
   * read (and write, the storage), before its host narrows itself to one container's. */
  bundlesDir: string;
  storageRoot: string;
  /** The profile of a container with the node's defaults, now (the node's addresses change). */
  profile(): ProcessProfile;
  readEnv(name: string): string | undefined;
  /** The node's own log lines about spares. */
  log(message: string): void;
}

interface Spare {
  child: Deno.ChildProcess;
  profile: ProcessProfile;
}

/** The node's warm spares. */
export class SparePool {
  readonly #options: SparePoolOptions;
  #idle: Spare[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** Spares that ended while waiting, in a row: the refill backs off. */
  #failures = 0;
  #closed = false;

  constructor(options: SparePoolOptions) {
    this.#options = options;
  }

  /** Spares waiting now. */
  get idle(): number {
    return this.#idle.length;
  }

  /** Starts the spares. */
  start(): void {
    this.#fill();
  }

  #fill(): void {
    this.#timer = undefined;
    while (!this.#closed && this.#idle.length < this.#options.count) {
      this.#spawn(this.#options.profile());
    }
  }

  #refillSoon(delay = REFILL_DELAY_MS): void {
    if (this.#timer === undefined && !this.#closed) {
      this.#timer = setTimeout(() => this.#fill(), delay);
    }
  }

  #spawn(profile: ProcessProfile): void {
    const { bundlesDir, storageRoot } = this.#options;
    const child = spawnContainer(
      this.#options.runtimeDir,
      { read: [bundlesDir, storageRoot], write: storageRoot, profile, spare: true },
      this.#options.readEnv,
    );
    const spare = { child, profile };
    this.#idle.push(spare);
    child.status.then(async (status) => {
      const index = this.#idle.indexOf(spare);
      if (index < 0) return; // Taken (its channel watches it now) or stopped.
      this.#idle.splice(index, 1);
      const stderr = await new Response(child.stderr).text().catch(() => "");
      this.#failures++;
      const tail = stderr.trim().split("\n").slice(-2).join(" | ");
      this.#options.log(
        `a warm spare ended while waiting (exit code ${status.code}${tail ? `: ${tail}` : ""})`,
      );
      this.#refillSoon(backoffDelay(this.#failures, { minTimeout: 1000, maxTimeout: 60_000 }));
    });
  }

  /**
   * A spare for a container of `profile`, its process no longer in the pool; undefined when
   * none fits (the container then starts a process of its own).
   */
  take(profile: ProcessProfile): Deno.ChildProcess | undefined {
    // Spares started before the node's profile changed (its addresses) fit no one any more.
    const current = this.#options.profile();
    for (const stale of this.#idle.filter((spare) => !sameProfile(spare.profile, current))) {
      this.#stop(stale).then(() => this.#refillSoon());
    }
    const index = this.#idle.findIndex((spare) => sameProfile(spare.profile, profile));
    this.#refillSoon();
    if (index < 0) return undefined;
    this.#failures = 0;
    return this.#idle.splice(index, 1)[0].child;
  }

  /** Kills a spare nobody took; resolves once it ended and its folder is gone. */
  async #stop(spare: Spare): Promise<void> {
    this.#idle = this.#idle.filter((other) => other !== spare);
    try {
      spare.child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
    await spare.child.status;
    await spare.child.stderr.cancel().catch(() => {});
    await spare.child.stdout.cancel().catch(() => {});
  }

  /** Stops every spare (the node is shutting down) and waits until their processes ended. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await Promise.all(this.#idle.map((spare) => this.#stop(spare)));
  }
}
