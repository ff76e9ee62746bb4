/**
 * The insight service (spec/insight.yaml): the stored account token, information on this node
 * and its supernode, and node listings. Link-local discovery supplies the local network; the
 * hub will supply account and proximity listings.
 *
 * @module
 */
import { insightRoutes } from "../../gen/insight/routes.ts";
import type { LinkLocal } from "../discovery/link_local.ts";
import { type ErrorFormat, HttpError, jsonResponse } from "../http/errors.ts";
import type { Handlers } from "../http/routes.ts";
import type { Identity } from "../identity/identity.ts";
import { TokenError } from "../identity/token_verifier.ts";
import { insightNode } from "../mds/listing.ts";

export { insightRoutes };

/** The spec's error shape for this service: `{ message, statusCode }`. */
export const insightError: ErrorFormat = (status, message, headers) =>
  jsonResponse({ message, statusCode: status }, status, headers);

const INFO_TYPES = ["self", "supernode", "bep", "sep"] as const;

/** 403 unless an unexpired account token is stored (the spec's account-scoped operations). */
function requireStoredToken(identity: Identity, what: string): void {
  const state = identity.tokenState();
  if (state !== "stored") {
    throw new HttpError(
      403,
      `${what} needs a stored account token, and it is ${state}: PUT /token with a valid one`,
    );
  }
}

/** The handlers of every insight operation. */
export function insightHandlers(
  identity: Identity,
  linkLocal: LinkLocal,
): Handlers<typeof insightRoutes> {
  return {
    putToken: async ({ body }) => {
      try {
        await identity.storeToken(body.token, body.expiresAt);
      } catch (error) {
        if (error instanceof TokenError) throw new HttpError(400, error.message);
        throw error;
      }
      return jsonResponse({ status: "ok" });
    },
    getInfo: ({ query }) => {
      const types = query.types.split(",").map((type) => type.trim());
      for (const [i, type] of types.entries()) {
        if (!(INFO_TYPES as readonly string[]).includes(type)) {
          throw new HttpError(400, `unknown type '${type}': use ${INFO_TYPES.join(", ")}`);
        }
        if (types.indexOf(type) !== i) throw new HttpError(400, `type '${type}' is repeated`);
      }
      const relayed = types.filter((type) => type === "bep" || type === "sep");
      if (relayed.length > 0) {
        requireStoredToken(identity, relayed.join(" and "));
        throw new HttpError(501, `${relayed.join(" and ")} need the hub, which is not built yet`);
      }
      const data: Record<string, unknown> = {};
      for (const type of types) {
        if (type === "self") data.self = insightNode(linkLocal.self());
        if (type === "supernode") {
          const { id, name, addresses } = linkLocal.supernode();
          data.supernode = { id, name, addresses };
        }
      }
      return jsonResponse({ data });
    },
    listNodes: ({ query }) => {
      if (query.type === "linkLocal") {
        return jsonResponse({ data: linkLocal.members().map(insightNode) });
      }
      requireStoredToken(identity, `type=${query.type}`);
      throw new HttpError(
        503,
        `type=${query.type} needs a hub, and none is configured; linkLocal works without one`,
      );
    },
  };
}
