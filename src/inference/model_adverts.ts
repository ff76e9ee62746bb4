/**
 * What a node advertises of its models in its signed description (spec/mds.yaml, "Models"):
 * each registry model with its file, readiness and load state, and the engine's backend. Link-local
 * discovery and the hub link read it through a function they are given (discovery cannot import
 * the registry or the engine), so it is computed again at each description: cheap, with the
 * registry's part cached until the registry changes.
 *
 * @module
 */
import type { ModelAdvert } from "../../gen/mds/validators.ts";
import type { Model } from "../../gen/store/validators.ts";
import type { ModelRegistry } from "../store/mod.ts";
import type { ModelSlot } from "./model_slots.ts";

export type { ModelAdvert };

/** At most this many models are advertised (spec/mds.yaml NodeDescription `models`). */
export const MAX_ADVERTISED_MODELS = 64;

/** The models and backend a node advertises. */
export interface ModelsAdvert {
  models?: ModelAdvert[];
  backend?: string;
}

/** What the advert reads of the registry and the engine. */
export interface AdvertSources {
  registry: Pick<ModelRegistry, "list" | "generation">;
  /** The engine's slot of a loaded model. */
  loaded(id: string): Pick<ModelSlot, "idleSequences" | "waiting"> | undefined;
  /**
   * The engine's backend ("cuda", "vulkan", "metal" or "cpu": what the engine reports, or what
   * was detected before it started: InferenceService.backend); undefined when inference is
   * turned off or it is not known yet.
   */
  backend: () => string | undefined;
}

/** Loaded first, then ready, then the rest; each group in the registry's order (oldest first). */
function rank(model: Model, loaded: boolean): number {
  return loaded ? 0 : model.readyToUse ? 1 : 2;
}

/**
 * A function that gives the node's models advert as it is now: empty (no fields) while the
 * registry is empty, so the description stays as older peers and hubs know it.
 */
export function modelsAdvertiser(sources: AdvertSources): () => ModelsAdvert {
  let cached = { generation: -1, models: [] as Model[] };
  return () => {
    const generation = sources.registry.generation;
    if (cached.generation !== generation) {
      cached = { generation, models: sources.registry.list({}) };
    }
    // Read even while no model is advertised: the first read starts the backend's detection, so
    // it is known by the time the first model is.
    const backend = sources.backend();
    if (cached.models.length === 0) return {};
    const models = cached.models
      .map((model) => ({ model, slot: sources.loaded(model.id) }))
      .map((entry, order) => ({ ...entry, order, rank: rank(entry.model, !!entry.slot) }))
      .sort((a, b) => a.rank - b.rank || a.order - b.order)
      .slice(0, MAX_ADVERTISED_MODELS)
      .map(({ model, slot }) => advert(model, slot));
    return { models, ...(backend ? { backend } : {}) };
  };
}

function advert(
  model: Model,
  slot: Pick<ModelSlot, "idleSequences" | "waiting"> | undefined,
): ModelAdvert {
  return {
    id: model.id,
    kind: model.kind,
    ...(model.sha256 && model.totalSize !== undefined
      ? { sha256: model.sha256, size: model.totalSize }
      : {}),
    ready: model.readyToUse,
    loaded: slot !== undefined,
    ...(slot ? { freeSlots: slot.idleSequences, queued: slot.waiting } : {}),
  };
}
