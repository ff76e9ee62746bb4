/**
 * The model registry as a service of the node (spec/store.yaml): its routes under the configured
 * prefixes, and its downloads ended when the node shuts down.
 *
 * @module
 */
import { mountRoutes } from "../http/routes.ts";
import type { Service } from "../http/service.ts";
import type { Provisioning } from "./provisioning.ts";
import type { ModelRegistry } from "./registry.ts";
import type { ModelLoading } from "./model_loading.ts";
import { authorizePeer, type PeerFilesDeps } from "./peer_files.ts";
import { storeHandlers, storeRoutes } from "./routes.ts";

/** What the registry's routes answer from. */
export interface StoreDependencies {
  registry: ModelRegistry;
  provisioning: Provisioning;
  /** Loading models into the engine; undefined when inference is off. */
  loading?: ModelLoading;
  /** Serving model files to the nodes of this node's account; none served without it. */
  peerFiles?: PeerFilesDeps;
}

/** How the registry is offered. */
export interface StoreServiceSettings {
  prefixes: readonly string[];
  apiKey: string;
  readsRequireKey: boolean;
}

/** The model registry's service. */
export function storeService(deps: StoreDependencies, settings: StoreServiceSettings): Service {
  const { prefixes, apiKey, readsRequireKey } = settings;
  return {
    name: "store",
    prefixes,
    hint: `the model registry is under ${prefixes.join(", ")}`,
    mount(pipeline) {
      const { handlers, prepared } = storeHandlers(deps.registry, deps.provisioning, deps.loading);
      // A node's request carries its signature, never the API key: `readsRequireKey` is not for it.
      const { getPeerFile, ...clientRoutes } = storeRoutes;
      mountRoutes(
        pipeline,
        clientRoutes,
        handlers,
        { apiKey, readsRequireKey, prefixes },
        prepared,
      );
      const { getPeerFile: serveToPeer } = handlers;
      mountRoutes(pipeline, { getPeerFile }, { getPeerFile: serveToPeer }, {
        apiKey,
        prefixes,
        authorize: (context) => authorizePeer(deps.peerFiles, context).then(() => undefined),
      });
    },
    // Before the server stops: open download streams would hold it open; they end with a message.
    [Symbol.asyncDispose]() {
      deps.provisioning.cancelAll("the node is shutting down; download again after it restarts");
      return Promise.resolve();
    },
  };
}
