/**
 * Which transport the node connection takes (spec/hub.yaml, "The raw transport"). The node
 * connects over the WebSocket first; a hub with a raw port offers it in its welcome, and the
 * node moves there when its hub URL is plain http (the raw connection has no TLS of its own, so
 * it never carries what a wss connection would have protected). A raw connection that cannot be
 * opened, or is not welcomed within RAW_WELCOME_MS, sends the node back to the WebSocket (a hub
 * behind an HTTP reverse proxy, a firewall), and that port is not tried again for RAW_PAUSE_MS.
 *
 * @module
 */
import { RawTunnelSocket, type TunnelSocket } from "../tunnel/raw_socket.ts";
import { TUNNEL_PROTOCOL } from "../tunnel/wire_frames.ts";

/** How long a raw port that failed is left alone. */
const RAW_PAUSE_MS = 10 * 60_000;
/** A raw connection not welcomed this soon is given up (a firewall may drop it silently). */
export const RAW_WELCOME_MS = 5000;

/** The transport choice of one hub link. */
export class TransportChoice {
  readonly #url: URL;
  #port: number | undefined;
  #failedPort: number | undefined;
  #failedAt = 0;

  /** `url`: the hub's URL from the node's configuration. */
  constructor(url: string) {
    this.#url = new URL(url);
  }

  /** Whether the next connection should be raw. */
  get raw(): boolean {
    return this.#port !== undefined &&
      (this.#port !== this.#failedPort || Date.now() - this.#failedAt > RAW_PAUSE_MS);
  }

  /** A welcome over the WebSocket offered raw `port`: whether to move there now. */
  offered(port: number): boolean {
    if (this.#url.protocol !== "http:") return false;
    this.#port = port;
    return this.raw;
  }

  /** The raw connection failed before its welcome. */
  failed(): void {
    this.#failedPort = this.#port;
    this.#failedAt = Date.now();
  }

  /** Opens the next connection: raw when `raw` says so, otherwise the WebSocket. */
  open(): TunnelSocket {
    if (this.raw) {
      // URL keeps an IPv6 address in brackets; a socket address has none.
      const hostname = this.#url.hostname.replace(/^\[(.*)\]$/, "$1");
      return RawTunnelSocket.connect(hostname, this.#port!, TUNNEL_PROTOCOL, this.#url.origin);
    }
    const wsUrl = new URL("/hub/v1/connect", this.#url.href.replace(/^http/, "ws"));
    return new WebSocket(wsUrl, [TUNNEL_PROTOCOL]);
  }
}
