/**
 * Containers (spec/mcm.yaml, "Containers"): starting, redeploying, stopping and restoring them
 * after a node restart. How their runtimes are built: container_runtimes.ts; the table of base
 * paths that routes requests to them: mounted_containers.ts.
 *
 * @module
 */
import type { Container, StartContainerRequest } from "../../gen/mcm/validators.ts";
import { Conflict, NotFound, Unavailable, Unprocessable } from "../errors/mod.ts";
import { KeyedLock } from "../storage/keyed_lock.ts";
import type { BundleFiles } from "./images/bundle_files.ts";
import type { Caller } from "./caller.ts";
import { LoadError } from "./runtime/container_channel.ts";
import { containerView } from "./container_view.ts";
import type { ContainerRuntime, LogLine } from "./runtime/container_runtime.ts";
import type { Images } from "./images/images.ts";
import type { ContainerRecord, McmRecords } from "./mcm_records.ts";
import { plannedContainer } from "./planned_container.ts";
import type { SparePool } from "./runtime/spare_pool.ts";
import type { LogLine as KeptLine } from "./runtime/container_log.ts";
import { type LogFollower, LogFollowers } from "./runtime/log_followers.ts";
import { type Match, type McmSettings, type NodeFacts, serviceTypeOf } from "./deployment_facts.ts";
import type { ContainerPlacement } from "./runtime/container_placement.ts";
import { containerProcesses, containerRuntime, servedEnv } from "./container_runtimes.ts";
import { MountedContainers } from "./mounted_containers.ts";

export { type Match, type McmSettings, type NodeFacts, serviceTypeOf } from "./deployment_facts.ts";

/** The containers of the node. */
export class Deployments {
  readonly #records: McmRecords;
  readonly #files: BundleFiles;
  readonly #images: Images;
  readonly #settings: McmSettings;
  readonly #node: NodeFacts;
  readonly #runtimes: MountedContainers;
  readonly #lock = new KeyedLock();
  readonly #spares: SparePool | undefined;
  readonly #placement: ContainerPlacement;
  readonly #followers = new LogFollowers();

  constructor(
    records: McmRecords,
    files: BundleFiles,
    images: Images,
    settings: McmSettings,
    node: NodeFacts,
  ) {
    this.#records = records;
    this.#files = files;
    this.#images = images;
    this.#settings = settings;
    this.#node = node;
    this.#runtimes = new MountedContainers(records.segments());
    const { placement, spares } = containerProcesses(files, settings, node);
    this.#placement = placement;
    this.#spares = spares;
  }

