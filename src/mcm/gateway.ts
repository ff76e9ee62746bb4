/**
 * The node's way to its microservices: a request no route of the node answers is looked up in
 * the deployed containers' paths and forwarded there. Microservices live outside the node's own
 * prefixes (deployment refuses those), so this is the pipeline's not-found step.
 *
 * @module
 */
import { CORS_FILE_HEADERS } from "../http/cors.ts";
import { errorResponse, responseForError } from "../http/errors.ts";
import type { RequestContext, Step } from "../http/pipeline.ts";
import type { Deployments } from "./deployments.ts";

/** What the gateway needs besides the deployments. */
export interface GatewayOptions {
  /** The port the node listens on (known once it does). */
  port: () => number;
  /** Where the node's own services are, for the 404 of a path nothing serves. */
  hint: string;
}

/** The pipeline's not-found step: a deployed microservice's answer, else a 404 with the hint. */
export function microserviceGateway(deployments: Deployments, options: GatewayOptions): Step {
  return async ({ request, path, search }: RequestContext): Promise<Response> => {
    const target = deployments.match(path);
    if (!target) {
      return errorResponse(404, `no route for ${request.method} ${path}; ${options.hint}`);
    }
    if ("unknown" in target) {
      return errorResponse(
        404,
        `no microservice at ${path}; GET /mcm/v1/containers lists the deployed ones`,
      );
    }
    try {
      const answer = await target.runtime.forward(request, target.path + search, options.port());
      // A microservice's own CORS answer is kept; otherwise it is the node's, file headers
      // exposed (a microservice may serve files with ranges).
      if (!answer.headers.has("access-control-allow-origin")) {
        for (const [name, value] of Object.entries(CORS_FILE_HEADERS)) {
          answer.headers.set(name, value);
        }
      }
      return answer;
    } catch (error) {
      return responseForError(error, request);
    }
  };
}
