/**
 * The OpenAI-compatible API as a service of the node (spec/inference.yaml), under the configured
 * prefixes, with 401 for a wrong key and OpenAI's error shape. A node with inference off does not
 * list this service at all. A request another node routed here (it carries a node's signature,
 * mesh_router.ts) is checked as such, before and in place of the API key.
 *
 * @module
 */
import { requireApiKey } from "../http/auth.ts";
import { mountRoutes } from "../http/routes.ts";
import type { Service } from "../http/service.ts";
import type { InferenceService } from "./inference_service.ts";
import type { MeshRouter } from "./mesh_router.ts";
import { type InferenceAuth, inferenceHandlers, inferenceRoutes, openAiError } from "./routes.ts";

/** The OpenAI-compatible API's service over `inference`, under `prefixes`, behind `apiKey`. */
export function inferenceService(
  inference: InferenceService,
  settings: { prefixes: readonly string[]; apiKey: string },
  mesh?: MeshRouter,
): Service {
  const { prefixes, apiKey } = settings;
  return {
    name: "inference",
    prefixes,
    hint: `the OpenAI-compatible API under ${prefixes.join(", ")}`,
    mount(pipeline) {
      mountRoutes(pipeline, inferenceRoutes, inferenceHandlers(inference, mesh), {
        apiKey,
        prefixes,
        wrongKeyStatus: 401,
        errorFormat: openAiError,
        authorize: (context, needsKey): InferenceAuth | Promise<InferenceAuth> => {
          if (mesh?.isRouted(context.request)) {
            return mesh.peerOf(context.request, context).then((peer) => ({
              peer,
              requireKey() {},
            }));
          }
          const requireKey = () => {
            if (!context.apiKeyGranted) requireApiKey(context.request, apiKey, 401);
          };
          if (needsKey) requireKey();
          return { requireKey };
        },
      });
    },
  };
}
