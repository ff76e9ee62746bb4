/**
 * Sends a request of the OpenAI-compatible API to the nodes mesh_routing.ts chose, in turn, and
 * passes the first answer through unchanged (streamed: Server-Sent Events as they come).
 *
 * - Each request is signed with this node's key (`x-edge-node-request`, identity's
 *   node_request.ts), for the node it goes to and the path that node will see; the client's
 *   `Authorization` (this node's API key) never leaves this node.
 * - A LAN node is reached at the local address its verified description gives; a node of the
 *   account elsewhere at the hub's address for it (its `proxy` address, the hub this node is
 *   linked to and no other), with the tunnel's headers and this node's own stored account token
 *   as `x-edge-authorization` (which the hub reads and drops before the node).
 * - A node that fails before its answer starts (no connection, or none within CONNECT_MS on the
 *   LAN, any status but 2xx: the body
 *   validated here, so a refusal is that node's state: busy, gone, not ready) is left for the
 *   next; once an answer's head is taken, nothing else is tried.
 * - A client that goes away before the answer aborts the pending request; after, cancelling the
 *   answer's body cancels the peer's (the connection closes, and the peer stops generating).
 *
 * @module
 */
import type { NodeDescription } from "../../gen/mds/validators.ts";
import { NODE_REQUEST_HEADER, type NodeRequestClaims } from "../identity/mod.ts";
import {
  PORT_HEADER,
  ROUTING_HEADER,
  routingHeader,
  TUNNEL_AUTHORIZATION_HEADER,
} from "../tunnel/mod.ts";
import type { MeshCandidate } from "./mesh_routing.ts";

/** The response header naming the node that served a chat or an embedding. */
export const SERVED_BY_HEADER = "x-edge-served-by";

/** The headers naming node `nodeId` as the one that served, readable by a browser's script. */
export function servedByHeaders(nodeId: string): Record<string, string> {
  return { [SERVED_BY_HEADER]: nodeId, "Access-Control-Expose-Headers": SERVED_BY_HEADER };
}

/** What forwarding needs of this node. */
export interface MeshSender {
  /** Signs a request on this node's behalf (Identity.signRequest). */
  signRequest(claims: Omit<NodeRequestClaims, "from">): Promise<string>;
  /** This node's stored account token (for the hub); undefined without one. */
  storedToken(): string | undefined;
  /** The hub this node is linked to (its base URL); undefined without a hub. */
  hubUrl(): string | undefined;
}

/** One request to forward. */
export interface Forwarded {
  method: string;
  /** The path and query, as this node received them (the peer serves the same prefixes). */
  path: string;
  /** The JSON body. */
  body: string;
  /** The client's signal: aborted when it goes away. */
  signal: AbortSignal;
}

/** Response headers that describe the peer's connection, not the answer. */
const DROPPED = ["connection", "keep-alive", "transfer-encoding", "content-length"];

/** Where `candidate` is reached for `path`, with which headers; undefined when it cannot be. */
async function routeTo(
  sender: MeshSender,
  { node, via }: MeshCandidate,
  request: Forwarded,
): Promise<{ url: URL; headers: Headers } | undefined> {
  const local = addressOf(node, "local");
  if (!local) return undefined;
  const headers = new Headers({
    "content-type": "application/json",
    "accept-encoding": "identity",
  });
  let url: URL;
  if (via === "lan") {
    url = new URL(request.path, local.origin);
  } else {
    const proxy = addressOf(node, "proxy");
    const hub = sender.hubUrl();
    const token = sender.storedToken();
    // The token goes to the hub this node is linked to, whatever a listing says.
    if (!proxy || !hub || !token || proxy.origin !== new URL(hub).origin) return undefined;
    url = new URL(`${proxy.href.replace(/\/+$/, "")}${request.path}`);
    headers.set(TUNNEL_AUTHORIZATION_HEADER, `Bearer ${token}`);
    headers.set(PORT_HEADER, local.port || (local.protocol === "https:" ? "443" : "80"));
    headers.set(ROUTING_HEADER, routingHeader(node.id, node.localLinkNetworkId));
  }
  headers.set(
    NODE_REQUEST_HEADER,
    await sender.signRequest({ to: node.id, method: request.method, path: request.path }),
  );
  return { url, headers };
}

