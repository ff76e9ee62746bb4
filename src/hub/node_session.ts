/**
 * One node's connection to the hub (spec/hub.yaml, "The node connection"): the handshake, the
 * node's updates and listing requests, keepalive, and the tunnelled requests sent to it.
 *
 * @module
 */
import * as v from "valibot";
import type { HelloMessage, UpdateMessage } from "../../gen/hub/validators.ts";
import { type NodeDescription, NodeDescriptionSchema } from "../../gen/mds/validators.ts";
import { newChallenge, ProofError, verifyProof } from "../identity/node_proof.ts";
import { Unavailable, UpstreamFailed } from "../errors/mod.ts";
import { SCOPES } from "../identity/identity.ts";
import { TokenError, type TokenVerifier } from "../identity/token_verifier.ts";
import { FROM_NODE, type MessageOf, parseMessage } from "../tunnel/messages.ts";
import { MuxRequests } from "../tunnel/mux_requests.ts";
import { markCorsListed } from "../http/cors.ts";
import { onSocket, RawTunnelSocket, type TunnelSocket } from "../tunnel/raw_socket.ts";
import { StreamMux } from "../tunnel/stream_mux.ts";
import {
  FrameBatcher,
  type FrameSink,
  receiveFrames,
  TUNNEL_PROTOCOL,
  TUNNEL_SESSION,
  type WireResponse,
} from "../tunnel/wire_frames.ts";
import type { HubStore } from "./hub_store.ts";
import type { ConnectedNode } from "./listings.ts";

/** Streams one node may have open at once. */
export const MAX_STREAMS = 256;
/** A node must say hello this soon after connecting. */
const HELLO_TIMEOUT_MS = 10_000;
/** setTimeout's largest delay. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** What a session needs from the hub around it. */
export interface SessionHost {
  verifier: TokenVerifier;
  store: HubStore;
  pingSeconds: number;
  /** The raw transport's port, offered in the welcome (none: the WebSocket only). */
  rawPort: number | undefined;
  /** The hub's public URL for a node that connected to `origin`. */
  publicUrl(origin: string): string;
  /** Called once the node is authenticated; a previous session of the node is closed. */
  register(session: NodeSession): void;
  /** Called when an authenticated node's description or fix changed. */
  changed(session: NodeSession): void;
  /** Called when the socket closes. */
  unregister(session: NodeSession): void;
  /** The account or proximity listing for this node. */
  list(session: NodeSession, cluster: "account" | "proximity"): NodeDescription[];
}

type FromNode = MessageOf<typeof FROM_NODE>;

/** A node connected (or connecting) over a WebSocket or the raw transport. */
export class NodeSession {
  readonly #socket: TunnelSocket;
  readonly #host: SessionHost;
  readonly #challenge = newChallenge();
  readonly #origin: string;
  readonly #mux: StreamMux;
  readonly #requests: MuxRequests;
  readonly #frames: FrameSink;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** Set once the node has proved itself. */
  entry: ConnectedNode | undefined;
  /** When the hub last heard from the node, ms since the epoch. */
  lastHeard = Date.now();

