/**
 * The verified members of the local link network, as this node sees them, and the rules every
 * member applies to the same data: who is the supernode and which network id they share.
 *
 * @module
 */
import type { NodeDescription } from "../../gen/mds/validators.ts";

/** A peer this node has verified. */
export interface Peer {
  /** What the peer signed of itself. */
  node: NodeDescription;
  /** The base URL the proof came from. */
  url: string;
  /** When its records expire (ms since the epoch). */
  expiresAt: number;
  /** The TXT strings it announced, to notice a change; absent for static peers. */
  txtKey?: string;
}

/** The most peers kept; more would be a flood, not a LAN. */
export const MAX_PEERS = 1024;

/** The supernode among these nodes: the earliest start, then the smaller id. */
export function electSupernode(nodes: NodeDescription[]): NodeDescription {
  return nodes.reduce((best, node) =>
    node.startedAt < best.startedAt || (node.startedAt === best.startedAt && node.id < best.id)
      ? node
      : best
  );
}

/** Orders members as listings show them: supernode first, then by start time and id. */
export function byElection(a: NodeDescription, b: NodeDescription): number {
  return a.startedAt - b.startedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** The table of verified peers. */
export class Members {
  readonly #peers = new Map<string, Peer>();

  /** The peer with this id, if verified and unexpired. */
  get(id: string, now = Date.now()): Peer | undefined {
    const peer = this.#peers.get(id);
    return peer && peer.expiresAt > now ? peer : undefined;
  }

  /** Adds or replaces a verified peer; false when the table is full. */
  put(peer: Peer): boolean {
    if (!this.#peers.has(peer.node.id) && this.#peers.size >= MAX_PEERS) return false;
    this.#peers.set(peer.node.id, peer);
    return true;
  }

  /** Extends a peer's life (a repeated announcement with nothing new). */
  refresh(id: string, expiresAt: number): void {
    const peer = this.#peers.get(id);
    if (peer) peer.expiresAt = Math.max(peer.expiresAt, expiresAt);
  }

  /** Removes a peer; true when it was there. */
  remove(id: string): boolean {
    return this.#peers.delete(id);
  }

  /** Drops expired peers; true when any went. */
  expire(now = Date.now()): boolean {
    let changed = false;
    for (const [id, peer] of this.#peers) {
      if (peer.expiresAt <= now) changed = this.#peers.delete(id);
    }
    return changed;
  }

  /** The unexpired peers. */
  list(now = Date.now()): Peer[] {
    return [...this.#peers.values()].filter((peer) => peer.expiresAt > now);
  }
}
