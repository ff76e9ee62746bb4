/**
 * Warm spares (mcm.spareContainers): container processes started ahead of need, their sandboxed
 * worker loaded, each waiting for the node's `take`. A start, redeploy or restart takes one and
 * skips starting a process (the bulk of a cold start: Deno's own start, loading the sandboxed
 * worker); a new spare is started a moment later, off the path of the answer. The pool starts
 * with the node's first container: a node without containers keeps no spare process.
 *
 * Where each client has a process of its own (mcm.containerProcess `per-client`), a spare is a
 * client's process with no container yet: taken for a client, it hosts that client's containers,
 * each in a worker, and never narrows itself (sandbox/host/tenant_host.ts). Otherwise:
 *
 * A spare is not narrowed the way a cold process is. A cold process's own flags name only its
 * container's bundle and storage folder; a spare's process flags allow reading every bundle and
 * reading and writing every container's storage, because no container is known when it starts.
 * What confines a taken spare to one container is its host worker, started at the take with
 * Deno permissions for that container's bundle and storage folder only; the sandboxed worker
 * has no permission at all in both. So the microservice's code is confined the same way, but
 * the process around it is a wider wall in a spare: a flaw in the host's narrowing (or in
 * Deno's worker permissions) would reach all containers' files, not one's. The heap limit and
 * the network flags are the node's defaults, as for a cold process of those settings
 * (container_process.ts).
 *
 * @module
 */
import { backoffDelay } from "../../async/backoff.ts";
import { ChannelSocket } from "./channel_socket.ts";
import { type ProcessProfile, sameProfile, spawnContainer } from "./container_process.ts";

/** After a take, the next spare starts this much later: not while the taken one loads. */
const REFILL_DELAY_MS = 250;

/** How the pool starts its spares. */
export interface SparePoolOptions {
  /** Spares kept (0: none). */
  count: number;
  /** The sandbox's code (BundleFiles.runtimeDir). */
  runtimeDir: string;
  /**
   * The folder of all bundles (BundleFiles): a spare's process may read it, before its host
   * narrows itself to one container's bundle.
   */
  bundlesDir: string;
  /**
   * The folder of every container's storage folder (BundleFiles): a spare's process may read
   * and write it, before its host narrows itself to one container's storage.
   */
  storageRoot: string;
  /** The profile of a container with the node's defaults, now (the node's addresses change). */
  profile(): ProcessProfile;
  /** The node's environment: a spare gets where Deno keeps its cache (spawnContainer). */
  readEnv(name: string): string | undefined;
  /** The node's own log lines about spares. */
  log(message: string): void;
  /**
   * Spares for client processes (mcm.containerProcess `per-client`): a spare is taken as a
   * client's process and hosts that client's containers (sandbox/host/tenant_host.ts).
   */
  group: boolean;
  /**
   * Where client processes' sockets go (BundleFiles.channelsDir): each spare client process
   * gets one (channel_socket.ts); absent: none does.
   */
  channelsDir?: string;
}

/** A spare process, with its socket if it is a client's process that has one. */
export interface Spare {
  child: Deno.ChildProcess;
  profile: ProcessProfile;
  socket?: ChannelSocket;
}

/** The node's warm spares. */
export class SparePool {
  readonly #options: SparePoolOptions;
  #idle: Spare[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** Spares that ended while waiting, in a row: the refill backs off. */
  #failures = 0;
  #started = false;
  #closed = false;
  /** Spares being stopped (stale ones take() let go): close() waits for them too. */
  readonly #stopping = new Set<Promise<void>>();

  /** A pool of `options.count` spares; none runs before start(). */
  constructor(options: SparePoolOptions) {
    this.#options = options;
  }

  /** Spares waiting now. */
  get idle(): number {
    return this.#idle.length;
  }

  /** Starts the spares (once: later calls do nothing). */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#fill();
  }

  #fill(): void {
    this.#timer = undefined;
    while (!this.#closed && this.#idle.length < this.#options.count) {
      this.#spawn(this.#options.profile());
    }
  }

  #refillSoon(delay = REFILL_DELAY_MS): void {
    if (this.#timer === undefined && this.#started && !this.#closed) {
      this.#timer = setTimeout(() => this.#fill(), delay);
    }
  }

  #spawn(profile: ProcessProfile): void {
    const { bundlesDir, storageRoot, group, channelsDir } = this.#options;
    const socket = group && channelsDir ? ChannelSocket.open(channelsDir) : undefined;
    let child: Deno.ChildProcess;
    try {
      child = spawnContainer(
        this.#options.runtimeDir,
        {
          read: [bundlesDir, storageRoot],
          write: storageRoot,
          profile,
          ...(group ? { group: true, socket: socket?.path } : { spare: true }),
        },
        this.#options.readEnv,
      );
    } catch (error) {
      // No process to hear on it.
      socket?.close();
      throw error;
    }
    const spare = { child, profile, socket };
    this.#idle.push(spare);
    child.status.then(async (status) => {
      const index = this.#idle.indexOf(spare);
      if (index < 0) return; // Taken (its channel watches it now) or stopped.
      this.#idle.splice(index, 1);
      socket?.close();
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
  take(profile: ProcessProfile): Spare | undefined {
    // Spares started before the node's profile changed (its addresses) fit no one any more.
    const current = this.#options.profile();
    for (const stale of this.#idle.filter((spare) => !sameProfile(spare.profile, current))) {
      const stopping = this.#stop(stale).then(() => {
        this.#stopping.delete(stopping);
        this.#refillSoon();
      });
      this.#stopping.add(stopping);
    }
    const index = this.#idle.findIndex((spare) => sameProfile(spare.profile, profile));
    this.#refillSoon();
    if (index < 0) return undefined;
    this.#failures = 0;
    return this.#idle.splice(index, 1)[0];
  }

  /** Kills a spare nobody took; resolves once its process ended. */
  async #stop(spare: Spare): Promise<void> {
    this.#idle = this.#idle.filter((other) => other !== spare);
    try {
      spare.child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
    await spare.child.status;
    spare.socket?.close();
    await spare.child.stderr.cancel().catch(() => {});
    await spare.child.stdout.cancel().catch(() => {});
  }

  /**
   * Stops every spare (the node is shutting down) and waits until their processes ended, the
   * stale ones a take is stopping included.
   */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await Promise.all([...this.#idle.map((spare) => this.#stop(spare)), ...this.#stopping]);
  }
}
