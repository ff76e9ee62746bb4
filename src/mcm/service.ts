/**
 * Microservice deployment as a service of the node (spec/mcm.yaml) at /mcm/v1: for local callers
 * only, with its own credentials (the mcm key or a token), and the deployments of the last run
 * restored once the node listens.
 *
 * @module
 */
import { mountRoutes } from "../http/routes.ts";
import type { Service } from "../http/service.ts";
import type { Identity } from "../identity/identity.ts";
import type { Deployments } from "./deployments.ts";
import type { Images } from "./images/images.ts";
import { mcmAuthorizer, mcmHandlers, mcmRoutes } from "./routes.ts";

/** What deployment works with. */
export interface McmDependencies {
  identity: Identity;
  images: Images;
  deployments: Deployments;
}

/** Deployment's service, behind `apiKey` (settings.mcm.apiKey) or a token. */
export function mcmService(deps: McmDependencies, settings: { apiKey: string }): Service {
  return {
    name: "mcm",
    prefixes: ["/mcm"],
    hint: "deployment at /mcm/v1",
    mount(pipeline) {
      mountRoutes(pipeline, mcmRoutes, mcmHandlers(deps.images, deps.deployments), {
        apiKey: settings.apiKey,
        prefixes: [""],
        authorize: mcmAuthorizer(settings.apiKey, deps.identity),
        local: true,
      });
    },
    // Its containers stop after the server (the node's own stack), not here: requests to them
    // finish first.
    start: () => deps.deployments.restore(),
    // Followed logs are open answers the server's shutdown would wait for: ended first.
    [Symbol.asyncDispose]: () => Promise.resolve(deps.deployments.endFollowers()),
  };
}
