/**
 * The tunnel's addressing and header rules (spec/hub.yaml, "Tunnels"), shared by the hub and
 * the node.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { Invalid, NotFound, UpstreamFailed } from "../errors/mod.ts";

/** The header names of the sep info, with the neutral word "edge". */
export const PORT_HEADER = "x-edge-port";
export const ROUTING_HEADER = "x-edge-routing";
/**
 * The reference's names of the same two headers (real-behaviour.md §1): its apps and agents send
 * these, so the hub routes on either pair, the spec's first.
 */
export const REFERENCE_PORT_HEADER = "x-mimik-port";
export const REFERENCE_ROUTING_HEADER = "x-mimik-routing";
/**
 * Where a tunnelled request may carry its credential instead of `Authorization` (`Bearer <edge
 * access token>`), so that `Authorization` reaches the node's microservice untouched (a mesh
 * call's own API key): the hub reads it first and never passes it on.
 */
export const TUNNEL_AUTHORIZATION_HEADER = "x-edge-authorization";
/** Set by the hub on every tunnelled request. */
export const VIA_HEADER = "x-edge-via";
export const FORWARDED_FOR_HEADER = "x-edge-forwarded-for";
export const CALLER_ACCOUNT_HEADER = "x-edge-caller-account";
/**
 * The marks of a request one hub of a cluster forwards to another (src/hub/cluster/
 * peer_forward.ts): hub to hub only, so never passed on to a node.
 */
export const HUB_FORWARD_HEADER = "x-edge-hub-forward";
export const HUB_CLIENT_HEADER = "x-edge-hub-client";

/**
 * Hop-by-hop headers (RFC 9110 §7.6.1), the ones the hub sets itself, and the hubs' marks (a
 * peer's as a client's forgery: a node, and the microservices behind it, never see a mark they
 * could replay nor a client address nobody checked). One set, so dropping them costs nothing.
 */
const NOT_FORWARDED = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
  PORT_HEADER,
  ROUTING_HEADER,
  REFERENCE_PORT_HEADER,
  REFERENCE_ROUTING_HEADER,
  TUNNEL_AUTHORIZATION_HEADER,
  VIA_HEADER,
  FORWARDED_FOR_HEADER,
  CALLER_ACCOUNT_HEADER,
  HUB_FORWARD_HEADER,
  HUB_CLIENT_HEADER,
]);

/** What the tunnel's header functions read: a request's Headers, or its HeaderPairs. */
export type HeaderSource = Pick<Headers, "get"> & Iterable<[string, string]>;

/**
 * A request's headers read once, as their iteration gives them (names in lower case, a name's
 * values joined): `get` answers as Headers.get does for every name but set-cookie, from a map.
 * Headers.get lowercases and compares every name of the list at each call, and the hub asks
 * about eight of them per tunnelled request.
 */
export class HeaderPairs implements HeaderSource {
  readonly #pairs: [string, string][];
  readonly #byName: Map<string, string>;

  constructor(headers: Headers) {
    this.#pairs = [...headers];
    this.#byName = new Map(this.#pairs);
  }

  /** The value of `name` (any case), or null. */
  get(name: string): string | null {
    return this.#byName.get(name.toLowerCase()) ?? null;
  }

  [Symbol.iterator](): Iterator<[string, string]> {
    return this.#pairs[Symbol.iterator]();
  }
}

/** The routing and port headers of a tunnelled request, under either pair of names. */
export function tunnelAddress(headers: Pick<Headers, "get">): { routing?: string; port?: string } {
  const routing = headers.get(ROUTING_HEADER) ?? headers.get(REFERENCE_ROUTING_HEADER);
  if (routing === null) return {};
  const port = headers.get(PORT_HEADER) ?? headers.get(REFERENCE_PORT_HEADER);
  return port === null ? { routing } : { routing, port };
}

/**
 * The bearer token that is a tunnelled request's credential: `x-edge-authorization`'s when it
 * holds one, else `Authorization`'s; undefined without one. The hub checks this token, and a
 * cluster's mark covers this same token (one function, so the two cannot disagree).
 */
export function tunnelToken(headers: Pick<Headers, "get">): string | undefined {
  return bearer(headers.get(TUNNEL_AUTHORIZATION_HEADER)) ?? bearer(headers.get("authorization"));
}

