/**
 * GET /mds/v1/nodes (spec/mds.yaml): the encrypted local node listing, and the ping that peers
 * use to check each other.
 *
 * @module
 */
import { mdsRoutes } from "../../gen/mds/routes.ts";
import { requireBearer } from "../http/auth.ts";
import { Invalid } from "../errors/mod.ts";
import { json } from "../http/reply.ts";
import { SCOPES } from "../identity/identity.ts";
import { requireHub } from "../hub_client/require_hub.ts";
import { encryptListing } from "../crypto/listing_crypto.ts";
import { localLinkListing, mdsNode } from "./listing.ts";
import type { MeshHandlers } from "./mesh_handlers.ts";

export { mdsRoutes };

const CLUSTERS = ["linkLocal", "account", "proximity"];

/** The handlers of the mds service. */
export const mdsHandlers: MeshHandlers<typeof mdsRoutes> = (identity, linkLocal, hub) => ({
  // The Request is read only where it is needed: a tunnelled ping is answered without one.
  listNodes: async (input) => {
    const { query } = input;
    if (query.ping) {
      const id = identity.nodeId;
      if (!query.challenge) return json(200, { data: { id } });
      return json(200, {
        data: { id, proof: await identity.proof(query.challenge, linkLocal.self()) },
      });
    }
    if (query.challenge) throw new Invalid("challenge goes with ping=true");
    const clusters = query.clusters;
    if (!clusters) throw new Invalid("pass clusters=linkLocal (or ping=true)");
    if (!CLUSTERS.includes(clusters)) {
      throw new Invalid(`unknown clusters '${clusters}': use ${CLUSTERS.join(", ")}`);
    }
    const token = requireBearer(input.request, "edge access token");
    await identity.checkAccountToken(token, SCOPES.clusters); // TokenError: Forbidden.
    const listing = clusters === "linkLocal" ? localLinkListing(linkLocal) : {
      nodes: (await requireHub(hub, `clusters=${clusters}`).list(clusters as "account"))
        .map((node) => mdsNode(node, [])),
    };
    return json(200, { data: await encryptListing(listing, token, clusters) });
  },
});