  /**
   * Takes over a freshly upgraded socket (or raw connection); `origin` is the hub origin the
   * node connected to, and `protocol` whether the node offered TUNNEL_PROTOCOL (an older node
   * did not: it is refused).
   */
  constructor(
    socket: TunnelSocket,
    publicAddress: string,
    origin: string,
    host: SessionHost,
    protocol = true,
  ) {
    this.#socket = socket;
    this.#host = host;
    this.#origin = origin;
    this.#mux = new StreamMux(new FrameBatcher(socket).send, TUNNEL_SESSION);
    this.#requests = new MuxRequests(
      this.#mux,
      // The hub's pipeline then need not read the answer's headers for it.
      (response, head) => markCorsListed(response, head.headers),
    );
    this.#frames = {
      head: (head) => this.#requests.onResponse(head as WireResponse),
      data: (stream, bytes) => this.#mux.onBody(stream, bytes),
      control: (message) =>
        message.t === "abort"
          ? this.#requests.onAbort(message, "the node")
          : this.#mux.onControl(message),
    };
    this.entry = undefined;
    const open = () => {
      if (!protocol) {
        // Said in the older node's own terms (a refused message), so its status shows why.
        console.error(`hub: refused a node at ${publicAddress} of an older tunnel protocol`);
        return this.#refuse(
          426,
          `this hub speaks tunnel protocol ${TUNNEL_PROTOCOL} and the node an older one: ` +
            "update edgenode on the node",
        );
      }
      this.#send(JSON.stringify({ t: "challenge", challenge: this.#challenge }));
      this.#timer = setTimeout(() => this.close(4400, "no hello within 10 s"), HELLO_TIMEOUT_MS);
    };
    onSocket(socket, {
      open,
      message: (data) => this.#receive(data, publicAddress),
      close: () => this.#closed(),
      error: () => {},
    });
  }

  /** Whether the node connected over the raw transport. */
  get raw(): boolean {
    return this.#socket instanceof RawTunnelSocket;
  }

  /** The hub origin the node connected to. */
  get origin(): string {
    return this.#origin;
  }

  /** The node's id once authenticated. */
  get nodeId(): string | undefined {
    return this.entry?.node.id;
  }

  /** Streams in flight. */
  get openStreams(): number {
    return this.#requests.waiting + this.#mux.openBodies;
  }

  /** Closes the socket with a WebSocket close code and reason. */
  close(code: number, reason: string): void {
    try {
      this.#socket.close(code, reason.slice(0, 120));
    } catch {
      // Already closing.
    }
  }

  /** Sends a keepalive ping, or drops the node when it has been silent for two intervals. */
  keepAlive(now: number): void {
    if (now - this.lastHeard > 2 * this.#host.pingSeconds * 1000) {
      this.close(4408, "no answer to pings");
    } else if (this.entry) this.#send(JSON.stringify({ t: "ping" }));
  }

  #send(frame: string | Uint8Array): void {
    if (this.#socket.readyState === WebSocket.OPEN) this.#socket.send(frame);
  }

  #refuse(status: number, message: string): void {
    this.#send(JSON.stringify({ t: "refused", status, message }));
    this.close(status === 401 ? 4401 : status === 426 ? 4426 : 4400, message);
  }

  #receive(data: unknown, publicAddress: string): void {
    this.lastHeard = Date.now();
    if (typeof data !== "string") {
      if (!this.entry) return;
      try {
        const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : data as Uint8Array;
        receiveFrames(bytes, "res", this.#frames);
      } catch (error) {
        this.#refuse(400, (error as Error).message);
      }
      return;
    }
    let message: FromNode;
    try {
      message = parseMessage(String(data), FROM_NODE);
    } catch (error) {
      return this.#refuse(400, (error as Error).message);
    }
    if (!this.entry) {
      if (message.t !== "hello") return this.#refuse(400, "say hello first");
      this.#hello(message, publicAddress).catch((error) => {
        console.error("hub: hello failed:", error);
        this.close(1011, "internal error");
      });
      return;
    }
    switch (message.t) {
      case "hello":
        return this.#refuse(400, "hello was already said");
      case "update":
        return this.#update(message);
      case "list":
        this.#send(JSON.stringify({
          t: "listed",
          id: message.id,
          nodes: this.#host.list(this, message.cluster),
        }));
        return;
      case "ping":
        return this.#send(JSON.stringify({ t: "pong" }));
      case "pong":
        return;
    }
  }

  async #hello(message: HelloMessage, publicAddress: string): Promise<void> {
    let node: NodeDescription;
    try {
      node = await verifyProof(message.proof, this.#challenge);
    } catch (error) {
      if (error instanceof ProofError) return this.#refuse(400, error.message);
      throw error;
    }
    try {
      const token = await this.#host.verifier.verify(message.token, SCOPES.clusters, node.id);
      if (token.accountId !== node.accountId) {
        return this.#refuse(
          401,
          `the token is for account '${token.accountId}', the node belongs to '${node.accountId}'`,
        );
      }
      clearTimeout(this.#timer);
      const delay = Math.min(token.expiresAt * 1000 - Date.now(), MAX_TIMER_MS);
      this.#timer = setTimeout(() => this.close(4401, "the token has expired"), delay);
    } catch (error) {
      if (error instanceof TokenError) return this.#refuse(401, error.message);
      throw error;
    }
    if (this.#socket.readyState !== WebSocket.OPEN) return;
    const fix = this.#host.store.nodeSeen(node.id, node.accountId, publicAddress, message.gps);
    this.entry = { node, fix, publicAddress };
    this.#host.register(this);
    this.#send(JSON.stringify({
      t: "welcome",
      url: this.#host.publicUrl(this.#origin),
      publicAddress,
      pingSeconds: this.#host.pingSeconds,
      // Offered over the WebSocket only: a node on the raw transport has it already.
      ...(this.#host.rawPort && !this.raw ? { tunnelPort: this.#host.rawPort } : {}),
    }));
  }

  #update(message: UpdateMessage): void {
    const entry = this.entry!;
    const parsed = v.safeParse(NodeDescriptionSchema, message.node);
    if (!parsed.success) return this.#refuse(400, `malformed node: ${parsed.issues[0].message}`);
    const node = parsed.output;
    if (node.id !== entry.node.id || node.accountId !== entry.node.accountId) {
      return this.#refuse(400, "an update cannot change the node's id or account; reconnect");
    }
    entry.node = node;
    if (message.gps) {
      entry.fix = message.gps;
      this.#host.store.fixChanged(node.id, message.gps);
    }
    this.#host.changed(this);
  }

  /**
   * Sends a request through the tunnel to port `port` of the node and returns its response,
   * whose body streams in as the node sends it.
   */
  forward(request: Request, port: number, headers: [string, string][]): Promise<Response> {
    if (this.openStreams >= MAX_STREAMS) {
      throw new Unavailable(`the node has ${MAX_STREAMS} requests open; retry later`, {
        retryAfterSeconds: 1,
      });
    }
    // The path and query as they came: cheaper than parsing the whole URL again.
    const url = request.url;
    const path = url.slice(url.indexOf("/", url.indexOf("//") + 2));
    return this.#requests.send(
      { method: request.method, path, port, headers },
      request.body,
    ).response;
  }

  #closed(): void {
    clearTimeout(this.#timer);
    this.#requests.failAll(
      new UpstreamFailed("the node's connection to the hub closed during the request"),
    );
    this.#mux.abortAll("the node's connection to the hub closed");
    this.#host.unregister(this);
  }
}
