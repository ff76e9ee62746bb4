/**
 * The HTTP handlers of /mcm/v1 (spec/mcm.yaml), over the Images and Deployments services.
 *
 * @module
 */
import { mcmRoutes } from "../../gen/mcm/routes.ts";
import type { StartContainerRequest } from "../../gen/mcm/validators.ts";
import { jsonResponse } from "../http/errors.ts";
import type { Handlers } from "../http/routes.ts";
import type { Identity } from "../identity/identity.ts";
import { authorizeCaller, type Caller } from "./caller.ts";
import type { Deployments } from "./deployments.ts";
import type { Images } from "./images.ts";

export { mcmRoutes };

/** The callers of requests that passed `authorize`. */
const callers = new WeakMap<Request, Caller>();

/** The mount option that checks the credentials of every /mcm/v1 request. */
export function mcmAuthorizer(deploymentKey: string, identity: Identity) {
  return async (request: Request): Promise<void> => {
    callers.set(request, await authorizeCaller(request, deploymentKey, identity));
  };
}

function callerOf(request: Request): Caller {
  const caller = callers.get(request);
  if (!caller) throw new Error("mcm routes must be mounted with mcmAuthorizer");
  return caller;
}

/** One handler per operation of spec/mcm.yaml. */
export function mcmHandlers(images: Images, deployments: Deployments): Handlers<typeof mcmRoutes> {
  // Shared by /containers and its alias /mims.
  const start = async (input: { request: Request; body: StartContainerRequest }) => {
    const { container, created } = await deployments.start(callerOf(input.request), input.body);
    return jsonResponse(container, created ? 201 : 200);
  };
  const list = ({ request }: { request: Request }) =>
    jsonResponse({ data: deployments.list(callerOf(request)) });
  const remove = async (
    input: { request: Request; params: { id: string }; query: { purge?: boolean } },
  ) =>
    jsonResponse(
      await deployments.delete(
        callerOf(input.request),
        input.params.id,
        input.query.purge === true,
      ),
    );
  return {
    listImages: ({ request }) => jsonResponse({ data: images.list(callerOf(request)) }),
    uploadImage: async ({ request, query }) =>
      jsonResponse(await images.upload(callerOf(request), request, query.name), 201),
    deleteImage: async ({ request, params }) =>
      jsonResponse(await images.delete(callerOf(request), params.id)),
    startContainer: start,
    listContainers: list,
    getContainer: ({ request, params }) =>
      jsonResponse(deployments.get(callerOf(request), params.id)),
    deleteContainer: remove,
    containerLogs: ({ request, params }) =>
      jsonResponse({ data: deployments.logs(callerOf(request), params.id) }),
    startMim: start,
    listMims: list,
    deleteMim: remove,
  };
}
