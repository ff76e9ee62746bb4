/**
 * HTTP handlers of the model registry, one per operation of spec/store.yaml.
 *
 * @module
 */
import { storeRoutes } from "../../gen/store/routes.ts";
import { DomainError, Invalid, NotFound, Unavailable } from "../errors/mod.ts";
import { HTTP_STATUS_OF } from "../http/error_statuses.ts";
import { fileResponse } from "../http/file_response.ts";
import { JsonCache } from "../http/json_cache.ts";
import { fileReply, headReply, json, jsonText, raw } from "../http/reply.ts";
import type { Handlers } from "../http/routes.ts";
import { sseResponse } from "../http/sse.ts";
import { uploadBody } from "../http/upload_body.ts";
import { type DownloadEvent, Downloads } from "./downloads.ts";
import type { Provisioning } from "./provisioning.ts";
import type { ModelRegistry } from "./registry.ts";

export { storeRoutes };

/**
 * A download event as spec/store.yaml sends it: a failure becomes `{ error: { code, message } }`
 * with the status the failure would have as an answer.
 */
function downloadMessage(event: DownloadEvent): unknown {
  if (!("failed" in event)) return event;
  const error = event.failed;
  if (error instanceof DomainError) {
    return { error: { code: HTTP_STATUS_OF[error.kind], message: error.message } };
  }
  console.error("download failed:", error);
  return { error: { code: 500, message: `the download failed: ${(error as Error)?.message}` } };
}

/** Whether a read asks for a file rather than the record; `file` alone is a mistake. */
function wantsMedia(query: { alt?: "media"; file?: string }): boolean {
  if (query.file !== undefined && query.alt !== "media") {
    throw new Invalid("query parameter 'file' needs 'alt=media'");
  }
  return query.alt === "media";
}

/**
 * What `PUT /models` with `action` load or unload needs of the inference engine
 * (src/inference/routes.ts provides it).
 */
export interface ModelLoading {
  /** The load's progress stream (the model checked first: errors are thrown). */
  load(id: string): Response;
  /** Unloads, answering the unloaded state. */
  unload(id: string): Promise<{ id: string; object: "model"; kind: string; loaded: false }>;
}

/** The handlers of every registry operation. */
export function storeHandlers(
  registry: ModelRegistry,
  provisioning: Provisioning,
  loading?: ModelLoading,
): Handlers<typeof storeRoutes> {
  const engine = (action: string) => {
    if (!loading) {
      throw new Unavailable(`action '${action}' needs inference, which is off on this node`);
    }
    return loading;
  };
  // Listings and records are read far more often than written: keep their JSON until a write.
  const cache = new JsonCache();
  const downloads = new Downloads(provisioning);
  const modelJson = (id: string) =>
    cache.get(`model ${id}`, registry.generation, () => registry.get(id));
  const media = async (request: Request, id: string, file?: "model" | "mmproj") => {
    try {
      return await fileResponse(request, registry.mediaFile(id, file));
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) {
        throw new NotFound(`the file of model '${id}' is missing`);
      }
      throw error;
    }
  };
  return {
    listModels: ({ query }) =>
      jsonText(
        200,
        cache.get(
          `list ${query.kind} ${query.ready}`,
          registry.generation,
          () => ({ data: registry.list(query) }),
        ),
      ),
    createModel: ({ body }) => {
      const { model, created } = registry.create(body);
      return json(created ? 201 : 200, model);
    },
    updateModel: async ({ body }) => {
      if (body.action === "update") return json(200, registry.update(body));
      if (body.gguf || body.onnx) {
        throw new Invalid(`action '${body.action}' takes only 'id'; send gguf with 'update'`);
      }
      if (body.action === "load") return raw(engine("load").load(body.id), [200]);
      return json(200, await engine("unload").unload(body.id));
    },
    getModel: ({ params, query, request }) =>
      wantsMedia(query)
        ? media(request, params.id, query.file).then(fileReply)
        : jsonText(200, modelJson(params.id)),
    headModel: async ({ params, query, request }) => {
      if (wantsMedia(query)) {
        return headReply(await media(request, params.id, query.file), [200, 206, 304]);
      }
      // GET's answer: Deno.serve sends its headers, Content-Length included, without the body.
      return headReply(jsonText(200, modelJson(params.id)), [200]);
    },
    deleteModel: async ({ params }) => {
      await registry.remove(params.id);
      return json(200, { id: params.id, object: "model" as const, deleted: true as const });
    },
    uploadModel: async ({ params, query, request }) => {
      // 404 before a byte of the body is read.
      registry.get(params.id);
      // The file sink copies each chunk at once: a multipart body can lend them.
      const body = await uploadBody(request, "file", { lentChunks: true });
      return json(200, await provisioning.upload(params.id, body, query));
    },
    downloadModel: ({ params, body }) =>
      raw(sseResponse(downloads.start(params.id, body), downloadMessage), [200]),
  };
}
