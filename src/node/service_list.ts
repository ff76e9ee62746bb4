/**
 * The services a node offers, in the order its 404 answer names them. A service that is off
 * (inference, the dashboard) mounts nothing, but its paths stay reserved: a microservice
 * deployed there would be shadowed by the service once it is switched on.
 *
 * @module
 */
import { dashboardService } from "../dashboard/service.ts";
import { checkPeer, proveAt } from "../discovery/mod.ts";
import { accountNodes } from "../hub_client/mod.ts";
import type { Service } from "../http/service.ts";
import { MeshRouter } from "../inference/mesh_router.ts";
import { inferenceService } from "../inference/service.ts";
import { insightService } from "../insight/service.ts";
import { jsonRpcService } from "../jsonrpc/service.ts";
import { mcmService } from "../mcm/service.ts";
import { mdsService } from "../mds/service.ts";
import { modelLoading } from "../inference/load_messages.ts";
import { storeService } from "../store/service.ts";
import type { PeerFilesDeps } from "../store/peer_files.ts";
import type { NodeDependencies } from "./dependencies.ts";

/** Who may fetch this node's model files: the nodes of its account (store/peer_files.ts). */
function peerFilesOf({ settings, identity, linkLocal }: NodeDependencies): PeerFilesDeps {
  return {
    mesh: () => settings.inference.mesh,
    peers: {
      get nodeId() {
        return identity.nodeId;
      },
      get accountId() {
        return identity.accountId;
      },
      lanAccountOf: (id) =>
        id === identity.nodeId
          ? undefined
          : linkLocal.members().find((member) => member.id === id)?.accountId,
    },
  };
}

/** The node's services over its parts. */
export function nodeServiceList(deps: NodeDependencies): Service[] {
  const { settings, inference } = deps;
  const { apiKey, readsRequireKey } = settings;
  return [
    storeService(
      { ...deps, loading: inference && modelLoading(inference), peerFiles: peerFilesOf(deps) },
      { prefixes: settings.storePrefixes, apiKey, readsRequireKey },
    ),
    insightService(deps, { prefixes: settings.insightPrefixes, apiKey }),
    inference
      ? inferenceService(inference, { prefixes: settings.inference.prefixes, apiKey }, meshOf(deps))
      : switchedOff("inference", settings.inference.prefixes),
    jsonRpcService(deps.identity),
    mdsService(deps, { apiKey }),
    mcmService(deps, { apiKey: settings.mcm.apiKey }),
    settings.dashboard.enabled
      ? dashboardService(
        { ...deps, dataDir: settings.dataDir },
        { path: settings.dashboard.path, apiKey, readsRequireKey },
      )
      : switchedOff("dashboard", ["/dashboard"]),
  ];
}

/** The mesh the OpenAI-compatible API routes to (issue 37), from discovery and the hub link. */
function meshOf({ settings, identity, linkLocal, hub }: NodeDependencies): MeshRouter {
  return new MeshRouter({
    scope: settings.inference.mesh,
    identity,
    lanMembers: () => linkLocal.members(),
    hub: hub && { accountNodes: () => accountNodes(hub), url: () => hub.bep().url },
    prove: (origin, nodeId, signal, fresh) =>
      fresh ? provedNow(origin, nodeId, signal) : proveAt(origin, nodeId, signal),
    ownModels: () => linkLocal.self().models ?? [],
  });
}

/** A fresh proof of `nodeId` at `origin` (never one believed from before). */
async function provedNow(origin: string, nodeId: string, signal: AbortSignal): Promise<void> {
  signal.throwIfAborted();
  const aborted = Promise.withResolvers<never>();
  const abort = () => aborted.reject(signal.reason);
  signal.addEventListener("abort", abort, { once: true });
  aborted.promise.catch(() => {});
  try {
    await Promise.race([checkPeer(origin, nodeId), aborted.promise]);
  } finally {
    signal.removeEventListener("abort", abort);
  }
}

/** A service that is off: its paths reserved, nothing mounted, not named in the 404 hint. */
function switchedOff(name: string, prefixes: readonly string[]): Service {
  return { name: `${name} (off)`, prefixes, mount() {} };
}
