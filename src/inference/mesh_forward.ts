/**
 * Sends a request of the OpenAI-compatible API to the nodes mesh_ranking.ts chose, in turn, and
 * passes the first answer through unchanged (streamed: Server-Sent Events as they come).
 *
 * - Each request is signed with this node's key (`x-edge-node-request`, identity's
 *   node_request.ts), for the node it goes to and the path that node will see; the client's
 *   `Authorization` (this node's API key) never leaves this node.
 * - A LAN node is reached at the local address its verified description gives, once it proved
 *   itself there (discovery's proof, believed 30 s: the address is the node's own claim, and a
 *   node could otherwise aim this node's requests at any service of the LAN); a node of the
 *   account elsewhere at the hub's address for it (its `proxy` address, the hub this node is
 *   linked to and no other), with the tunnel's headers and this node's own stored account token
 *   as `x-edge-authorization` (which the hub reads and drops before the node): tunnel/routing.ts.
 * - A node that fails before its answer starts (no connection, no proof, an answer that has not
 *   started within HEAD_WAIT_MS from a node that then shows no sign of life, any status but
 *   2xx: the body validated here, so a refusal is that node's state: busy, gone, not ready) is
 *   left for the next; once an answer's head is taken, nothing else is tried. A 400, 413 or 422
 *   is the request's fault: no other node is tried, and the client gets it.
 * - A client that goes away before the answer aborts the pending request; after, cancelling the
 *   answer's body cancels the peer's (the connection closes, and the peer stops generating).
 *
 * @module
 */
import { NODE_REQUEST_HEADER, type NodeRequestClaims } from "../identity/mod.ts";
import { pathAt, tunnelRoute } from "../tunnel/mod.ts";
import type { MeshCandidate } from "./mesh_ranking.ts";

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
  /**
   * Makes sure the node at `origin` is `nodeId` (discovery's proof: a LAN node's address is its
   * own claim); the proof is believed a while unless `fresh`. Rejects otherwise.
   */
  prove(origin: string, nodeId: string, signal: AbortSignal, fresh?: boolean): Promise<void>;
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
  const headers = new Headers({
    "content-type": "application/json",
    "accept-encoding": "identity",
  });
  let url: URL;
  try {
    if (via === "lan") {
      const local = node.addresses.find((a) => a.type === "local");
      if (!local) return undefined;
      url = pathAt(new URL(local.url.href), request.path, node.id);
    } else {
      const hub = sender.hubUrl();
      const token = sender.storedToken();
      if (!hub || !token) return undefined;
      url = tunnelRoute(node, hub, request.path, token, headers);
    }
  } catch {
    // No such address, a malformed one, or a proxy at a hub this node is not linked to.
    return undefined;
  }
  headers.set(
    NODE_REQUEST_HEADER,
    await sender.signRequest({ to: node.id, method: request.method, path: request.path }),
  );
  return { url, headers };
}

/**
 * How long a node's answer may take to start before this node asks whether it is still there,
 * and again each time as long after: a node that stopped (suspended, hung) still accepts
 * connections (the hub's tunnel to it stays open too), and its answer would be waited for
 * forever. A node that answers keeps the request however long its answer takes to start (a
 * whole answer that is not streamed starts only once generated; a queued one once its turn
 * comes).
 */
export const HEAD_WAIT_MS = 5000;

/** How long a node has to show it is there (its proof, or any answer through the hub). */
const ALIVE_MS = 3000;

/** The node's unauthenticated ping: what any node answers at once. */
const PING_PATH = "/mds/v1/nodes?ping=true";

/**
 * Whether `candidate` is still there: a LAN node proves itself again at `origin` (fresh); a
 * node through the hub answers its ping through the tunnel (anything but the hub's 5xx).
 */
async function stillThere(
  sender: MeshSender,
  { node, via }: MeshCandidate,
  origin: string,
  signal: AbortSignal,
): Promise<void> {
  if (via === "lan") return await sender.prove(origin, node.id, signal, true);
  const hub = sender.hubUrl();
  const token = sender.storedToken();
  if (!hub || !token) throw new Error("no hub to ask through");
  const headers = new Headers({ "accept-encoding": "identity" });
  const url = tunnelRoute(node, hub, PING_PATH, token, headers);
  const response = await fetch(url, {
    headers,
    redirect: "manual",
    signal: AbortSignal.any([signal, AbortSignal.timeout(ALIVE_MS)]),
  });
  await response.body?.cancel().catch(() => {});
  if (response.status >= 500) throw new Error(`the hub answered ${response.status}`);
}

