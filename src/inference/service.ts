/**
 * The OpenAI-compatible API as a service of the node (spec/inference.yaml), under the configured
 * prefixes, with 401 for a wrong key and OpenAI's error shape. A node with inference off does not
 * list this service at all.
 *
 * @module
 */
import { mountRoutes } from "../http/routes.ts";
import type { Service } from "../http/service.ts";
import type { InferenceService } from "./inference_service.ts";
import { inferenceHandlers, inferenceRoutes, openAiError } from "./routes.ts";

/** The OpenAI-compatible API's service over `inference`, under `prefixes`, behind `apiKey`. */
export function inferenceService(
  inference: InferenceService,
  settings: { prefixes: readonly string[]; apiKey: string },
): Service {
  const { prefixes, apiKey } = settings;
  return {
    name: "inference",
    prefixes,
    hint: `the OpenAI-compatible API under ${prefixes.join(", ")}`,
    mount(pipeline) {
      mountRoutes(pipeline, inferenceRoutes, inferenceHandlers(inference), {
        apiKey,
        prefixes,
        wrongKeyStatus: 401,
        errorFormat: openAiError,
      });
    },
  };
}
