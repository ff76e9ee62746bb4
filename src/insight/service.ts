/**
 * Insight as a service of the node (spec/insight.yaml): the node's tokens, info and the nodes it
 * knows, under the configured prefixes, with 401 for a wrong key and `{statusCode, message}` errors.
 *
 * @module
 */
import { mountRoutes } from "../http/routes.ts";
import type { Service } from "../http/service.ts";
import type { MeshDependencies } from "../mds/service.ts";
import { insightError, insightHandlers, insightRoutes } from "./routes.ts";

/** Insight's service under `prefixes`, behind `apiKey`. */
export function insightService(
  deps: MeshDependencies,
  settings: { prefixes: readonly string[]; apiKey: string },
): Service {
  const { prefixes, apiKey } = settings;
  return {
    name: "insight",
    prefixes,
    hint: `insight under ${prefixes.join(", ")}`,
    mount(pipeline) {
      mountRoutes(
        pipeline,
        insightRoutes,
        insightHandlers(deps.identity, deps.linkLocal, deps.hub),
        {
          apiKey,
          prefixes,
          wrongKeyStatus: 401,
          errorFormat: insightError,
        },
      );
    },
  };
}
