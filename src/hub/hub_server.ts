/**
 * `edgenode hub`: the relay between networks (spec/hub.yaml). It holds one WebSocket per node,
 * answers their account and proximity listings, and forwards tunnelled requests.
 *
 * @module
 */
import { hubRoutes } from "../../gen/hub/routes.ts";
import { requireBearer } from "../http/auth.ts";
import { Forbidden, Invalid, NotFound, Unavailable } from "../errors/mod.ts";
import { statusCodeError } from "../http/errors.ts";
import { json, upgradeReply } from "../http/reply.ts";
import { Pipeline } from "../http/pipeline.ts";
import { mountRoutes } from "../http/routes.ts";
import { SCOPES } from "../identity/identity.ts";
import { TokenVerifier } from "../identity/token_verifier.ts";
import { netAddress } from "../program/permission_set.ts";
import { openDatabase } from "../storage/database.ts";
import {
  CALLER_ACCOUNT_HEADER,
  FORWARDED_FOR_HEADER,
  forwardedHeaders,
  PORT_HEADER,
  REFERENCE_PORT_HEADER,
  REFERENCE_ROUTING_HEADER,
  routedNodeId,
  ROUTING_HEADER,
  tunnelAddress,
  VIA_HEADER,
} from "../tunnel/routing.ts";
import { TUNNEL_PROTOCOL } from "../tunnel/wire_frames.ts";
import type { HubSettings } from "./hub_settings.ts";
import { HubStore } from "./hub_store.ts";
import { accountListing, proximityListing } from "./listings.ts";
import { NodeSession, type SessionHost } from "./node_session.ts";
import { listenRaw } from "./raw_listener.ts";
import { HubCluster } from "./cluster/hub_cluster.ts";
import { forwardedClient, forwardToPeer } from "./cluster/peer_forward.ts";

/** A hub that is serving. */
export interface RunningHub {
  hostname: string;
  port: number;
  shutdown(): Promise<void>;
}

