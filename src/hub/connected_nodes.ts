/**
 * The nodes a hub holds: their sessions by node id, those still proving themselves, and the
 * listings they ask for (with the cluster's nodes when the hub is in one). It is the host of
 * every NodeSession (./node_session.ts).
 *
 * @module
 */
import type { NodeDescription } from "../../gen/mds/validators.ts";
import type { TokenVerifier } from "../identity/token_verifier.ts";
import type { HubCluster } from "./cluster/hub_cluster.ts";
import type { HubSettings } from "./hub_settings.ts";
import type { HubStore } from "./hub_store.ts";
import { accountListing, proximityListing } from "./listings.ts";
import type { NodeSession, SessionHost } from "./node_session.ts";

/** The hub's sessions. */
export class ConnectedNodes implements SessionHost {
  readonly verifier: TokenVerifier;
  readonly store: HubStore;
  readonly pingSeconds: number;
  /** Set once the raw transport listens (none: the WebSocket only). */
  rawPort: number | undefined;
  /** Set once the hub joined its cluster (none: it runs alone). */
  cluster: HubCluster | undefined;
  readonly #settings: HubSettings;
  readonly #sessions = new Map<string, NodeSession>();
  readonly #connecting = new Set<NodeSession>();

  /** No node yet. */
  constructor(settings: HubSettings, verifier: TokenVerifier, store: HubStore) {
    this.#settings = settings;
    this.verifier = verifier;
    this.store = store;
    this.pingSeconds = settings.pingSeconds;
  }

  /** The hub's public URL for a node that connected to `origin`. */
  publicUrl(origin: string): string {
    return this.#settings.publicUrl ?? origin;
  }

  /** Whether another node may connect (the hub holds fewer than maxConnections). */
  admits(): boolean {
    return this.#sessions.size + this.#connecting.size < this.#settings.maxConnections;
  }

  /** Takes a new connection; it counts once it proves itself (register). */
  connecting(session: NodeSession): void {
    this.#connecting.add(session);
  }

  /** The authenticated session of a node, if it is connected here. */
  session(nodeId: string): NodeSession | undefined {
    return this.#sessions.get(nodeId);
  }

  /** How many nodes are connected, and how many of them over the raw transport. */
  counts(): { nodes: number; raw: number } {
    const raw = [...this.#sessions.values()].filter((session) => session.raw).length;
    return { nodes: this.#sessions.size, raw };
  }

  /** Pings every session due one. */
  keepAlive(now: number): void {
    for (const session of this.#all()) session.keepAlive(now);
  }

  /** Closes every session: the hub is going away. */
  closeAll(): void {
    for (const session of this.#all()) session.close(1001, "the hub is shutting down");
  }

  register(session: NodeSession): void {
    this.#connecting.delete(session);
    const previous = this.#sessions.get(session.nodeId!);
    this.#sessions.set(session.nodeId!, session);
    previous?.close(4409, "replaced by a newer connection of the same node");
    // A node that moved here from another hub keeps the fix the cluster holds for it.
    session.entry!.fix ??= this.cluster?.presence.fixOf(session.nodeId!);
    this.cluster?.presence.published(session.entry!);
  }

  changed(session: NodeSession): void {
    this.cluster?.presence.published(session.entry!);
  }

  unregister(session: NodeSession): void {
    this.#connecting.delete(session);
    if (session.nodeId && this.#sessions.get(session.nodeId) === session) {
      this.#sessions.delete(session.nodeId);
      this.cluster?.presence.withdrawn(session.nodeId);
    }
  }

  list(session: NodeSession, kind: "account" | "proximity"): NodeDescription[] {
    const entries = [...this.#sessions.values()].map((s) => s.entry!);
    if (this.cluster?.up) entries.push(...this.cluster.presence.remoteNodes());
    const sepUrl = this.publicUrl(session.origin);
    return kind === "account"
      ? accountListing(session.entry!, entries, sepUrl)
      : proximityListing(session.entry!, entries, this.#settings.proximityKm, sepUrl);
  }

  #all(): NodeSession[] {
    return [...this.#sessions.values(), ...this.#connecting];
  }
}