/**
 * Rejects once `candidate`, asked every `waitMs`, is no longer there (stillThere); never
 * resolves. Stops (quietly) when `done` aborts.
 */
async function whileThere(
  sender: MeshSender,
  candidate: MeshCandidate,
  origin: string,
  waitMs: number,
  done: AbortSignal,
): Promise<never> {
  while (true) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, waitMs);
      done.addEventListener("abort", () => clearTimeout(timer), { once: true });
    });
    if (done.aborted) return await new Promise<never>(() => {});
    try {
      await stillThere(sender, candidate, origin, done);
    } catch (error) {
      if (done.aborted) return await new Promise<never>(() => {});
      throw new Error(
        `no answer within ${waitMs} ms, and no sign of life (${(error as Error).message})`,
      );
    }
  }
}

/** Logs (for the node's operator: a peer that keeps failing shows) and returns a failure. */
function failed({ node, via }: MeshCandidate, why: string): string {
  const line = `node ${node.id} (${via}) did not answer (${why})`;
  console.warn(`inference: a routed request: ${line}; trying the next node`);
  return line;
}

/** The statuses that are the caller's mistake (the same request fails at every node). */
const CALLERS_MISTAKES = [400, 413, 422];

/** A peer's refusal of the request itself, in OpenAI's error shape: passed on to the client. */
export interface Mistake {
  status: number;
  message: string;
  param?: string;
  nodeId: string;
}

/** What forwarding ended with: the answer, the caller's mistake, or why each node failed. */
export type ForwardResult =
  | { served: true; response: Response; nodeId: string }
  | { served: false; failures: string[]; mistake?: Mistake };

/** Reads a peer's error (OpenAI's shape, a few KiB at most) as a Mistake. */
async function mistakeOf(response: Response, nodeId: string): Promise<Mistake> {
  const text = await response.text().catch(() => "");
  let message = `node ${nodeId} refused the request (status ${response.status})`;
  let param: string | undefined;
  try {
    const error = JSON.parse(text.slice(0, 16_384))?.error;
    if (typeof error?.message === "string") message = error.message;
    if (typeof error?.param === "string") param = error.param;
  } catch { /* not JSON: the status says enough */ }
  return { status: response.status, message, param, nodeId };
}

/**
 * Tries `candidates` in order; the first that answers with a 2xx is passed through, its
 * `x-edge-served-by` set to that node. A LAN node is first proved at its address; a node whose
 * answer does not start within `headWaitMs` must show it is still there (stillThere). A 400, 413 or 422 ends
 * the tries (`mistake`: the request is at fault, not the node). `served: false` when none
 * answered (or the client left), with why each failed.
 */
export async function forwardToMesh(
  sender: MeshSender,
  candidates: readonly MeshCandidate[],
  request: Forwarded,
  headWaitMs = HEAD_WAIT_MS,
): Promise<ForwardResult> {
  const failures: string[] = [];
  for (const candidate of candidates) {
    if (request.signal.aborted) break;
    const route = await routeTo(sender, candidate, request);
    if (!route) continue;
    const lan = candidate.via === "lan";
    // A controller of its own: the upstream request stops when the client leaves, and also
    // when the peer is lost while its answer's head is awaited (whileThere, below).
    const upstream = new AbortController();
    const leave = () => upstream.abort(request.signal.reason);
    request.signal.addEventListener("abort", leave, { once: true });
    const headed = new AbortController();
    let response: Response;
    try {
      if (lan) await sender.prove(route.url.origin, candidate.node.id, upstream.signal);
      const answer = fetch(route.url, {
        method: request.method,
        headers: route.headers,
        body: request.body,
        redirect: "manual",
        signal: upstream.signal,
      });
      response = await Promise.race([
        answer,
        whileThere(sender, candidate, route.url.origin, headWaitMs, headed.signal)
          .catch((error) => {
            upstream.abort(error);
            throw error;
          }),
      ]);
    } catch (error) {
      if (request.signal.aborted) break;
      failures.push(failed(candidate, (error as Error).message));
      continue;
    } finally {
      headed.abort();
      request.signal.removeEventListener("abort", leave);
    }
    if (CALLERS_MISTAKES.includes(response.status)) {
      return { served: false, failures, mistake: await mistakeOf(response, candidate.node.id) };
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
