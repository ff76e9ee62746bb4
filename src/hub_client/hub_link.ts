/**
 * The node's connection to its hub (spec/hub.yaml): opened while the node holds a valid account
 * token, proved with the node key, kept alive, re-opened with back-off, and used for account and
 * proximity listings and for tunnelled requests.
 *
 * @module
 */
import { backoffDelay, type BackoffOptions } from "../async/backoff.ts";
import type { GpsPoint, WelcomeMessage } from "../../gen/hub/validators.ts";
import type { NodeDescription } from "../../gen/mds/validators.ts";
import { Unavailable } from "../errors/mod.ts";
import type { Identity } from "../identity/identity.ts";
import { FROM_HUB, type MessageOf, parseMessage } from "../tunnel/messages.ts";
import { PORT_HEADER, ROUTING_HEADER, routingHeader } from "../tunnel/routing.ts";
import { onSocket, type TunnelSocket } from "../tunnel/raw_socket.ts";
import type { StreamMux } from "../tunnel/stream_mux.ts";
import { TUNNEL_PROTOCOL } from "../tunnel/wire_frames.ts";
import { RAW_WELCOME_MS, TransportChoice } from "./hub_transport.ts";
import { DescriptionUpdates } from "./description_updates.ts";
import { nodeTunnel, type TunnelOrigin } from "./tunnel_requests.ts";
import type { RequestParts } from "../http/pipeline.ts";
import { type BepInfo, pingThroughHub, type SepInfo } from "./sep_info.ts";

export type { BepInfo, SepInfo };

/** Reconnections wait 0.5 s, doubling up to 30 s, ±20% so that nodes do not come back in step. */
const RECONNECT_BACKOFF: BackoffOptions = { minTimeout: 500, maxTimeout: 30_000, jitter: 0.2 };
/** How long a listing, or the sep's self-check, may take. */
const LIST_TIMEOUT_MS = 5000;
/** What the link needs from the node around it. */
export interface LinkHost {
  identity: Identity;
  /** The node's description as it is now. */
  describe(): NodeDescription;
  /** The node's HTTP handler, for tunnelled requests. */
  serve(request: Request, origin: TunnelOrigin): Promise<Response>;
  /** The same handler for a request given by its parts (tunnel_requests.ts); optional. */
  serveParts?(parts: RequestParts, origin: TunnelOrigin): Response | Promise<Response>;
  /** The node's HTTP port. */
  port(): number;
}

type FromHub = MessageOf<typeof FROM_HUB>;

/** The connection to one hub. */
export class HubLink {
  /** The hub's base URL from the configuration. */
  readonly url: string;
  readonly #host: LinkHost;
  #socket: TunnelSocket | undefined;
  readonly #transport: TransportChoice;
  #mux: StreamMux | undefined;
  #welcome: WelcomeMessage | undefined;
  #reason = "not connected yet";
  /** Failed connections since the last welcome. */
  #retries = 0;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #ticker: ReturnType<typeof setInterval> | undefined;
  #lastHeard = 0;
  readonly #updates = new DescriptionUpdates();
  #nextList = 1;
  readonly #lists = new Map<number, PromiseWithResolvers<NodeDescription[]>>();
  #stopped = false;

  constructor(url: string, host: LinkHost) {
    this.url = url;
    this.#host = host;
    this.#transport = new TransportChoice(url);
  }

