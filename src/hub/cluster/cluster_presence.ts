/**
 * Which node is connected to which hub of a cluster (spec/hub.yaml, "Hub clusters"), kept in two
 * NATS key-value buckets: `edgenode_hubs` (each hub's heartbeat: its id, the URL other hubs
 * forward to, and when; the bucket's TTL lets a dead hub's key go) and `edgenode_nodes` (one key
 * per connected node: its hub, its signed description, its fix and public address). Every value
 * is sealed with the cluster key. Each hub watches both buckets and keeps the live part in memory,
 * so listings and routing read no network; a node whose hub has not beaten for HUB_SILENT_MS is
 * left out, and swept from the bucket later.
 *
 * @module
 */
import type { KV, KvWatchEntry } from "@nats-io/kv";
import type { QueuedIterator } from "@nats-io/transport-node";
import type { ConnectedNode } from "../listings.ts";
import type { ClusterKey } from "./cluster_key.ts";

/** The buckets' names. */
export const HUBS_BUCKET = "edgenode_hubs";
export const NODES_BUCKET = "edgenode_nodes";
/** A hub beats this often. */
export const HEARTBEAT_MS = 1_000;
/** A hub silent this long is taken for dead: its nodes are no longer listed or routed to. */
export const HUB_SILENT_MS = 3_000;
/** A dead hub's node keys are deleted this long after its last beat. */
const SWEEP_AFTER_MS = 10_000;

/** A hub's heartbeat record. */
interface HubRecord {
  id: string;
  url: string;
  at: number;
  nodes: number;
}

/** A node's presence record. */
interface NodeRecord {
  hub: string;
  entry: ConnectedNode;
}

/** A node connected to another hub of the cluster. */
export interface RemoteNode {
  hubId: string;
  hubUrl: string;
  entry: ConnectedNode;
}

interface Known<T> {
  record: T;
  revision: number;
  /** When this hub received it (its own clock: no clocks are compared). */
  heard: number;
  generation: number;
}

/** The cluster's presence as one hub sees it, and what this hub publishes. */
export class ClusterPresence {
  readonly hubId: string;
  readonly #key: ClusterKey;
  readonly #hubs = new Map<string, Known<HubRecord>>();
  readonly #nodes = new Map<string, Known<NodeRecord>>();
  /** This hub's own nodes, with the revision of their key once written. */
  readonly #local = new Map<string, { entry: ConnectedNode; revision?: number }>();
  #hubsKv: KV | undefined;
  #nodesKv: KV | undefined;
  #watchers: QueuedIterator<KvWatchEntry>[] = [];
  #generation = 0;
  #url: string;

  /** Presence for hub `hubId`, reached by other hubs at `url`. */
  constructor(hubId: string, url: string, key: ClusterKey) {
    this.hubId = hubId;
    this.#url = url;
    this.#key = key;
  }

