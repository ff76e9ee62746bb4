/**
 * The hub's HTTP side (spec/hub.yaml): the node connection (a WebSocket), the health check, and
 * tunnelled requests, which carry the routing headers of a node's sep info and are forwarded to
 * that node (or the hub of the cluster that holds it).
 *
 * @module
 */
import { hubRoutes } from "../../gen/hub/routes.ts";
import { Forbidden, Invalid, NotFound, Unavailable } from "../errors/mod.ts";
import { requireBearer } from "../http/auth.ts";
import { json, upgradeReply } from "../http/reply.ts";
import type { Handlers } from "../http/routes.ts";
import { SCOPES } from "../identity/identity.ts";
import type { TokenVerifier } from "../identity/token_verifier.ts";
import {
  CALLER_ACCOUNT_HEADER,
  FORWARDED_FOR_HEADER,
  forwardedHeaders,
  HeaderPairs,
  type HeaderSource,
  PORT_HEADER,
  routedNodeId,
  ROUTING_HEADER,
  tunnelAddress,
  tunnelToken,
  VIA_HEADER,
} from "../tunnel/routing.ts";
import { TUNNEL_PROTOCOL } from "../tunnel/wire_frames.ts";
import { forwardedClient, forwardToPeer } from "./cluster/peer_forward.ts";
import type { ConnectedNodes } from "./connected_nodes.ts";
import type { HubStore } from "./hub_store.ts";
import { NodeSession } from "./node_session.ts";

export { hubRoutes };

/** What the hub's routes answer from. */
export interface HubDependencies {
  nodes: ConnectedNodes;
  verifier: TokenVerifier;
  store: HubStore;
}

/** What a 404 of the hub says. */
export const TUNNEL_HINT =
  `tunnelled requests need the ${ROUTING_HEADER} and ${PORT_HEADER} headers from the target's sep info`;

/** The handlers of spec/hub.yaml's operations. */
export function hubHandlers({ nodes }: HubDependencies): Handlers<typeof hubRoutes> {
  return {
    connect: ({ request, context }) => {
      if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
        throw new Invalid("this is the node connection: open it as a WebSocket");
      }
      if (!nodes.admits()) {
        throw new Unavailable("the hub holds as many nodes as it may; try another hub later", {
          retryAfterSeconds: 30,
        });
      }
      const remote = context.remote; // Deno forgets the peer's address once upgraded.
      // A node of this protocol offers it as the WebSocket subprotocol; an older node offers
      // none, and is told why it cannot join instead of meeting frames it cannot read.
      const offered = (request.headers.get("sec-websocket-protocol") ?? "").split(",")
        .some((name) => name.trim() === TUNNEL_PROTOCOL);
      const { socket, response } = Deno.upgradeWebSocket(request, {
        idleTimeout: 0,
        ...(offered ? { protocol: TUNNEL_PROTOCOL } : {}),
      });
      const origin = new URL(request.url).origin;
      nodes.connecting(new NodeSession(socket, remote, origin, nodes, offered));
      return upgradeReply(response);
    },
    health: () => {
      const { nodes: count, raw } = nodes.counts();
      const cluster = nodes.cluster;
      return json(200, {
        status: "ok" as const,
        nodes: count,
        ...raw ? { rawNodes: raw } : {},
        ...cluster ? { cluster: { hubId: cluster.presence.hubId, ...cluster.health() } } : {},
      });
    },
  };
}

/** The node and port a tunnelled request names; Invalid when its headers are not a sep info's. */
function tunnelTarget(headers: Pick<Headers, "get">): { nodeId: string; port: number } {
  const address = tunnelAddress(headers);
  const nodeId = routedNodeId(address.routing!);
  if (!nodeId) {
    throw new Invalid(`${ROUTING_HEADER} is not a routing header: copy it from the sep info`);
  }
  const portText = address.port ?? "";
  if (!/^\d{1,5}$/.test(portText) || Number(portText) > 65535) {
    throw new Invalid(`${PORT_HEADER} must be the port from the sep info`);
  }
  return { nodeId, port: Number(portText) };
}

/**
 * Forwards a tunnelled request to its node: here, through the hub of the cluster that holds the
 * node, or nowhere (404, or 503 while the cluster is down). `requestHeaders`: the request's
 * headers, read once (the hub's pipeline has them already).
 */
export async function tunnel(
  { nodes, verifier, store }: HubDependencies,
  request: Request,
  remote: string,
  requestHeaders: HeaderSource = new HeaderPairs(request.headers),
): Promise<Response> {
  const { nodeId, port } = tunnelTarget(requestHeaders);
  const cluster = nodes.cluster;
  // Sent on by another hub of the cluster: served here or nowhere, never forwarded again.
  const client = forwardedClient(cluster?.key, request, nodeId);
  // x-edge-authorization first: a mesh call keeps its own Authorization for the microservice.
  const token = tunnelToken(requestHeaders) ??
    requireBearer(request, "edge access token of the target node's account");
  // A refused token is a TokenError: Forbidden, as the table says.
  const { accountId } = await verifier.verify(token, SCOPES.clusters, nodeId);
  const session = nodes.session(nodeId);
  const elsewhere = !session && client === undefined && cluster?.up
    ? cluster.presence.locate(nodeId)
    : undefined;
  const targetAccount = session?.entry?.node.accountId ??
    elsewhere?.entry.node.accountId ?? store.accountOf(nodeId);
  if (targetAccount !== undefined && targetAccount !== accountId) {
    throw new Forbidden(`the token's account '${accountId}' does not own that node`);
  }
  if (elsewhere) {
    return await forwardToPeer(cluster!.key, cluster!.presence.hubId, elsewhere, request, remote);
  }
  if (!session) {
    if (client === undefined && cluster && !cluster.up) {
      throw new Unavailable(
        `node ${nodeId} is not connected to this hub, and ${cluster.downMessage}`,
        { retryAfterSeconds: 5 },
      );
    }
    throw new NotFound(`node ${nodeId} is not connected to this ${cluster ? "cluster" : "hub"}`);
  }
  // Without the hubs' marks (routing.ts): they stop here, a peer's as a client's.
  const headers = forwardedHeaders(requestHeaders);
  headers.push(
    [VIA_HEADER, "hub"],
    [FORWARDED_FOR_HEADER, client ?? remote],
    [CALLER_ACCOUNT_HEADER, accountId],
  );
  return await session.forward(request, port, headers);
}
