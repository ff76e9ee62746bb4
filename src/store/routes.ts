/**
 * HTTP handlers of the model registry, one per operation of spec/store.yaml.
 *
 * @module
 */
import { storeRoutes } from "../../gen/store/routes.ts";
import { Invalid, NotFound } from "../errors/mod.ts";
import { jsonResponse } from "../http/errors.ts";
import { fileResponse } from "../http/file_response.ts";
import { JsonCache, jsonTextResponse } from "../http/json_cache.ts";
import type { Handlers } from "../http/routes.ts";
import { uploadBody } from "../http/upload_body.ts";
import { Downloads } from "./downloads.ts";
import type { Provisioning } from "./provisioning.ts";
import type { ModelRegistry } from "./registry.ts";

export { storeRoutes };

/** Whether a read asks for a file rather than the record; `file` alone is a mistake. */
function wantsMedia(query: { alt?: "media"; file?: string }): boolean {
  if (query.file !== undefined && query.alt !== "media") {
    throw new Invalid("query parameter 'file' needs 'alt=media'");
  }
  return query.alt === "media";
}

/** The handlers of every registry operation. */
export function storeHandlers(
  registry: ModelRegistry,
  provisioning: Provisioning,
): Handlers<typeof storeRoutes> {
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
      jsonTextResponse(
        cache.get(
          `list ${query.kind} ${query.ready}`,
          registry.generation,
          () => ({ data: registry.list(query) }),
        ),
      ),
    createModel: ({ body }) => {
      const { model, created } = registry.create(body);
      return jsonResponse(model, created ? 201 : 200);
    },
    updateModel: ({ body }) => jsonResponse(registry.update(body)),
    getModel: ({ params, query, request }) =>
      wantsMedia(query)
        ? media(request, params.id, query.file)
        : jsonTextResponse(modelJson(params.id)),
    headModel: async ({ params, query, request }) => {
      if (wantsMedia(query)) return await media(request, params.id, query.file);
      const body = modelJson(params.id);
      return new Response(null, { headers: jsonTextResponse(body).headers });
    },
    deleteModel: async ({ params }) => {
      await registry.remove(params.id);
      return jsonResponse({ id: params.id, object: "model", deleted: true });
    },
    uploadModel: async ({ params, query, request }) => {
      // 404 before a byte of the body is read.
      registry.get(params.id);
      const body = await uploadBody(request, "file");
      return jsonResponse(await provisioning.upload(params.id, body, query));
    },
    downloadModel: ({ params, body }) => downloads.start(params.id, body),
  };
}