  /** Starts on (newly opened) buckets: watches them and writes this hub's nodes again. */
  async attach(hubsKv: KV, nodesKv: KV): Promise<void> {
    this.detach();
    this.#hubsKv = hubsKv;
    this.#nodesKv = nodesKv;
    const generation = ++this.#generation;
    // No sweep yet: until the replay, every hub looks as silent as this one was away.
    await this.#beat();
    const replayed = Promise.all([
      this.#watch(hubsKv, HUBS_BUCKET, this.#hubs, generation),
      this.#watch(nodesKv, NODES_BUCKET, this.#nodes, generation),
    ]);
    await replayed;
    // Keys deleted while this hub was away were never seen as deletes: drop what the replay
    // did not bring back.
    for (const map of [this.#hubs, this.#nodes] as Map<string, Known<unknown>>[]) {
      for (const [name, known] of map) if (known.generation < generation) map.delete(name);
    }
    await Promise.all([...this.#local.keys()].map((nodeId) => this.#write(nodeId)));
  }

  /** Stops watching (NATS went away); what was known stays until attach replaces it. */
  detach(): void {
    for (const watcher of this.#watchers) watcher.stop();
    this.#watchers = [];
    this.#hubsKv = this.#nodesKv = undefined;
  }

  /** A node connected to this hub, or its description or fix changed. */
  published(entry: ConnectedNode): void {
    this.#local.set(entry.node.id, { entry });
    this.#write(entry.node.id).catch(() => {}); // Written again at the next attach.
  }

  /** A node left this hub: its key goes, unless another hub has written it since. */
  withdrawn(nodeId: string): void {
    const local = this.#local.get(nodeId);
    this.#local.delete(nodeId);
    if (local?.revision === undefined || !this.#nodesKv) return;
    this.#nodesKv.delete(nodeId, { previousSeq: local.revision }).catch(() => {});
  }

  /** Writes this hub's heartbeat, and sweeps the keys of hubs long dead. */
  async beat(): Promise<void> {
    await this.#beat();
    this.#sweep();
  }

  async #beat(): Promise<void> {
    const record: HubRecord = {
      id: this.hubId,
      url: this.#url,
      at: Date.now(),
      nodes: this.#local.size,
    };
    await this.#hubsKv?.put(this.hubId, this.#key.seal(HUBS_BUCKET, this.hubId, record));
  }

  /** The live hubs other than this one. */
  get peers(): number {
    let live = 0;
    for (const [id, known] of this.#hubs) if (id !== this.hubId && this.#alive(known)) live++;
    return live;
  }

  /** Nodes connected to other live hubs. */
  *remoteNodes(): Iterable<ConnectedNode> {
    for (const [nodeId, known] of this.#nodes) {
      if (!this.#local.has(nodeId) && this.#liveHub(known.record.hub)) yield known.record.entry;
    }
  }

  /** Where node `nodeId` is connected, when that is another live hub. */
  locate(nodeId: string): RemoteNode | undefined {
    const known = this.#nodes.get(nodeId);
    if (!known || this.#local.has(nodeId)) return undefined;
    const hub = this.#liveHub(known.record.hub);
    return hub && { hubId: hub.id, hubUrl: hub.url, entry: known.record.entry };
  }

  /** The last fix the cluster holds for a node (kept when it moves between hubs). */
  fixOf(nodeId: string): ConnectedNode["fix"] {
    return this.#nodes.get(nodeId)?.record.entry.fix;
  }

  async #write(nodeId: string): Promise<void> {
    const local = this.#local.get(nodeId);
    if (!local || !this.#nodesKv) return;
    const record: NodeRecord = { hub: this.hubId, entry: local.entry };
    const revision = await this.#nodesKv.put(
      nodeId,
      this.#key.seal(NODES_BUCKET, nodeId, record),
    );
    if (this.#local.get(nodeId) === local) local.revision = revision;
  }

  /** Follows `kv` into `into` from its current values on; resolves once those are replayed. */
  async #watch<T>(
    kv: KV,
    bucket: string,
    into: Map<string, Known<T>>,
    generation: number,
  ): Promise<void> {
    const watcher = await kv.watch();
    this.#watchers.push(watcher);
    let replayed!: () => void;
    const done = new Promise<void>((resolve) => (replayed = resolve));
    // An empty bucket replays nothing: its (absent) first entry cannot say it was the last.
    if ((await kv.status()).values === 0) replayed();
    (async () => {
      for await (const entry of watcher) {
        if (entry.operation === "PUT") {
          const record = this.#key.open<T>(bucket, entry.key, entry.value);
          if (record !== undefined && this.#valid(bucket, entry.key, record)) {
            into.set(entry.key, {
              record,
              revision: entry.revision,
              heard: Date.now(),
              generation,
            });
          } else {
            // What was known stays; a forged value over one of this hub's own nodes is
            // overwritten at once.
            console.error(`hub: ignored ${bucket}/${entry.key}: not sealed with the cluster key`);
            if (bucket === NODES_BUCKET) this.#write(entry.key).catch(() => {});
          }
        } else {
          into.delete(entry.key);
          // Still connected here: whoever deleted it was wrong.
          if (bucket === NODES_BUCKET && this.#local.has(entry.key)) {
            this.#write(entry.key).catch(() => {});
          }
        }
        if (entry.isUpdate || !entry.delta) replayed();
      }
    })().catch(() => {}).finally(replayed);
    await done;
  }

  /** What a sealed record must also say of itself. */
  #valid(bucket: string, name: string, record: unknown): boolean {
    if (bucket === HUBS_BUCKET) return (record as HubRecord).id === name;
    return (record as NodeRecord).entry?.node?.id === name;
  }

  #alive(known: Known<HubRecord>): boolean {
    return Date.now() - known.heard < HUB_SILENT_MS;
  }

  #liveHub(hubId: string): HubRecord | undefined {
    if (hubId === this.hubId) return undefined;
    const known = this.#hubs.get(hubId);
    return known && this.#alive(known) ? known.record : undefined;
  }

  #sweep(): void {
    const kv = this.#nodesKv;
    if (!kv) return;
    const now = Date.now();
    for (const [nodeId, known] of this.#nodes) {
      const hub = this.#hubs.get(known.record.hub);
      if (known.record.hub === this.hubId || this.#local.has(nodeId)) continue;
      if (now - (hub?.heard ?? known.heard) < SWEEP_AFTER_MS) continue;
      this.#nodes.delete(nodeId);
      kv.delete(nodeId, { previousSeq: known.revision }).catch(() => {});
    }
  }
}
