/**
 * What the registry's `PUT /models` load and unload actions need of the inference engine. The
 * store declares it and inference provides it (src/inference/load_messages.ts), so that the store,
 * a layer below, never imports inference.
 *
 * @module
 */

/**
 * A message of a load's stream, as the reference sends them: progress at each whole percent
 * (`<|loading_model|> N%<br />`), then the loaded model, or the failure (which the edge shapes).
 */
export type LoadEvent =
  | { progress: string }
  | { id: string; object: "model"; kind: string; loaded: true }
  | { failed: unknown };

/** A model's state after an unload. */
export interface Unloaded {
  /** The model's id. */
  id: string;
  /** Always "model". */
  object: "model";
  /** The model's kind (llm, vlm, embed). */
  kind: string;
  /** Always false: the engine holds it no more. */
  loaded: false;
}

/** Loading and unloading the registry's models in the inference engine. */
export interface ModelLoading {
  /** The load's progress stream; the model is checked first (errors are thrown). */
  load(id: string): ReadableStream<LoadEvent>;
  /** Unloads, answering the unloaded state. */
  unload(id: string): Promise<Unloaded>;
}
