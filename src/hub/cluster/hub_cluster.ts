/**
 * A hub's membership of a cluster (spec/hub.yaml, "Hub clusters"): its NATS connection, kept up
 * for as long as the hub runs, and the presence it publishes and follows through it. NATS being
 * away never stops the hub: it serves the nodes connected to it, says that cross-hub routing is
 * down (health, log, the 503 of a request for another hub's node), and joins again by itself when
 * NATS is back.
 *
 * @module
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import type { ClusterKey } from "./cluster_key.ts";
import {
  ClusterPresence,
  HEARTBEAT_MS,
  HUB_SILENT_MS,
  HUBS_BUCKET,
  NODES_BUCKET,
} from "./cluster_presence.ts";
import { type ClusterSettings, readClusterSecrets } from "./cluster_settings.ts";

/** The cluster as the hub's health reports it. */
export interface ClusterHealth {
  status: "up" | "down";
  /** Other live hubs. */
  hubs: number;
  message: string;
}

/** How long presence keys live without a write: the hubs' heartbeats, and a backstop for nodes. */
const HUBS_TTL_MS = 10 * HUB_SILENT_MS;
const NODES_TTL_MS = 24 * 3600_000;
/** Node keys are written again this often, so that the nodes bucket's TTL never takes them. */
const REWRITE_MS = NODES_TTL_MS / 4;
/** Wait between tries to open the buckets. */
const RETRY_MS = 1_000;

/** One hub's place in the cluster. */
export class HubCluster {
  readonly presence: ClusterPresence;
  readonly key: ClusterKey;
  readonly #settings: ClusterSettings;
  #connection: NatsConnection | undefined;
  #up = false;
  #connected = true;
  #closed = false;
  #down = "connecting to NATS";
  #timers: ReturnType<typeof setInterval>[] = [];
  /** The attach under way, so that a reconnect during one does not start a second. */
  #attaching: Promise<void> | undefined;

  private constructor(settings: ClusterSettings, key: ClusterKey, url: string) {
    this.#settings = settings;
    this.key = key;
    this.presence = new ClusterPresence(crypto.randomUUID().replaceAll("-", ""), url, key);
  }

  /**
   * Joins the cluster as the hub reached at `url`. Resolves at once: the connection is made in
   * the background, and retried for as long as the hub runs.
   */
  static async start(settings: ClusterSettings, url: string): Promise<HubCluster> {
    const { key, auth } = await readClusterSecrets(settings);
    globalThis.addEventListener("error", keepOnNatsReset);
    const cluster = new HubCluster(settings, key, url);
    cluster.#connect(auth);
    return cluster;
  }

  /** Whether requests can be routed to other hubs now. */
  get up(): boolean {
    return this.#up;
  }

  /** The cluster's state in words, for the health endpoint. */
  health(): ClusterHealth {
    const hubs = this.#up ? this.presence.peers : 0;
    return this.#up
      ? { status: "up", hubs, message: `cross-hub routing is up: ${hubs} other hub(s) live` }
      : { status: "down", hubs, message: this.downMessage };
  }

  /** Why requests for other hubs' nodes cannot be routed now. */
  get downMessage(): string {
    return `cross-hub routing is down (${this.#down}); this hub serves only the nodes ` +
      `connected to it`;
  }

  /** Leaves the cluster: the other hubs take it for gone after HUB_SILENT_MS of silence. */
  async close(): Promise<void> {
    this.#closed = true;
    globalThis.removeEventListener("error", keepOnNatsReset);
    for (const timer of this.#timers) clearInterval(timer);
    const connection = this.#connection;
    this.presence.detach();
    await connection?.close().catch(() => {});
  }

  #connect(auth: Awaited<ReturnType<typeof readClusterSecrets>>["auth"]): void {
    const servers = this.#settings.servers.join(", ");
    connect({
      servers: this.#settings.servers,
      ...auth,
      name: `edgenode-hub-${this.presence.hubId}`,
      waitOnFirstConnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      pingInterval: 2_000,
      maxPingOut: 2,
    }).then((connection) => {
      if (this.#closed) return void connection.close();
      this.#connection = connection;
      this.#follow(connection, servers);
      this.#attach(connection);
    }).catch((error) => {
      this.#down = `NATS at ${servers}: ${error.message}`;
      console.error(`hub: cannot join the cluster: ${this.#down}`);
    });
    this.#timers.push(
      setInterval(() => {
        if (this.#up) this.presence.beat().catch(() => {});
      }, HEARTBEAT_MS),
      setInterval(() => this.#up && this.#attachAgain(), REWRITE_MS),
    );
  }

  /** Follows the connection's ups and downs. */
  async #follow(connection: NatsConnection, servers: string): Promise<void> {
    for await (const status of connection.status()) {
      if (status.type === "disconnect") {
        const wasUp = this.#up;
        this.#up = this.#connected = false;
        this.#down = `NATS at ${servers} unreachable since ${new Date().toISOString()}`;
        this.presence.detach();
        if (wasUp) console.error(`hub: ${this.downMessage}`);
      } else if (status.type === "reconnect") {
        this.#connected = true;
        this.#attach(connection);
      }
    }
  }

  #attachAgain(): void {
    if (this.#connection) this.#attach(this.#connection);
  }

  /** Opens the buckets and starts presence on them, trying again until it works. */
  #attach(connection: NatsConnection): Promise<void> {
    this.#attaching ??= this.#attachOnce(connection).finally(() => (this.#attaching = undefined));
    return this.#attaching;
  }

  async #attachOnce(connection: NatsConnection): Promise<void> {
    while (!this.#closed && !connection.isClosed()) {
      try {
        const kvm = new Kvm(connection);
        const options = { history: 1, replicas: this.#settings.replicas };
        const hubs = await kvm.create(HUBS_BUCKET, { ...options, ttl: HUBS_TTL_MS });
        const nodes = await kvm.create(NODES_BUCKET, { ...options, ttl: NODES_TTL_MS });
        await this.presence.attach(hubs, nodes);
        if (!this.#connected) continue; // Lost while attaching: the views may be partial.
        if (!this.#up) console.log(`hub: joined the cluster as hub ${this.presence.hubId}`);
        this.#up = true;
        return;
      } catch (error) {
        const reason = (error as Error).message;
        this.#down = /jetstream not enabled|503/i.test(reason)
          ? "the NATS server has no JetStream: start it with -js"
          : `NATS: ${reason}`;
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    }
  }
}

/**
 * The NATS client's socket (node:net, the hub's only one) can report ECONNRESET after the server
 * refused a login, when nothing listens for it any more; uncaught, it would end the hub, which
 * is to keep serving its own nodes whatever NATS does.
 */
function keepOnNatsReset(event: ErrorEvent): void {
  if ((event.error as { code?: string } | undefined)?.code !== "ECONNRESET") return;
  event.preventDefault();
  console.error(`hub: the NATS connection was reset (${event.error.message})`);
}