  /**
   * Starts every stored container (in the background: the node serves meanwhile), then the
   * warm spares if there is any container (a node without containers keeps no spare).
   */
  restore(): void {
    const records = this.#records.containers();
    for (const record of records) {
      const runtime = this.#runtimeFor(record);
      this.#runtimes.mount(record, runtime);
      if (record.stopped) {
        // Stopped on purpose before the node stopped: it stays so until restarted.
        runtime.log("node", "kept stopped: it was stopped before the node restarted");
        void runtime.stop();
        continue;
      }
      runtime.start(() => this.#files.storageDir(record.id)).catch((error) => {
        if (!(error instanceof LoadError)) runtime.retry();
      });
    }
    if (records.length > 0) this.#spares?.start();
  }

  /**
   * Ends every followed log (the node shuts down): before the server stops, which waits for
   * its open answers.
   */
  endFollowers(): void {
    this.#followers.end(undefined, { end: "node_stopping", message: "the node is stopping" });
  }

  /** Stops every container, every client's process and every spare (the node shuts down). */
  async stopAll(): Promise<void> {
    this.endFollowers();
    await Promise.all([
      ...this.#runtimes.runtimes().map((runtime) => runtime.stop()),
      this.#spares?.close(),
    ]);
    await this.#placement.close();
  }

  /** Where `path` leads: a container and the path below its base path, or an unknown one. */
  match(path: string): Match | undefined {
    return this.#runtimes.match(path);
  }

  /** The API view of a container. */
  #view(record: ContainerRecord): Container {
    return containerView(
      record,
      servedEnv(record),
      this.#runtimes.get(record.id),
      this.#node.inferenceUsage?.(record.id),
    );
  }

  #runtimeFor(record: ContainerRecord): ContainerRuntime {
    const runtime: ContainerRuntime = containerRuntime(record, {
      files: this.#files,
      settings: this.#settings,
      node: this.#node,
      placement: this.#placement,
    }, {
      // Only while it is the container's deployment: a redeploy's record starts afresh.
      onQuarantine: () => {
        if (this.#runtimes.get(record.id) === runtime) this.#records.quarantine(record.id);
      },
      // The deployment that serves the id speaks to its followers, not one being replaced.
      onLogLine: (line) => {
        if (this.#runtimes.get(record.id) === runtime) this.#followers.line(record.id, line);
      },
    });
    return runtime;
  }

  /** A container the caller may see, by id or (of its own client) by name; 404 otherwise. */
  #find(caller: Caller, id: string): ContainerRecord {
    const record = this.#records.container(id) ??
      this.#records.container(`${caller.client}-${id}`);
    if (!record || (!caller.admin && record.client !== caller.client)) {
      throw new NotFound(`no container '${id}' for client '${caller.client}'`);
    }
    return record;
  }

  /**
   * Starts a container, or redeploys one of the same id: the new process takes over once its
   * code loaded; if it does not load, the old one keeps serving (422).
   */
  start(
    caller: Caller,
    request: StartContainerRequest,
  ): Promise<{ container: Container; created: boolean }> {
    return this.#lock.exclusive(`${caller.client}-${request.name}`, async () => {
      const record = plannedContainer(
        {
          records: this.#records,
          images: this.#images,
          memoryMb: this.#settings.memoryMb,
          reservedPrefixes: this.#node.reservedPrefixes,
        },
        caller,
        request,
      );
      const old = this.#records.container(record.id);
      if (!old && this.#runtimes.size >= this.#settings.maxContainers) {
        throw new Conflict(
          `the node runs its maximum of ${this.#settings.maxContainers} containers (mcm.maxContainers)`,
        );
      }
      await this.#files.storageDir(record.id);
      const runtime = this.#runtimeFor(record);
      try {
        await runtime.start();
      } catch (error) {
        throw new Unprocessable(`the microservice did not start: ${(error as Error).message}`);
      }
      this.#records.putContainer(record);
      // The first container of the node: from now on spares wait for the next ones.
      this.#spares?.start();
      const previous = old ? this.#runtimes.get(old.id) : undefined;
      if (old) this.#runtimes.unmount(old);
      this.#runtimes.mount(record, runtime);
      if (previous) await previous.stop();
      if (old && old.bundle !== record.bundle) await this.#images.dropBundle(old.bundle);
      return { container: this.#view(record), created: !old };
    });
  }

  /**
   * Every deployed microservice as the node describes itself (insight's and mds's `services`):
   * the container's id, its service type (`<clientId>-<name>`, as the reference advertises it)
   * and its state. Discovery announces a digest of this list, so peers see changes at once.
   */
  services(): { id: string; serviceType: string; status: string }[] {
    return this.#records.containers(undefined).map((record) => ({
      id: record.id,
      serviceType: serviceTypeOf(record),
      status: this.#runtimes.get(record.id)?.state ?? "stopped",
    }));
  }

  /** The caller's containers (every client's for a key holder), oldest first. */
  list(caller: Caller): Container[] {
    return this.#records.containers(caller.admin ? undefined : caller.client).map((record) =>
      this.#view(record)
    );
  }

  get(caller: Caller, id: string): Container {
    return this.#view(this.#find(caller, id));
  }

  logs(caller: Caller, id: string): LogLine[] {
    return this.#runtimes.get(this.#find(caller, id).id)?.logs() ?? [];
  }

  /**
   * Follows a container's log: its recent lines, and `follower` told each new one until the
   * container is removed or the node stops (or `unfollow`). TooMany past the caller's client's
   * or the node's most followers (runtime/log_followers.ts).
   */
  followLogs(
    caller: Caller,
    idOrName: string,
    follower: LogFollower,
  ): { recent: KeptLine[]; unfollow(): void } {
    const id = this.#find(caller, idOrName).id;
    return {
      recent: this.#runtimes.get(id)?.logs() ?? [],
      unfollow: this.#followers.add(id, caller.client, follower),
    };
  }

  /** Stops a container's process and keeps it, stopped (a node restart keeps it so). */
  stop(caller: Caller, idOrName: string): Promise<Container> {
    const id = this.#find(caller, idOrName).id;
    return this.#lock.exclusive(id, async () => {
      const record = this.#find(caller, id);
      this.#records.setStopped(id, true);
      await this.#runtimes.get(id)?.stop();
      return this.#view({ ...record, stopped: true });
    });
  }

  /**
   * Stops a container if it runs and starts the same deployment again (a stopped one is just
   * started); Unprocessable (and state `failed`) when its code does not load, Unavailable (and
   * state `restarting`: retried with back-off) when it failed otherwise.
   */
  restart(caller: Caller, idOrName: string): Promise<Container> {
    const id = this.#find(caller, idOrName).id;
    return this.#lock.exclusive(id, async () => {
      const record = this.#find(caller, id);
      const runtime = this.#runtimes.get(id);
      if (!runtime) throw new NotFound(`container '${id}' is not deployed on this node`);
      await runtime.stop();
      this.#records.setStopped(id, false);
      await this.#files.storageDir(id);
      try {
        await runtime.start();
      } catch (error) {
        const why = `the microservice did not start: ${(error as Error).message}`;
        if (error instanceof LoadError) throw new Unprocessable(why);
        // Its process died or hung while loading: retried with back-off, as restore does.
        runtime.retry();
        throw new Unavailable(`${why}; it is retried`, { retryAfterSeconds: 1 });
      }
      return this.#view({ ...record, stopped: false });
    });
  }

  /** Stops and removes a container; its storage too when `purge`. */
  delete(caller: Caller, idOrName: string, purge: boolean): Promise<Container> {
    const id = this.#find(caller, idOrName).id;
    return this.#lock.exclusive(id, async () => {
      const record = this.#find(caller, id);
      const runtime = this.#runtimes.get(id);
      this.#runtimes.unmount(record);
      this.#records.deleteContainer(id);
      await runtime?.stop();
      this.#node.forgetContainer?.(id);
      await this.#images.dropBundle(record.bundle);
      if (purge) await this.#files.removeStorage(id);
      this.#followers.end(id, { end: "removed", message: `container ${id} was removed` });
      return { ...this.#view(record), state: "stopped" };
    });
  }
}