function bearer(value: string | null): string | undefined {
  const match = value === null ? null : /^Bearer[ ]+(\S+)\s*$/i.exec(value);
  return match ? match[1] : undefined;
}

/** The routing header of a node: base64 of `{"nodeId", "localLinkNetworkId"}`. */
export function routingHeader(nodeId: string, localLinkNetworkId: string): string {
  return Buffer.from(JSON.stringify({ nodeId, localLinkNetworkId })).toString("base64");
}

/** Routing headers seen lately and the node ids they name (a client sends the same one again). */
const routed = new Map<string, string | undefined>();
/** Entries kept before the memo starts over: a bound on what callers can make the hub hold. */
const ROUTED_MEMO_ENTRIES = 1024;

/** The node id a routing header names, or undefined when it is not one. */
export function routedNodeId(header: string): string | undefined {
  // Decoding it (base64, JSON, two patterns) was a visible part of the hub's time per request.
  if (routed.has(header)) return routed.get(header);
  const id = parseRouting(header);
  if (routed.size >= ROUTED_MEMO_ENTRIES) routed.clear();
  routed.set(header, id);
  return id;
}

function parseRouting(header: string): string | undefined {
  if (header.length > 1024 || !/^[A-Za-z0-9+/]+={0,2}$/.test(header)) return undefined;
  try {
    const parsed = JSON.parse(Buffer.from(header, "base64").toString("utf8"));
    const id = parsed?.nodeId;
    return typeof id === "string" && /^[0-9a-f]{56}$/.test(id) ? id : undefined;
  } catch {
    return undefined;
  }
}

/** The headers to pass through, as pairs, without hop-by-hop ones (and those named by Connection). */
export function forwardedHeaders(headers: HeaderSource): [string, string][] {
  const connection = headers.get("connection");
  // Most requests (HTTP/1.1 keep-alive) name nothing: no set to build and ask per header.
  const named = connection
    ? new Set(connection.split(",").map((h) => h.trim().toLowerCase()))
    : undefined;
  const pairs: [string, string][] = [];
  for (const [name, value] of headers) {
    if (!NOT_FORWARDED.has(name) && !named?.has(name)) pairs.push([name, value]);
  }
  return pairs;
}

/**
 * `path` on the node at `base` (its address, or the hub's for it); `..` segments resolve inside
 * that origin, and nothing of a path leaves it (Invalid otherwise).
 */
export function pathAt(base: URL, path: string, nodeId: string): URL {
  const url = new URL(`${base.href.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`);
  if (url.origin !== base.origin) throw new Invalid(`'${path}' is not a path of node ${nodeId}`);
  return url;
}

/** A node as a listing describes it: what reaching it through the hub needs. */
export interface TunnelledNode {
  id: string;
  localLinkNetworkId: string;
  addresses: readonly { type: string; url: { href: string } }[];
}

/**
 * The request to `path` on `node` through the hub this node is linked to (`linkedHub`, its base
 * URL): the URL (the node's `proxy` address) and, set on `headers`, the tunnel's headers with
 * `token` as the credential. The port is the node's HTTP port (its `local` address: the hub's
 * sep info). NotFound for a node without both addresses; UpstreamFailed for a `proxy` at another
 * hub: the token goes to the linked hub only, whatever a listing says.
 */
export function tunnelRoute(
  node: TunnelledNode,
  linkedHub: string,
  path: string,
  token: string,
  headers: Headers,
): URL {
  const proxy = node.addresses.find((address) => address.type === "proxy");
  const local = node.addresses.find((address) => address.type === "local");
  if (!proxy || !local) throw new NotFound(`node ${node.id} has no address through the hub`);
  const proxyUrl = new URL(proxy.url.href);
  if (proxyUrl.origin !== new URL(linkedHub).origin) {
    throw new UpstreamFailed(`the hub lists node ${node.id} behind ${proxyUrl.origin}, not itself`);
  }
  const url = pathAt(proxyUrl, path, node.id);
  const localUrl = new URL(local.url.href);
  headers.set(TUNNEL_AUTHORIZATION_HEADER, `Bearer ${token}`);
  headers.set(PORT_HEADER, localUrl.port || (localUrl.protocol === "https:" ? "443" : "80"));
  headers.set(ROUTING_HEADER, routingHeader(node.id, node.localLinkNetworkId));
  return url;
}