/** Starts a hub; resolves once it listens. */
export async function startHub(settings: HubSettings): Promise<RunningHub> {
  const db = openDatabase(settings.dataDir, "hub.db", "NORMAL");
  const store = new HubStore(db);
  const verifier = await TokenVerifier.create(undefined, settings.trustedIssuers);
  const sessions = new Map<string, NodeSession>();
  const connecting = new Set<NodeSession>();
  const publicUrl = (origin: string) => settings.publicUrl ?? origin;
  let cluster: HubCluster | undefined;

  const host: SessionHost = {
    verifier,
    store,
    pingSeconds: settings.pingSeconds,
    rawPort: undefined,
    publicUrl,
    register(session) {
      connecting.delete(session);
      const previous = sessions.get(session.nodeId!);
      sessions.set(session.nodeId!, session);
      previous?.close(4409, "replaced by a newer connection of the same node");
      // A node that moved here from another hub keeps the fix the cluster holds for it.
      session.entry!.fix ??= cluster?.presence.fixOf(session.nodeId!);
      cluster?.presence.published(session.entry!);
    },
    changed(session) {
      cluster?.presence.published(session.entry!);
    },
    unregister(session) {
      connecting.delete(session);
      if (session.nodeId && sessions.get(session.nodeId) === session) {
        sessions.delete(session.nodeId);
        cluster?.presence.withdrawn(session.nodeId);
      }
    },
    list(session, kind) {
      const entries = [...sessions.values()].map((s) => s.entry!);
      if (cluster?.up) entries.push(...cluster.presence.remoteNodes());
      const sepUrl = publicUrl(session.origin);
      return kind === "account"
        ? accountListing(session.entry!, entries, sepUrl)
        : proximityListing(session.entry!, entries, settings.proximityKm, sepUrl);
    },
  };

  const tunnelHint =
    `tunnelled requests need the ${ROUTING_HEADER} and ${PORT_HEADER} headers from the target's sep info`;
  const pipeline = new Pipeline({
    errorFormat: statusCodeError,
    allowHeaders: [PORT_HEADER, ROUTING_HEADER, REFERENCE_PORT_HEADER, REFERENCE_ROUTING_HEADER],
    keepHeadersOf: [101],
    before: ({ request, remote }) =>
      tunnelAddress(request.headers).routing !== undefined ? tunnel(request, remote) : undefined,
    notFound: ({ request, path }) =>
      statusCodeError(404, `no route for ${request.method} ${path}; ${tunnelHint}`),
  });
  mountRoutes(pipeline, hubRoutes, {
    connect: ({ request, context }) => {
      if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
        throw new Invalid("this is the node connection: open it as a WebSocket");
      }
      if (sessions.size + connecting.size >= settings.maxConnections) {
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
      connecting.add(new NodeSession(socket, remote, origin, host, offered));
      return upgradeReply(response);
    },
    health: () => {
      const raw = [...sessions.values()].filter((session) => session.raw).length;
      return json(200, {
        status: "ok" as const,
        nodes: sessions.size,
        ...raw ? { rawNodes: raw } : {},
        ...cluster ? { cluster: { hubId: cluster.presence.hubId, ...cluster.health() } } : {},
      });
    },
  }, { prefixes: [""], apiKey: "", errorFormat: statusCodeError });

  const tunnel = async (request: Request, remote: string): Promise<Response> => {
    const address = tunnelAddress(request.headers);
    const nodeId = routedNodeId(address.routing!);
    if (!nodeId) {
      throw new Invalid(
        `${ROUTING_HEADER} is not a routing header: copy it from the sep info`,
      );
    }
    const portText = address.port ?? "";
    if (!/^\d{1,5}$/.test(portText) || Number(portText) > 65535) {
      throw new Invalid(`${PORT_HEADER} must be the port from the sep info`);
    }
    // Sent on by another hub of the cluster: served here or nowhere, never forwarded again.
    const client = forwardedClient(cluster?.key, request, nodeId);
    const token = requireBearer(request, "edge access token of the target node's account");
    // A refused token is a TokenError: Forbidden, as the table says.
    const { accountId } = await verifier.verify(token, SCOPES.clusters, nodeId);
    const session = sessions.get(nodeId);
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
          {
            retryAfterSeconds: 5,
          },
        );
      }
      throw new NotFound(`node ${nodeId} is not connected to this ${cluster ? "cluster" : "hub"}`);
    }
    // Without the hubs' marks (routing.ts): they stop here, a peer's as a client's.
    const headers = forwardedHeaders(request.headers);
    headers.push([VIA_HEADER, "hub"], [FORWARDED_FOR_HEADER, client ?? remote], [
      CALLER_ACCOUNT_HEADER,
      accountId,
    ]);
    return await session.forward(request, Number(portText), headers);
  };

  const { server, addr } = await pipeline.listen(settings.host, settings.port).catch((error) => {
    db.close();
    throw error;
  });
  const raw = settings.tunnelPort === undefined
    ? undefined
    : listenRaw(settings.host, settings.tunnelPort, {
      admit: () => sessions.size + connecting.size < settings.maxConnections,
      accept(socket, remote, origin, protocol) {
        connecting.add(new NodeSession(socket, remote, origin, host, protocol));
      },
    });
  host.rawPort = raw?.port;
  if (settings.cluster) {
    cluster = await HubCluster.start(settings.cluster, advertiseUrl(settings, addr.port));
  }
  const pinger = setInterval(() => {
    const now = Date.now();
    for (const session of [...sessions.values(), ...connecting]) session.keepAlive(now);
  }, settings.pingSeconds * 1000);
  return {
    hostname: addr.hostname,
    port: addr.port,
    async shutdown() {
      clearInterval(pinger);
      await cluster?.close();
      raw?.close();
      for (const session of [...sessions.values(), ...connecting]) {
        session.close(1001, "the hub is shutting down");
      }
      await server.shutdown();
      db.close();
    },
  };
}

/** Where the other hubs of a cluster reach this one. */
function advertiseUrl(settings: HubSettings, port: number): string {
  if (settings.cluster?.advertiseUrl) return settings.cluster.advertiseUrl;
  const wildcard = settings.host === "0.0.0.0" || settings.host === "::";
  return `http://${netAddress(wildcard ? Deno.hostname() : settings.host, port)}`;
}
