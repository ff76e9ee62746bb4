/**
 * The HTTP handlers of /mcm/v1 (spec/mcm.yaml), over the Images and Deployments services.
 *
 * @module
 */
import { mcmRoutes } from "../../gen/mcm/routes.ts";
import type { StartContainerRequest } from "../../gen/mcm/validators.ts";
import { jsonResponse } from "../http/errors.ts";
import type { RequestContext } from "../http/pipeline.ts";
import type { Handlers } from "../http/routes.ts";
import type { Identity } from "../identity/identity.ts";
import { authorizeCaller, type Caller } from "./caller.ts";
import type { Deployments } from "./deployments.ts";
import type { Images } from "./images.ts";

export { mcmRoutes };

/** The mount option that checks the credentials of every /mcm/v1 request: its caller. */
export function mcmAuthorizer(
  deploymentKey: string,
  identity: Identity,
): (context: RequestContext) => Promise<Caller> {
  return ({ request }) => authorizeCaller(request, deploymentKey, identity);
}

/** One handler per operation of spec/mcm.yaml. */
export function mcmHandlers(
  images: Images,
  deployments: Deployments,
): Handlers<typeof mcmRoutes, Caller> {
  // Shared by /containers and its alias /mims.
  const start = async (input: { auth: Caller; body: StartContainerRequest }) => {
    const { container, created } = await deployments.start(input.auth, input.body);
    return jsonResponse(container, created ? 201 : 200);
  };
  const list = ({ auth }: { auth: Caller }) => jsonResponse({ data: deployments.list(auth) });
  const remove = async (
    input: { auth: Caller; params: { id: string }; query: { purge?: boolean } },
  ) =>
    jsonResponse(
      await deployments.delete(
        input.auth,
        input.params.id,
        input.query.purge === true,
      ),
    );
  return {
    listImages: ({ auth }) => jsonResponse({ data: images.list(auth) }),
    uploadImage: async ({ auth, request, query }) =>
      jsonResponse(await images.upload(auth, request, query.name), 201),
    deleteImage: async ({ auth, params }) => jsonResponse(await images.delete(auth, params.id)),
    startContainer: start,
    listContainers: list,
    getContainer: ({ auth, params }) => jsonResponse(deployments.get(auth, params.id)),
    deleteContainer: remove,
    containerLogs: ({ auth, params }) => jsonResponse({ data: deployments.logs(auth, params.id) }),
    startMim: start,
    listMims: list,
    deleteMim: remove,
  };
}
