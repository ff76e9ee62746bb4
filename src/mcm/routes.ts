/**
 * The HTTP handlers of /mcm/v1 (spec/mcm.yaml), over the Images and Deployments services.
 *
 * @module
 */
import { mcmRoutes } from "../../gen/mcm/routes.ts";
import type { StartContainerRequest } from "../../gen/mcm/validators.ts";
import { json, raw } from "../http/reply.ts";
import { uploadBody } from "../http/upload_body.ts";
import type { RequestContext } from "../http/pipeline.ts";
import type { Handlers } from "../http/routes.ts";
import type { Identity } from "../identity/identity.ts";
import { authorizeCaller, type Caller } from "./caller.ts";
import type { Deployments } from "./deployments.ts";
import type { Images } from "./images/images.ts";
import { followedLogResponse } from "./log_stream.ts";

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
    return json(created ? 201 : 200, container);
  };
  const list = ({ auth }: { auth: Caller }) => json(200, { data: deployments.list(auth) });
  const remove = async (
    input: { auth: Caller; params: { id: string }; query: { purge?: boolean } },
  ) =>
    json(
      200,
      await deployments.delete(
        input.auth,
        input.params.id,
        input.query.purge === true,
      ),
    );
  // Shared by /containers/{id}/stop|restart and the /mims aliases.
  const stop = async ({ auth, params }: { auth: Caller; params: { id: string } }) =>
    json(200, await deployments.stop(auth, params.id));
  const restart = async ({ auth, params }: { auth: Caller; params: { id: string } }) =>
    json(200, await deployments.restart(auth, params.id));
  return {
    listImages: ({ auth }) => json(200, { data: images.list(auth) }),
    uploadImage: async ({ auth, request, query }) =>
      json(201, await images.upload(auth, await uploadBody(request, "image"), query.name)),
    deleteImage: async ({ auth, params }) => json(200, await images.delete(auth, params.id)),
    startContainer: start,
    listContainers: list,
    getContainer: ({ auth, params }) => json(200, deployments.get(auth, params.id)),
    deleteContainer: remove,
    stopContainer: stop,
    restartContainer: restart,
    stopMim: stop,
    restartMim: restart,
    containerLogs: ({ auth, params, query }) => {
      if (!query.follow) return json(200, { data: deployments.logs(auth, params.id) });
      // Checked before the stream opens: an unknown container is a 404, not an empty stream.
      deployments.get(auth, params.id);
      return raw(
        followedLogResponse(
          (follower) => deployments.followLogs(auth, params.id, follower),
          auth.expiresAt,
        ),
        [200],
      );
    },
    startMim: start,
    listMims: list,
    deleteMim: remove,
  };
}
