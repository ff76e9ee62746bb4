/**
 * The OpenAI-compatible API as a service of the node (spec/inference.yaml), under the configured
 * prefixes, with 401 for a wrong key and OpenAI's error shape. A node with inference off does not
 * list this service at all. A chat or an embedding another node routed here (it carries a node's
 * signature, mesh_router.ts) is checked as such, before and in place of the API key; no other
 * operation takes a node's signature (403 with one and without the key).
 *
 * @module
 */
import { Forbidden } from "../errors/mod.ts";
import { requireApiKey } from "../http/auth.ts";
import type { RequestContext } from "../http/pipeline.ts";
import { mountRoutes } from "../http/routes.ts";
import type { Service } from "../http/service.ts";
import type { InferenceService } from "./inference_service.ts";
import type { MeshRouter } from "./mesh_router.ts";
import { type InferenceAuth, inferenceHandlers, inferenceRoutes, openAiError } from "./routes.ts";

/** The operations a node of the account may ask of this one (mesh_router.ts): nothing else. */
const ROUTABLE = ["createChatCompletion", "createEmbeddings"] as const;

/** The OpenAI-compatible API's service over `inference`, under `prefixes`, behind `apiKey`. */
export function inferenceService(
  inference: InferenceService,
  settings: { prefixes: readonly string[]; apiKey: string },
  mesh?: MeshRouter,
): Service {
  const { prefixes, apiKey } = settings;
  const keyRequirer = (context: RequestContext) => () => {
    if (!context.apiKeyGranted) requireApiKey(context.request, apiKey, 401);
  };
  /** A chat or an embedding: a node's signature stands for the key. */
  const routable = (context: RequestContext, needsKey: boolean) => {
    if (mesh?.isRouted(context.request)) {
      return mesh.peerOf(context.request, context).then((peer): InferenceAuth => ({
        peer,
        requireKey() {},
      }));
    }
    const requireKey = keyRequirer(context);
    if (needsKey) requireKey();
    return { requireKey };
  };
  /**
   * Any other operation (load, unload, the listings): the key only. A request that carries a
   * node's signature and not the key is refused, whatever the operation would allow without it:
   * a node's signature is no credential here, and a peer never sends one but for a chat.
   */
  const keyOnly = (context: RequestContext, needsKey: boolean): InferenceAuth => {
    const requireKey = keyRequirer(context);
    if (mesh?.isRouted(context.request)) {
      try {
        requireKey();
      } catch {
        throw new Forbidden(
          "a node's signature (x-edge-node-request) is accepted only on chat completions and " +
            "embeddings; this operation needs the API key",
        );
      }
    } else if (needsKey) requireKey();
    return { requireKey };
  };
  const handlers = inferenceHandlers(inference, mesh);
  const [routed, others] = partition(inferenceRoutes, ROUTABLE);
  return {
    name: "inference",
    prefixes,
    hint: `the OpenAI-compatible API under ${prefixes.join(", ")}`,
    mount(pipeline) {
      const options = { apiKey, prefixes, wrongKeyStatus: 401 as const, errorFormat: openAiError };
      mountRoutes(pipeline, routed, handlers, { ...options, authorize: routable });
      mountRoutes(pipeline, others, handlers, { ...options, authorize: keyOnly });
    },
  };
}

/** `routes` split in two: the operations `ids` names, and the rest. */
function partition<T extends Record<string, unknown>, K extends keyof T>(
  routes: T,
  ids: readonly K[],
): [Pick<T, K>, Omit<T, K>] {
  const picked = {} as Record<string, unknown>;
  const rest = {} as Record<string, unknown>;
  for (const [id, route] of Object.entries(routes)) {
    ((ids as readonly PropertyKey[]).includes(id) ? picked : rest)[id] = route;
  }
  return [picked as Pick<T, K>, rest as Omit<T, K>];
}
