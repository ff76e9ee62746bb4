/**
 * Model operations that take more than one call: a record created when missing, and a download
 * followed to its end. The CLI and the dashboard both use them.
 *
 * @module
 */
import type { components } from "../../gen/store/types.ts";
import type { storeClient } from "./clients.ts";
import { downloadEvents, type DownloadMessage } from "./download_events.ts";

type Store = ReturnType<typeof storeClient>;
type Model = components["schemas"]["Model"];

/** An answer of the node other than the one asked for: its status and message. */
export class NodeError extends Error {
  override name = "NodeError";
  readonly status: number;

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
  store: Store,
  input: components["schemas"]["CreateModelRequest"],
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
  store: Store,
  id: string,
  body: components["schemas"]["DownloadModelRequest"],
  signal?: AbortSignal,
): AsyncGenerator<Exclude<DownloadMessage, { error: unknown }>> {
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
