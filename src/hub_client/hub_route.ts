/**
 * A request to a node of the account through the hub, addressed to that node (its `x-edge-port`
 * and `x-edge-routing`, spec/hub.yaml "Tunnels"): a microservice's `<nodeId>@mmesh/<path>` for a
 * node that is not on the LAN (src/mcm/services/mesh_calls.ts), and the node's own requests to
 * the account's nodes (src/model_mesh/).
 *
 * The caller's edge access token authorises it, never the node's own: the node holds a token of
 * the account, and lending it to any microservice would let each reach every node of the
 * account with the owner's rights. The token travels as `x-edge-authorization: Bearer <token>`
 * (or is the request's own `Authorization`, when that is one), so a microservice's own
 * `Authorization` (a mILM's API key) still reaches the microservice it calls; the hub reads the
 * credential there first and drops that header before the node.
 *
 * @module
 */
import type { NodeDescription } from "../../gen/mds/validators.ts";
import { Forbidden, NotFound } from "../errors/mod.ts";
import { bearerOf } from "../http/auth.ts";
import type { HubLink } from "./hub_link.ts";
import { type Identity, SCOPES } from "../identity/identity.ts";
import { TokenError } from "../identity/token_verifier.ts";
import { TUNNEL_AUTHORIZATION_HEADER, tunnelRoute } from "../tunnel/routing.ts";

export { pathAt } from "../tunnel/routing.ts";

/** What reaching a node through the hub needs of the node. */
export interface MeshHub {
  /** The hub link (the account listing). */
  hub: Pick<HubLink, "list" | "bep">;
  /** Checks the caller's token (this node's account, scope `edge:clusters`). */
  identity: Pick<Identity, "checkAccountToken">;
}

/** An edge access token's shape (a JWS): what may be taken from `Authorization`. */
const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/**
 * The caller's edge access token for the hub: `x-edge-authorization`'s bearer, else
 * `Authorization`'s when it is a token (not an API key); undefined without one.
 */
export function callerToken(headers: Headers): string | undefined {
  const explicit = bearerOf(headers.get(TUNNEL_AUTHORIZATION_HEADER));
  if (explicit) return explicit;
  const own = bearerOf(headers.get("authorization"));
  return own && JWT.test(own) ? own : undefined;
}

/** What the reference's agent says of an unknown node, so that its callers match it. */
export function unknownNode(nodeId: string, why = ""): NotFound {
  return new NotFound(`Cannot find node ${nodeId} in the linkLocal network${why}`);
}

/**
 * The request to `nodeId`'s `path` through the hub: its URL (the hub's tunnel address) and its
 * headers (the caller's, plus the tunnel's). Forbidden for a token that is not the account's;
 * NotFound for a node the account's listing does not hold now.
 */
export async function hubRoute(
  { hub, identity }: MeshHub,
  nodeId: string,
  path: string,
  headers: Headers,
  token: string,
  signal: AbortSignal,
): Promise<{ url: URL; headers: Headers }> {
  try {
    await identity.checkAccountToken(token, SCOPES.clusters);
  } catch (error) {
    if (!(error instanceof TokenError)) throw error;
    throw new Forbidden(`the token cannot reach the account's nodes: ${error.message}`);
  }
  const listed = await Promise.race([accountNodes(hub), aborted(signal)]);
  const node = listed.find((entry) => entry.id === nodeId);
  if (!node) throw unknownNode(nodeId, ", nor among the account's nodes connected to the hub");
  const sent = new Headers(headers);
  const url = tunnelRoute(node, hub.bep().url, path, token, sent);
  return { url, headers: sent };
}

/** Rejects when `signal` aborts: a cancelled call does not wait for the hub's listing. */
function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) return reject(signal.reason);
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}

/** How long the account's listing is reused: an agent's prompts come in bursts. */
const LISTING_MS = 2000;
const listings = new WeakMap<
  MeshHub["hub"],
  { until: number; nodes: Promise<NodeDescription[]> }
>();

/**
 * The account's nodes connected to the hub now (at most LISTING_MS old): one listing for the
 * microservices' mesh calls, the model files' sources and the inference mesh's routing.
 */
export function accountNodes(hub: MeshHub["hub"]): Promise<NodeDescription[]> {
  const kept = listings.get(hub);
  if (kept && kept.until > Date.now()) return kept.nodes;
  const nodes = hub.list("account");
  listings.set(hub, { until: Date.now() + LISTING_MS, nodes });
  // A failure is not kept: the next call asks again.
  nodes.catch(() => {
    if (listings.get(hub)?.nodes === nodes) listings.delete(hub);
  });
  return nodes;
}
