/**
 * The node listing as a service of the node (spec/mds.yaml) at /mds/v1.
 *
 * @module
 */
import type { LinkLocal } from "../discovery/link_local.ts";
import type { HubLink } from "../hub_client/hub_link.ts";
import { mountRoutes } from "../http/routes.ts";
import type { Service } from "../http/service.ts";
import type { Identity } from "../identity/identity.ts";
import { mdsHandlers, mdsRoutes } from "./routes.ts";

/** What the mesh services (the listing here, insight above) answer from. */
export interface MeshDependencies {
  identity: Identity;
  linkLocal: LinkLocal;
  /** The hub link; undefined when the node has no hub. */
  hub?: HubLink;
}

/** The node listing's service, with `apiKey` for the operations that need it. */
export function mdsService(deps: MeshDependencies, settings: { apiKey: string }): Service {
  return {
    name: "mds",
    prefixes: ["/mds"],
    hint: "the node listing at /mds/v1/nodes",
    mount(pipeline) {
      // Not behind readsRequireKey: peers without the key must reach the ping, and the listing
      // has its own credential (the caller's token).
      mountRoutes(pipeline, mdsRoutes, mdsHandlers(deps.identity, deps.linkLocal, deps.hub), {
        apiKey: settings.apiKey,
        prefixes: [""],
      });
    },
  };
}
