/**
 * The node's running deployments by container id, and the table of base paths (and aliases)
 * that routes requests to them (Deployments, deployments.ts).
 *
 * @module
 */
import type { Match } from "./deployment_facts.ts";
import type { ContainerRecord } from "./mcm_records.ts";
import type { ContainerRuntime } from "./runtime/container_runtime.ts";

/** Runtimes by container id, base path and alias. */
export class MountedContainers {
  readonly #byId = new Map<string, ContainerRuntime>();
  /** Base paths and aliases to their containers. */
  readonly #routes = new Map<string, ContainerRuntime>();
  /** First path segments of every base path (stored or mounted): unknown paths under them 404. */
  readonly #segments: Set<string>;

  /** An empty table; `segments` are those of the stored containers. */
  constructor(segments: Iterable<string>) {
    this.#segments = new Set(segments);
  }

  /** How many are mounted. */
  get size(): number {
    return this.#byId.size;
  }

  /** The runtime of container `id`, if mounted. */
  get(id: string): ContainerRuntime | undefined {
    return this.#byId.get(id);
  }

  /** Every mounted runtime. */
  runtimes(): ContainerRuntime[] {
    return [...this.#byId.values()];
  }

  /** Serves `record`'s base path (and alias) with `runtime`. */
  mount(record: ContainerRecord, runtime: ContainerRuntime): void {
    this.#byId.set(record.id, runtime);
    this.#routes.set(record.basePath, runtime);
    if (record.alias) this.#routes.set(record.alias, runtime);
    this.#segments.add(record.basePath.split("/")[1]);
  }

  /** Serves `record`'s paths no more. */
  unmount(record: ContainerRecord): void {
    this.#byId.delete(record.id);
    this.#routes.delete(record.basePath);
    if (record.alias) this.#routes.delete(record.alias);
  }

  /** Where `path` leads: a container and the path below its base path, or an unknown one. */
  match(path: string): Match | undefined {
    if (this.#routes.size === 0) return undefined;
    for (let end = path.length; end > 0; end = path.lastIndexOf("/", end - 1)) {
      const runtime = this.#routes.get(end === path.length ? path : path.slice(0, end));
      if (runtime) return { runtime, path: path.slice(end) || "/" };
    }
    const first = path.split("/")[1];
    return this.#segments.has(first) ? { unknown: first } : undefined;
  }
}