function addressOf(node: NodeDescription, type: "local" | "proxy"): URL | undefined {
  const address = node.addresses.find((a) => a.type === type);
  if (!address) return undefined;
  try {
    return new URL(address.url.href);
  } catch {
    return undefined;
  }
}

/** How long a LAN node may take to accept a connection before the next node is tried. */
export const CONNECT_MS = 3000;
/** How long an origin that accepted a connection is taken to be up (no new check). */
const UP_MS = 10_000;
/** Origins that accepted a connection lately, until when. */
const upOrigins = new Map<string, number>();

/**
 * Whether `url`'s host accepts a TCP connection within `ms`: a LAN node that vanished without a
 * word (powered off, off the network) stays listed for a few announce intervals, and a fetch to
 * it would wait for the system's connect timeout (minutes) before the next node is tried. The
 * fetch cannot bound its connect alone: its head comes only once the peer's generation starts.
 */
async function accepts(url: URL, ms: number): Promise<boolean> {
  if ((upOrigins.get(url.origin) ?? 0) > Date.now()) return true;
  const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  const hostname = url.hostname.replace(/^\[|\]$/g, "");
  let timer: ReturnType<typeof setTimeout> | undefined;
  const connecting = Deno.connect({ hostname, port });
  const late = new Promise<undefined>((resolve) =>
    timer = setTimeout(() => resolve(undefined), ms)
  );
  try {
    const connection = await Promise.race([connecting, late]);
    if (!connection) {
      connecting.then((c) => c.close(), () => {});
      return false;
    }
    connection.close();
    if (upOrigins.size >= 256) upOrigins.delete(upOrigins.keys().next().value!);
    upOrigins.set(url.origin, Date.now() + UP_MS);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/** Logs (for the node's operator: a peer that keeps failing shows) and returns a failure. */
function failed({ node, via }: MeshCandidate, why: string): string {
  const line = `node ${node.id} (${via}) did not answer (${why})`;
  console.warn(`inference: a routed request: ${line}; trying the next node`);
  return line;
}

/** What forwarding ended with: the answer, or why each node failed. */
export type ForwardResult =
  | { served: true; response: Response; nodeId: string }
  | { served: false; failures: string[] };

/**
 * Tries `candidates` in order; the first that answers with a 2xx is passed through, its
 * `x-edge-served-by` set to that node. `served: false` when none did (or the client left).
 */
export async function forwardToMesh(
  sender: MeshSender,
  candidates: readonly MeshCandidate[],
  request: Forwarded,
  connectMs = CONNECT_MS,
): Promise<ForwardResult> {
  const failures: string[] = [];
  for (const candidate of candidates) {
    if (request.signal.aborted) break;
    const route = await routeTo(sender, candidate, request);
    if (!route) continue;
    // Through the hub, the hub's own connection is the one in question: it answers for the node.
    if (candidate.via === "lan" && !await accepts(route.url, connectMs)) {
      failures.push(failed(candidate, `no connection within ${connectMs} ms`));
      continue;
    }
    // Not the client's signal itself: Deno aborts it once this node's answer is delivered too,
    // which must not stop the stream being passed through.
    const upstream = new AbortController();
    const leave = () => upstream.abort(request.signal.reason);
    request.signal.addEventListener("abort", leave, { once: true });
    let response: Response;
    try {
      response = await fetch(route.url, {
        method: request.method,
        headers: route.headers,
        body: request.body,
        redirect: "manual",
        signal: upstream.signal,
      });
    } catch (error) {
      if (request.signal.aborted) break;
      failures.push(failed(candidate, (error as Error).message));
      continue;
    } finally {
      request.signal.removeEventListener("abort", leave);
    }
    if (response.status < 200 || response.status > 299) {
      failures.push(failed(candidate, `status ${response.status}`));
      await response.body?.cancel().catch(() => {});
      continue;
    }
    const headers = new Headers(response.headers);
    for (const name of DROPPED) headers.delete(name);
    for (const [name, value] of Object.entries(servedByHeaders(candidate.node.id))) {
      headers.set(name, value);
    }
    return {
      served: true,
      nodeId: candidate.node.id,
      response: new Response(response.body, { status: response.status, headers }),
    };
  }
  return { served: false, failures };
}
