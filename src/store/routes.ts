/**
 * HTTP handlers of the model registry, one per operation of spec/store.yaml.
 *
 * @module
 */
import { storeRoutes } from "../../gen/store/routes.ts";
import { Invalid, NotFound, Unavailable } from "../errors/mod.ts";
import { fileResponse, type FileToServe } from "../http/file_response.ts";
import { JsonCache } from "../http/json_cache.ts";
import { fileReply, headReply, json, jsonText, raw } from "../http/reply.ts";
import type { Handlers, PreparedAnswers } from "../http/routes.ts";
import { sseResponse } from "../http/sse.ts";
import { uploadBody } from "../http/upload_body.ts";
import { Downloads } from "./downloads.ts";
import type { ModelLoading } from "./model_loading.ts";
import { fileBySha256 } from "./peer_files.ts";
import type { Provisioning } from "./provisioning.ts";
import type { Model } from "../../gen/store/validators.ts";
import type { ModelRegistry } from "./registry.ts";

export { storeRoutes };

/** Whether a read asks for a file rather than the record; `file` alone is a mistake. */
function wantsMedia(query: { alt?: "media"; file?: string }): boolean {
  if (query.file !== undefined && query.alt !== "media") {
    throw new Invalid("query parameter 'file' needs 'alt=media'");
  }
  return query.alt === "media";
}

/** The registry's handlers, and the answers they prepare for the reads that repeat. */
export interface StoreAnswers {
  handlers: Handlers<typeof storeRoutes>;
  /**
   * GET of a record whose JSON the handler made since the last write: the same text, answered
   * before the route's input is validated again (the id was, when the text was made).
   */
  prepared: PreparedAnswers<typeof storeRoutes>;
}

/** The handlers of every registry operation. */
export function storeHandlers(
  registry: ModelRegistry,
  provisioning: Provisioning,
  loading?: ModelLoading,
): StoreAnswers {
  const engine = (action: string) => {
    if (!loading) {
      throw new Unavailable(`action '${action}' needs inference, which is off on this node`);
    }
    return loading;
  };
  // Listings and records are read far more often than written: keep their JSON until a write.
  const lists = new JsonCache();
  // By the id as the route found it: only an id that passed validation and named a record is
  // ever a key (registry.get throws for any other).
  const records = new JsonCache();
  const downloads = new Downloads(provisioning);
  const modelJson = (id: string) => records.get(id, registry.generation, () => registry.get(id));
  const serveFile = async (request: Request, id: string, file: () => FileToServe) => {
    try {
      return await fileResponse(request, file());
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) {
        throw new NotFound(`the file of model '${id}' is missing`, { resource: "model file", id });
      }
      throw error;
    }
  };
  const media = (request: Request, id: string, file?: "model" | "mmproj") =>
    serveFile(request, id, () => registry.mediaFile(id, file));
  const handlers: Handlers<typeof storeRoutes> = {
    listModels: ({ query }) =>
      jsonText(
        200,
        lists.get(
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
      if (body.action === "load") {
        const events = engine("load").load(body.id);
        return raw(sseResponse(events, `loading model '${body.id}'`), [200]);
      }
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
    // Mounted with authorizePeer (service.ts): only a node of the account gets here.
    getPeerFile: async ({ params, request }) => {
      const { sha256 } = params;
      return fileReply(await serveFile(request, sha256, () => fileBySha256(registry, sha256)));
    },
    // A failure is the stream's last message: `{ error: { code, message } }` (spec/store.yaml).
    downloadModel: ({ params, body }) =>
      raw(sseResponse(downloads.start(params.id, body), `download of '${params.id}'`), [200]),
  };
  const prepared: PreparedAnswers<typeof storeRoutes> = {
    // Any query (alt=media, or one to refuse) goes the handler's way.
    getModel: ({ params, search }) => {
      return search.length > 1 ? undefined : records.answer<Model>(params.id, registry.generation);
    },
  };
  return { handlers, prepared };
}
