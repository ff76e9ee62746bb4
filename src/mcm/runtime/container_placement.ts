/**
 * Where a container runs (mcm.containerProcess): in its client's process, shared with that
 * client's other containers of the same flags (`per-client`, the default: a container costs a
 * worker), or in a process of its own (`per-container`: the narrowest wall, a process's cost).
 * Either way a warm spare process is taken when one fits (spare_pool.ts).
 *
 * @module
 */
import {
  type ContainerPipe,
  type ProcessProfile,
  sameProfile,
  spawnContainer,
} from "./container_process.ts";
import type { ContainerUsage } from "./container_usage.ts";
import { ChannelSocket } from "./channel_socket.ts";
import type { SparePool } from "./spare_pool.ts";
import { TenantProcess, type TenantSlot } from "./tenant_process.ts";

/** A container's pipe, and how it came. */
export interface Placement {
  pipe: ContainerPipe;
  /** Whether no process had to start for it (a spare, or its client's running process). */
  warm: boolean;
  /** For the node's log line: where it went when warm. */
  where?: string;
  /** Its slot in its client's process, shared with its siblings (per-client). */
  shared?: TenantSlot;
  /**
   * Its latest figures: its slot's usage reports in its client's process; none yet in a process
   * of its own (the node, narrowed, may not read /proc: that process would have to report).
   */
  usage(): ContainerUsage | undefined;
}

/** What placing a container needs to know about it. */
export interface PlacementRequest {
  /** Its client: containers of one client share a process (per-client). */
  client: string;
  profile: ProcessProfile;
  bundlePath: string;
  storageDir: string;
  /** A cold start wanted: a warm process just failed it. */
  cold: boolean;
  /**
   * A process of its own even where its client's containers share one: it brought down its
   * client's process too often (container_runtime.ts).
   */
  alone?: boolean;
}

/** How processes start. */
export interface PlacementOptions {
  /** The sandbox's code (BundleFiles.runtimeDir). */
  runtimeDir: string;
  /** The folder of all bundles: a client's process may read it (as a spare's may). */
  bundlesDir: string;
  /** The folder of all storage: a client's process may read and write it. */
  storageRoot: string;
  spares: SparePool | undefined;
  /**
   * Where client processes' sockets go (BundleFiles.channelsDir; channel_socket.ts): their
   * workers then speak to the node directly. Absent: each process's main thread relays.
   */
  channelsDir?: string;
  readEnv(name: string): string | undefined;
  log(message: string): void;
}

/** One process per container. */
export class ProcessPerContainer {
  readonly #options: PlacementOptions;

  /** Places containers with `options`. */
  constructor(options: PlacementOptions) {
    this.#options = options;
  }

  /** A spare that fits, or a process of the container's own narrow flags. */
  place(request: PlacementRequest): Placement {
    const spare = request.cold ? undefined : this.#options.spares?.take(request.profile);
    if (spare) return ownProcess(spare.child, true);
    return ownProcess(spawnAlone(this.#options, request), false);
  }

  /** Nothing of its own to stop: each container's channel ends its process. */
  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** One process per client and flags, each container a worker in it (sandbox/host/tenant_host.ts). */
export class ProcessPerClient {
  readonly #options: PlacementOptions;
  readonly #processes: { client: string; profile: ProcessProfile; process: TenantProcess }[] = [];

  /** Places containers with `options`. */
  constructor(options: PlacementOptions) {
    this.#options = options;
  }

  /** Client processes running now. */
  get size(): number {
    return this.#processes.length;
  }

  /**
   * A slot of the client's running process of the same flags; else of a spare taken for the
   * client, else of a process started for it.
   */
  place(request: PlacementRequest): Placement {
    const { client, profile } = request;
    // Not a spare: in this mode a spare is a client's process.
    if (request.alone) return ownProcess(spawnAlone(this.#options, request), false);
    const running = this.#processes.find((entry) =>
      entry.client === client && sameProfile(entry.profile, profile) && entry.process.open
    );
    if (running && !request.cold) {
      return joined(running.process, true, "its client's process");
    }
    const spare = request.cold ? undefined : this.#options.spares?.take(profile);
    const { runtimeDir, bundlesDir, storageRoot, readEnv, channelsDir } = this.#options;
    const socket = spare ? spare.socket : channelsDir ? ChannelSocket.open(channelsDir) : undefined;
    let child: Deno.ChildProcess;
    try {
      child = spare?.child ??
        spawnContainer(
          runtimeDir,
          {
            read: [bundlesDir, storageRoot],
            write: storageRoot,
            profile,
            group: true,
            socket: socket?.path,
          },
          readEnv,
        );
    } catch (error) {
      // No process to hear on it.
      socket?.close();
      throw error;
    }
    const entry = {
      client,
      profile,
      process: new TenantProcess(child, {
        log: this.#options.log,
        onEnd: () => {
          const index = this.#processes.indexOf(entry);
          if (index >= 0) this.#processes.splice(index, 1);
        },
      }, socket),
    };
    this.#processes.push(entry);
    return joined(entry.process, spare !== undefined, "a warm spare");
  }

  /** Ends every client's process (the node is shutting down). */
  async close(): Promise<void> {
    await Promise.all(this.#processes.map((entry) => entry.process.close()));
  }
}

/** A process of the container's own narrow flags (not a spare). */
function spawnAlone(options: PlacementOptions, request: PlacementRequest): Deno.ChildProcess {
  const { bundlePath, storageDir, profile } = request;
  return spawnContainer(
    options.runtimeDir,
    { read: [bundlePath, storageDir], write: storageDir, profile },
    options.readEnv,
  );
}

/** The placement of a container in a process of its own. */
function ownProcess(child: Deno.ChildProcess, warm: boolean): Placement {
  return { pipe: child, warm, ...(warm ? { where: "a warm spare" } : {}), usage: () => undefined };
}

/** The placement of a container in a slot of its client's process. */
function joined(process: TenantProcess, warm: boolean, where: string): Placement {
  const { pipe, slot } = process.join();
  return {
    pipe,
    warm,
    where,
    shared: slot,
    usage: () => slot.usage(),
  };
}

/** Places containers: one of the two above. */
export type ContainerPlacement = ProcessPerContainer | ProcessPerClient;
