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
import { storeHandlers, storeRoutes } from "./routes.ts";

/** What the registry's routes answer from. */
export interface StoreDependencies {
  registry: ModelRegistry;
  provisioning: Provisioning;
  /** Loading models into the engine; undefined when inference is off. */
  loading?: ModelLoading;
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
      const handlers = storeHandlers(deps.registry, deps.provisioning, deps.loading);
      mountRoutes(pipeline, storeRoutes, handlers, { apiKey, readsRequireKey, prefixes });
    },
    // Before the server stops: open download streams would hold it open; they end with a message.
    [Symbol.asyncDispose]() {
      deps.provisioning.cancelAll("the node is shutting down; download again after it restarts");
      return Promise.resolve();
    },
  };
}
