/**
 * The insight service (spec/insight.yaml): the stored account token, information on this node
 * and its supernode, its hub endpoints, and node listings. Link-local discovery supplies the
 * local network; the hub supplies account and proximity listings and the bep and sep.
 *
 * @module
 */
import { insightRoutes } from "../../gen/insight/routes.ts";
import type { InfoResponse } from "../../gen/insight/validators.ts";
import { requireHub } from "../hub_client/require_hub.ts";
import { Forbidden, Invalid } from "../errors/mod.ts";
import { type ErrorFormat, statusCodeError } from "../http/errors.ts";
import { json } from "../http/reply.ts";
import type { Identity } from "../identity/identity.ts";
import { TokenError } from "../identity/token_verifier.ts";
import { insightNode } from "../mds/listing.ts";
import type { MeshHandlers } from "../mds/mesh_handlers.ts";

export { insightRoutes };

/** The spec's error shape for this service: `{ message, statusCode }`. */
export const insightError: ErrorFormat = statusCodeError;

const INFO_TYPES = ["self", "supernode", "bep", "sep"] as const;

/** 403 unless an unexpired account token is stored (the spec's account-scoped operations). */
function requireStoredToken(identity: Identity, what: string): void {
  const state = identity.tokenState();
  if (state !== "stored") {
    throw new Forbidden(
      `${what} needs a stored account token, and it is ${state}: PUT /token with a valid one`,
    );
  }
}

/** The handlers of every insight operation. */
export const insightHandlers: MeshHandlers<typeof insightRoutes> = (
  identity,
  linkLocal,
  hub,
) => ({
  putToken: async ({ body }) => {
    try {
      await identity.storeToken(body.token, body.expiresAt);
    } catch (error) {
      // A token given as the body is input, not the caller's credential.
      if (error instanceof TokenError) throw new Invalid(error.message);
      throw error;
    }
    return json(200, { status: "ok" as const });
  },
  getInfo: async ({ query }) => {
    const types = query.types.split(",").map((type) => type.trim());
    for (const [i, type] of types.entries()) {
      if (!(INFO_TYPES as readonly string[]).includes(type)) {
        throw new Invalid(`unknown type '${type}': use ${INFO_TYPES.join(", ")}`);
      }
      if (types.indexOf(type) !== i) throw new Invalid(`type '${type}' is repeated`);
    }
    const relayed = types.filter((type) => type === "bep" || type === "sep").join(" and ");
    if (relayed) {
      requireStoredToken(identity, relayed);
      requireHub(hub, relayed);
    }
    const data: InfoResponse["data"] = {};
    for (const type of types) {
      if (type === "bep") data.bep = hub!.bep();
      if (type === "sep") data.sep = await hub!.sep();
      if (type === "self") data.self = insightNode(linkLocal.self());
      if (type === "supernode") {
        const { id, name, addresses } = linkLocal.supernode();
        data.supernode = { id, name, addresses };
      }
    }
    return json(200, { data });
  },
  listNodes: async ({ query }) => {
    if (query.type === "linkLocal") {
      return json(200, { data: linkLocal.members().map(insightNode) });
    }
    requireStoredToken(identity, `type=${query.type}`);
    const nodes = await requireHub(hub, `type=${query.type}`).list(query.type);
    return json(200, { data: nodes.map(insightNode) });
  },
});
