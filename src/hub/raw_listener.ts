/**
 * The hub's raw transport (spec/hub.yaml, "The raw transport"): a TCP port beside the HTTP one
 * whose connections carry the node connection without WebSocket framing. Each connection starts
 * with the node's opening line and then meets the same NodeSession as a WebSocket does, so the
 * node proves itself exactly as over the WebSocket.
 *
 * @module
 */
import { RawTunnelSocket, readPreface } from "../tunnel/raw_socket.ts";
import { TUNNEL_PROTOCOL } from "../tunnel/wire_frames.ts";

/** A node must send its opening line this soon after connecting. */
const PREFACE_TIMEOUT_MS = 10_000;

/** What the listener needs from the hub. */
export interface RawHost {
  /** Whether one more connection may be held (the hub's maxConnections). */
  admit(): boolean;
  /** Takes over an opened connection, as the WebSocket route does with an upgraded socket. */
  accept(socket: RawTunnelSocket, remote: string, origin: string, protocol: boolean): void;
}

/**
 * The raw port beside HTTP port `httpPort`: the next one, so that it can be opened in a firewall
 * and named in the hub's permissions; any free port when the HTTP port is (0).
 */
export function rawPortOf(httpPort: number): number {
  return httpPort === 0 ? 0 : httpPort + 1;
}

/** The raw port's listener. */
export interface RawListener {
  port: number;
  close(): void;
}

/**
 * Listens on `hostname:port` for raw node connections; undefined (the hub then offers only the
 * WebSocket) when the port cannot be had.
 */
export function listenRaw(hostname: string, port: number, host: RawHost): RawListener | undefined {
  let listener: Deno.TcpListener;
  try {
    listener = Deno.listen({ hostname, port });
  } catch (error) {
    console.error(
      `hub: no raw tunnel port (${(error as Error).message}); nodes use the WebSocket only`,
    );
    return undefined;
  }
  (async () => {
    while (true) {
      let conn: Deno.TcpConn;
      try {
        conn = await listener.accept();
      } catch (error) {
        if (error instanceof Deno.errors.BadResource) return; // The listener was closed.
        // A connection reset before it was accepted (ENOTCONN, ECONNABORTED, as a balancer's
        // health check does) ends that connection, not the listener. A short pause keeps a
        // lasting error (out of file descriptors) from spinning.
        await new Promise((resolve) => setTimeout(resolve, 10));
        continue;
      }
      opened(conn, host).catch(() => {
        try {
          conn.close();
        } catch {
          // Closed already.
        }
      });
    }
  })();
  return { port: listener.addr.port, close: () => listener.close() };
}

async function opened(conn: Deno.TcpConn, host: RawHost): Promise<void> {
  const close = () => {
    try {
      conn.close();
    } catch {
      // Closed already.
    }
  };
  if (!host.admit()) return close();
  conn.setNoDelay(true);
  const preface = await readPreface(conn, PREFACE_TIMEOUT_MS);
  if (!preface) return close();
  const remote = (conn.remoteAddr as Deno.NetAddr).hostname;
  const socket = new RawTunnelSocket(
    preface.protocol,
    Promise.resolve({ conn, rest: preface.rest }),
  );
  // A node of another protocol is told why it cannot join, as over the WebSocket.
  host.accept(socket, remote, preface.origin, preface.protocol === TUNNEL_PROTOCOL);
}
