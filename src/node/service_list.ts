/**
 * The services a node offers, in the order its 404 answer names them. A service that is off
 * (inference, the dashboard) is not in the list: nothing of it is mounted or reserved.
 *
 * @module
 */
import { dashboardService } from "../dashboard/service.ts";
import type { Service } from "../http/service.ts";
import { inferenceService } from "../inference/service.ts";
import { insightService } from "../insight/service.ts";
import { jsonRpcService } from "../jsonrpc/service.ts";
import { mcmService } from "../mcm/service.ts";
import { mdsService } from "../mds/service.ts";
import { modelLoading } from "../inference/load_messages.ts";
import { storeService } from "../store/service.ts";
import type { NodeDependencies } from "./dependencies.ts";

/** The node's services over its parts. */
export function nodeServiceList(deps: NodeDependencies): Service[] {
  const { settings, inference } = deps;
  const { apiKey, readsRequireKey } = settings;
  return [
    storeService(
      { ...deps, loading: inference && modelLoading(inference) },
      { prefixes: settings.storePrefixes, apiKey, readsRequireKey },
    ),
    insightService(deps, { prefixes: settings.insightPrefixes, apiKey }),
    ...inference
      ? [inferenceService(inference, { prefixes: settings.inference.prefixes, apiKey })]
      : [],
    jsonRpcService(deps.identity),
    mdsService(deps, { apiKey }),
    mcmService(deps, { apiKey: settings.mcm.apiKey }),
    ...settings.dashboard.enabled
      ? [dashboardService(
        { ...deps, dataDir: settings.dataDir },
        { path: settings.dashboard.path, apiKey, readsRequireKey },
      )]
      : [],
  ];
}
