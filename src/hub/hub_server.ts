/**
 * `edgenode hub`: the relay between networks (spec/hub.yaml). It holds one WebSocket per node,
 * answers their account and proximity listings, and forwards tunnelled requests. Built as a node
 * is: its parts, its routes (./hub_routes.ts) mounted on a pipeline, and one stack that a failed
 * start and a shutdown unwind alike.
 *
 * @module
 */
import { statusCodeError } from "../http/errors.ts";
import { Pipeline } from "../http/pipeline.ts";
import { mountRoutes } from "../http/routes.ts";
import { type RunningServer, startOrUnwind } from "../http/service.ts";
import { TokenVerifier } from "../identity/token_verifier.ts";
import { netAddress } from "../program/permission_set.ts";
import { openDatabase } from "../storage/database.ts";
import {
  HeaderPairs,
  PORT_HEADER,
  REFERENCE_PORT_HEADER,
  REFERENCE_ROUTING_HEADER,
  ROUTING_HEADER,
  tunnelAddress,
} from "../tunnel/routing.ts";
import { HubCluster } from "./cluster/hub_cluster.ts";
import { ConnectedNodes } from "./connected_nodes.ts";
import { type HubDependencies, hubHandlers, hubRoutes, tunnel, TUNNEL_HINT } from "./hub_routes.ts";
import type { HubSettings } from "./hub_settings.ts";
import { HubStore } from "./hub_store.ts";
import { NodeSession } from "./node_session.ts";
import { listenRaw } from "./raw_listener.ts";

/** A hub that is serving. */
export type RunningHub = RunningServer;

/** The hub's parts: its database (on the stack: closed last), token checks and sessions. */
async function buildHub(
  settings: HubSettings,
  stack: AsyncDisposableStack,
): Promise<HubDependencies> {
  const db = openDatabase(settings.dataDir, "hub.db", "NORMAL");
  stack.defer(() => db.close());
  const store = new HubStore(db);
  const verifier = await TokenVerifier.create(undefined, settings.trustedIssuers);
  return { nodes: new ConnectedNodes(settings, verifier, store), verifier, store };
}

/** The hub's pipeline: tunnelled requests before any route, then spec/hub.yaml's routes. */
function hubPipeline(deps: HubDependencies): Pipeline {
  const pipeline = new Pipeline({
    errorFormat: statusCodeError,
    allowHeaders: [PORT_HEADER, ROUTING_HEADER, REFERENCE_PORT_HEADER, REFERENCE_ROUTING_HEADER],
    keepHeadersOf: [101],
    before: ({ request, remote }) => {
      const headers = new HeaderPairs(request.headers);
      return tunnelAddress(headers).routing !== undefined
        ? tunnel(deps, request, remote, headers)
        : undefined;
    },
    notFound: ({ request, path }) =>
      statusCodeError(404, `no route for ${request.method} ${path}; ${TUNNEL_HINT}`),
  });
  mountRoutes(pipeline, hubRoutes, hubHandlers(deps), {
    prefixes: [""],
    apiKey: "",
    errorFormat: statusCodeError,
  });
  return pipeline;
}

/** Starts a hub; resolves once it listens. */
export function startHub(settings: HubSettings): Promise<RunningHub> {
  return startOrUnwind((stack) => startParts(settings, stack));
}

/** Opens the hub's parts on `stack`, mounts its routes and listens; resolves with where. */
async function startParts(
  settings: HubSettings,
  stack: AsyncDisposableStack,
): Promise<Deno.NetAddr> {
  const deps = await buildHub(settings, stack);
  const { nodes } = deps;
  const { server, addr } = await hubPipeline(deps).listen(settings.host, settings.port);
  stack.defer(() => server.shutdown());
  // Before the server stops: the nodes are told the hub is going (1001), not cut off.
  stack.defer(() => nodes.closeAll());
  const raw = settings.tunnelPort === undefined
    ? undefined
    : listenRaw(settings.host, settings.tunnelPort, {
      admit: () => nodes.admits(),
      accept(socket, remote, origin, protocol) {
        nodes.connecting(new NodeSession(socket, remote, origin, nodes, protocol));
      },
    });
  if (raw) stack.defer(() => raw.close());
  nodes.rawPort = raw?.port;
  if (settings.cluster) {
    const cluster = await HubCluster.start(settings.cluster, advertiseUrl(settings, addr.port));
    nodes.cluster = cluster;
    stack.defer(() => cluster.close());
  }
  const pinger = setInterval(() => nodes.keepAlive(Date.now()), settings.pingSeconds * 1000);
  stack.defer(() => clearInterval(pinger));
  return addr;
}

/** Where the other hubs of a cluster reach this one. */
function advertiseUrl(settings: HubSettings, port: number): string {
  if (settings.cluster?.advertiseUrl) return settings.cluster.advertiseUrl;
  const wildcard = settings.host === "0.0.0.0" || settings.host === "::";
  return `http://${netAddress(wildcard ? Deno.hostname() : settings.host, port)}`;
}