  /** Starts connecting (when a token is stored) and follows token and description changes. */
  start(): void {
    this.#host.identity.onChange((change) => {
      if (change === "gps") this.#sendUpdate();
      else {this.#reconnect(
          change === "token" ? "the account token changed" : "the account changed",
        );}
    });
    this.#ticker = setInterval(() => this.#tick(), 1000);
    this.#connect();
  }

  /** Closes the connection for good. */
  stop(): void {
    this.#stopped = true;
    clearInterval(this.#ticker);
    clearTimeout(this.#retryTimer);
    this.#socket?.close(1000, "the node is stopping");
  }

  /** The hub's welcome while connected. */
  get welcome(): WelcomeMessage | undefined {
    return this.#welcome;
  }

  /** "success" while connected, otherwise "failed: <why>" (the reference's status values). */
  get status(): string {
    return this.#welcome ? "success" : `failed: ${this.#reason}`;
  }

  /** The backend endpoint: the hub this node is reachable through, and whether it is. */
  bep(): BepInfo {
    return { url: this.#welcome?.url ?? this.url, status: this.status };
  }

  /**
   * The service endpoint: what a remote client sends to reach this node through the hub. While
   * connected, the status comes from pinging this node through the hub, as the reference does.
   */
  async sep(): Promise<SepInfo> {
    const node = this.#host.describe();
    const url = this.#welcome?.url ?? this.url;
    const headers = {
      [PORT_HEADER]: String(this.#host.port()),
      [ROUTING_HEADER]: routingHeader(node.id, node.localLinkNetworkId),
    };
    const token = this.#host.identity.storedToken;
    const status = this.#welcome && token
      ? await pingThroughHub(url, headers, token, node.id)
      : this.status;
    return { nodeId: node.id, url, headers, status };
  }

  /** The account or proximity listing, from the hub; 503 when it cannot be had. */
  async list(cluster: "account" | "proximity"): Promise<NodeDescription[]> {
    if (!this.#welcome) {
      throw new Unavailable(`the hub at ${this.url} is not connected: ${this.#reason}`);
    }
    const id = this.#nextList++;
    const answer = Promise.withResolvers<NodeDescription[]>();
    this.#lists.set(id, answer);
    this.#send({ t: "list", id, cluster });
    const timer = setTimeout(
      () => answer.reject(new Unavailable(`the hub at ${this.url} did not answer in 5 s`)),
      LIST_TIMEOUT_MS,
    );
    try {
      return await answer.promise;
    } finally {
      clearTimeout(timer);
      this.#lists.delete(id);
    }
  }

  #send(message: object): void {
    if (this.#socket?.readyState === WebSocket.OPEN) this.#socket.send(JSON.stringify(message));
  }

  #gps(): GpsPoint | undefined {
    const fix = this.#host.identity.gps;
    return fix ? { latitude: fix.latitude, longitude: fix.longitude, at: fix.at } : undefined;
  }

  #connect(): void {
    clearTimeout(this.#retryTimer);
    if (this.#stopped || this.#socket) return;
    const token = this.#host.identity.storedToken;
    if (!token) {
      this.#reason = "no valid account token is stored (PUT /token)";
      return;
    }
    const raw = this.#transport.raw;
    let socket: TunnelSocket;
    try {
      socket = this.#transport.open();
    } catch (error) {
      this.#reason = (error as Error).message;
      return this.#retryLater();
    }
    this.#socket = socket;
    const rawTimer = raw
      ? setTimeout(() => this.#welcome || socket.close(4408, "no welcome"), RAW_WELCOME_MS)
      : undefined;
    const tunnel = nodeTunnel(socket, this.#host);
    const mux = tunnel.mux;
    this.#mux = mux;
    this.#reason = "connecting";
    let mismatch: string | undefined;
    const open = () => {
      // A hub that did not take the subprotocol is older: its tunnel would not be understood.
      if (socket.protocol === TUNNEL_PROTOCOL) return;
      mismatch = `the hub at ${this.url} speaks an older tunnel protocol than ` +
        `${TUNNEL_PROTOCOL}: update edgenode on the hub`;
      console.error(`hub link: ${mismatch}`);
      socket.close(4426, "this node speaks tunnel protocol " + TUNNEL_PROTOCOL);
    };
    const message = (data: unknown) => {
      this.#lastHeard = Date.now();
      if (typeof data !== "string") {
        if (!this.#welcome) return;
        try {
          return tunnel.receive(data as ArrayBuffer | Uint8Array);
        } catch (error) {
          return socket.close(4400, (error as Error).message.slice(0, 120));
        }
      }
      if (mismatch) return;
      let message: FromHub;
      try {
        message = parseMessage(data, FROM_HUB);
      } catch (error) {
        return socket.close(4400, (error as Error).message.slice(0, 120));
      }
      this.#handle(message, token).catch((error) => {
        console.error("hub link:", error);
        socket.close(1011, "internal error");
      });
    };
    const close = (_code: number, reason: string) => {
      clearTimeout(rawTimer);
      if (this.#socket !== socket) return;
      this.#socket = undefined;
      mux.abortAll("the connection to the hub closed");
      if (raw && !this.#welcome && !mismatch) {
        // No raw connection to be had (a proxy, a firewall): back to the WebSocket at once.
        this.#transport.failed();
        return this.#connect();
      }
      if (mismatch) this.#reason = mismatch;
      else if (reason) this.#reason = `the hub closed the connection: ${reason}`;
      else if (this.#welcome) this.#reason = "the connection to the hub closed";
      this.#welcome = undefined;
      for (const list of this.#lists.values()) {
        list.reject(new Unavailable(`the hub at ${this.url} went away`));
      }
      this.#retryLater();
    };
    onSocket(socket, {
      open,
      message,
      close,
      error: (message) => this.#reason = `cannot reach ${this.url}: ${message}`,
    });
  }

  async #handle(message: FromHub, token: string): Promise<void> {
    switch (message.t) {
      case "challenge": {
        const node = this.#host.describe();
        const proof = await this.#host.identity.proof(message.challenge, node);
        this.#updates.sent(node, this.#gps());
        return this.#send({ t: "hello", token, proof, gps: this.#gps() });
      }
      case "welcome":
        // Offered a raw port over the WebSocket: this connection makes way for a raw one.
        if (message.tunnelPort !== undefined && this.#transport.offered(message.tunnelPort)) {
          return this.#reconnect("moving to the raw transport");
        }
        this.#welcome = message;
        this.#retries = 0;
        // A fix or description that changed since the hello.
        return this.#sendUpdate();
      case "refused":
        this.#reason = `the hub refused the node: ${message.message}`;
        return;
      case "listed": {
        const list = this.#lists.get(message.id);
        if (message.error) list?.reject(new Unavailable(message.error));
        else list?.resolve((message.nodes ?? []) as NodeDescription[]);
        return;
      }
      case "ping":
        return this.#send({ t: "pong" });
      case "pong":
        return;
    }
  }

  #retryLater(): void {
    if (this.#stopped) return;
    const delay = backoffDelay(++this.#retries, RECONNECT_BACKOFF);
    this.#retryTimer = setTimeout(() => this.#connect(), delay);
  }

  /** Drops the connection (if any) and connects again at once with the current token. */
  #reconnect(why: string): void {
    this.#retries = 0;
    const socket = this.#socket;
    if (socket) {
      this.#socket = undefined;
      this.#welcome = undefined;
      this.#mux?.abortAll(why);
      socket.close(1000, why);
    }
    this.#connect();
  }

  /** Sends the description and fix when they changed (see DescriptionUpdates). */
  #sendUpdate(): void {
    if (!this.#welcome) return;
    const node = this.#host.describe();
    const gps = this.#gps();
    if (!this.#updates.due(node, gps)) return;
    this.#updates.sent(node, gps);
    this.#send({ t: "update", node, gps });
  }

  /** Every second: token expiry, a silent hub, and description changes. */
  #tick(): void {
    const socket = this.#socket;
    if (!socket) return;
    if (!this.#host.identity.storedToken) {
      this.#reconnect("the account token expired");
      return;
    }
    const silentFor = Date.now() - this.#lastHeard;
    if (this.#welcome && silentFor > 3 * this.#welcome.pingSeconds * 1000) {
      this.#reconnect("the hub stopped answering");
      return;
    }
    this.#sendUpdate();
  }
}
