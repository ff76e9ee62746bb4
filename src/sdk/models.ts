/**
 * Model operations that take more than one call: a record created when missing, and a download
 * followed to its end. The CLI and the dashboard both use them.
 *
 * @module
 */
import type { components } from "../../gen/store/types.ts";
import type { StoreClient } from "./clients.ts";
import { downloadEvents, type DownloadMessage } from "./download_events.ts";

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

/** An answer of the node other than the one asked for: its status and message. */
export class NodeError extends Error {
  /** Always "NodeError". */
  override name = "NodeError";
  /** The HTTP status of the answer (or of the download's error message). */
  readonly status: number;

  /** An error of HTTP `status` with the node's `message`. */
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

async function nodeError(response: Response, what: string): Promise<NodeError> {
  const body = await response.json().catch(() => undefined);
  const message = body?.error?.message ?? `${response.status} ${response.statusText}`;
  return new NodeError(response.status, `${what}: ${message}`);
}

/** The model `input.id`, created from `input` when the node has none by that id. */
export async function ensureModel(
  store: StoreClient,
  input: CreateModelRequest,
): Promise<Model> {
  const existing = await store.GET("/models/{id}", {
    params: { path: { id: input.id }, query: {} },
    parseAs: "stream",
  });
  if (existing.response.ok) return await existing.response.json();
  if (existing.response.status !== 404) throw await nodeError(existing.response, input.id);
  const created = await store.POST("/models", { body: input, parseAs: "stream" });
  if (!created.response.ok) throw await nodeError(created.response, `adding ${input.id}`);
  return await created.response.json();
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
  const { response } = await store.POST("/models/{id}/download", {
    params: { path: { id } },
    body,
    parseAs: "stream",
    signal,
  });
  if (!response.ok) throw await nodeError(response, `pulling ${id}`);
  for await (const message of downloadEvents(response)) {
    if ("error" in message) {
      throw new NodeError(message.error.code, `pulling ${id}: ${message.error.message}`);
    }
    yield message;
    if ("done" in message) return;
  }
  throw new NodeError(502, `pulling ${id}: the node ended the stream without finishing`);
}
