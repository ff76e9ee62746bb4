/**
 * Model operations that take more than one call: a record created when missing, a download
 * followed to its end, and a pull that leaves nothing behind when it fails. The CLI and the
 * dashboard use them.
 *
 * @module
 */
import type { components } from "../../gen/store/types.ts";
import type { StoreClient } from "./clients.ts";
import { downloadEvents, type DownloadMessage } from "./download_events.ts";
import { NodeError, nodeError } from "./node_errors.ts";

/**
 * A model record of the registry (spec/store.yaml's Model).
 *
 * @internal The type gen/store/types.ts gives the schema.
 */
export type Model = components["schemas"]["Model"];

/**
 * What a model record is created from (spec/store.yaml's CreateModelRequest).
 *
 * @internal The type gen/store/types.ts gives the schema.
 */
export type CreateModelRequest = components["schemas"]["CreateModelRequest"];

/**
 * Where a model's files are downloaded from (spec/store.yaml's DownloadModelRequest).
 *
 * @internal The type gen/store/types.ts gives the schema.
 */
export type DownloadModelRequest = components["schemas"]["DownloadModelRequest"];

/** A message of a download that went well: progress, projector progress, or done. */
export type DownloadProgressMessage = Exclude<DownloadMessage, { error: unknown }>;

/** The model `id`; undefined when the node has none by that id. */
export async function findModel(store: StoreClient, id: string): Promise<Model | undefined> {
  const { data, error, response } = await store.GET("/models/{id}", {
    params: { path: { id }, query: {} },
  });
  if (response.status === 404) return undefined;
  if (!response.ok || data === undefined) throw nodeError(response, error, `reading ${id}`);
  return data as Model;
}

/**
 * Creates the record `input`; NodeError when the node refuses. `created` is false when another
 * client made it first (the node answers 200 and merges).
 */
async function createModel(
  store: StoreClient,
  input: CreateModelRequest,
): Promise<{ model: Model; created: boolean }> {
  const { data, error, response } = await store.POST("/models", { body: input });
  if (!response.ok || data === undefined) throw nodeError(response, error, `adding ${input.id}`);
  return { model: data, created: response.status === 201 };
}

/** The model `input.id`, created from `input` when the node has none by that id. */
export async function ensureModel(
  store: StoreClient,
  input: CreateModelRequest,
): Promise<Model> {
  return await findModel(store, input.id) ?? (await createModel(store, input)).model;
}

/**
 * Starts a download into model `id` and yields its progress messages until the last, which is
 * `{ done, model }`. A refusal or an `error` message is thrown as a NodeError; aborting `signal`
 * leaves the transfer (the node drops it when its last client goes).
 */
export async function* followDownload(
  store: StoreClient,
  id: string,
  body: DownloadModelRequest,
  signal?: AbortSignal,
): AsyncGenerator<DownloadProgressMessage> {
  const { response, error } = await store.POST("/models/{id}/download", {
    params: { path: { id } },
    body,
    parseAs: "stream",
    signal,
  });
  // openapi-fetch has read an error answer's body into `error` whatever parseAs says.
  if (!response.ok) throw nodeError(response, error, `pulling ${id}`);
  for await (const message of downloadEvents(response)) {
    if ("error" in message) {
      throw new NodeError(message.error.code, `pulling ${id}: ${message.error.message}`);
    }
    yield message;
    if ("done" in message) return;
  }
  throw new NodeError(502, `pulling ${id}: the node ended the stream without finishing`);
}

/**
 * Downloads into model `input.id` as followDownload does, creating the record from `input` when
 * the node has none. A record it created is deleted again when the download does not finish
 * (refused, failed or aborted), so a pull that fails leaves the registry as it was.
 */
export async function* pullModel(
  store: StoreClient,
  input: CreateModelRequest,
  body: DownloadModelRequest,
  signal?: AbortSignal,
): AsyncGenerator<DownloadProgressMessage> {
  // Only a record this call created is removed on failure: the node's 201 says it was this one.
  const created = await findModel(store, input.id) === undefined &&
    (await createModel(store, input)).created;
  let finished = false;
  try {
    for await (const message of followDownload(store, input.id, body, signal)) {
      if ("done" in message) finished = true;
      yield message;
    }
  } finally {
    if (created && !finished) await removeUnready(store, input.id);
  }
}

/**
 * Deletes model `id` unless it has become ready meanwhile (a push from elsewhere); best effort.
 * For a record a command created and could not fill.
 */
export async function removeUnready(store: StoreClient, id: string): Promise<void> {
  try {
    if ((await findModel(store, id))?.readyToUse === false) {
      await store.DELETE("/models/{id}", { params: { path: { id } } });
    }
  } catch { /* The node went away: nothing more can be done from here. */ }
}
