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
import type { SparePool } from "./spare_pool.ts";
import { TenantProcess } from "./tenant_process.ts";

/** A container's pipe, and how it came. */
export interface Placement {
  pipe: ContainerPipe;
  /** Whether no process had to start for it (a spare, or its client's running process). */
  warm: boolean;
  /** For the node's log line: where it went when warm. */
  where?: string;
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
    if (spare) return { pipe: spare, warm: true, where: "a warm spare" };
    const { bundlePath, storageDir, profile } = request;
    const pipe = spawnContainer(
      this.#options.runtimeDir,
      { read: [bundlePath, storageDir], write: storageDir, profile },
      this.#options.readEnv,
    );
    return { pipe, warm: false };
  }

  /** Nothing of its own to stop: each container's channel ends its process. */
  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** One process per client and flags, each container a worker in it (sandbox/tenant_host.ts). */
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
    const running = this.#processes.find((entry) =>
      entry.client === client && sameProfile(entry.profile, profile) && entry.process.open
    );
    if (running && !request.cold) {
      return { pipe: running.process.join(), warm: true, where: "its client's process" };
    }
    const spare = request.cold ? undefined : this.#options.spares?.take(profile);
    const { runtimeDir, bundlesDir, storageRoot, readEnv } = this.#options;
    const child = spare ??
      spawnContainer(
        runtimeDir,
        { read: [bundlesDir, storageRoot], write: storageRoot, profile, group: true },
        readEnv,
      );
    const entry = {
      client,
      profile,
      process: new TenantProcess(child, {
        log: this.#options.log,
        onEnd: () => {
          const index = this.#processes.indexOf(entry);
          if (index >= 0) this.#processes.splice(index, 1);
        },
      }),
    };
    this.#processes.push(entry);
    return { pipe: entry.process.join(), warm: spare !== undefined, where: "a warm spare" };
  }

  /** Ends every client's process (the node is shutting down). */
  async close(): Promise<void> {
    await Promise.all(this.#processes.map((entry) => entry.process.close()));
  }
}

/** Places containers: one of the two above. */
export type ContainerPlacement = ProcessPerContainer | ProcessPerClient;
