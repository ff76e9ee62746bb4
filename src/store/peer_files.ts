/**
 * The serving side of model transfers between nodes (GET /files/{sha256}, spec/store.yaml): a
 * node serves its model files to the nodes of its own account only, checked by accountPeer (a
 * request signed by the sending node's key; a verified LAN member of the account, or the hub's
 * word for a request through its tunnel), and to nobody when `inference.mesh` is off.
 *
 * @module
 */
import { Forbidden, NotFound } from "../errors/mod.ts";
import type { FileToServe } from "../http/file_response.ts";
import type { RequestContext } from "../http/pipeline.ts";
import { accountPeer, type PeerCheck } from "../identity/account_peer.ts";
import { NODE_REQUEST_HEADER } from "../identity/node_request.ts";
import type { ModelRegistry } from "./registry.ts";

/** What serving files to peers needs of the node. */
export interface PeerFilesDeps {
  /** `inference.mesh`. */
  mesh(): "off" | "lan" | "account";
  /** This node and what it verified of its LAN peers. */
  peers: PeerCheck;
}

/**
 * The id of the node of this account that sent the request; 401 without any credential, 403
 * for any other caller (an API key or a token grants nothing here), and 403 when the mesh is
 * off (or `lan` and the request came through the hub).
 */
export async function authorizePeer(
  deps: PeerFilesDeps | undefined,
  context: RequestContext,
): Promise<string> {
  if (!deps) throw new Forbidden("this node serves no other node");
  const signature = context.request.headers.get(NODE_REQUEST_HEADER);
  if (signature === null && context.request.headers.has("authorization")) {
    throw new Forbidden("only a node's signed request (x-edge-node-request) reaches this route");
  }
  const mesh = deps.mesh();
  if (mesh === "off") {
    throw new Forbidden("this node serves no other node (inference.mesh is off)");
  }
  if (context.hubAccount !== undefined && mesh !== "account") {
    throw new Forbidden("this node serves the nodes of its LAN only (inference.mesh is lan)");
  }
  return await accountPeer(deps.peers, {
    method: context.request.method,
    path: context.path + context.search,
    signature,
    hubAccount: context.hubAccount,
  });
}

/** The ready model file whose sha256 is `sha256`; 404 when this node holds none. */
export function fileBySha256(
  registry: Pick<ModelRegistry, "list" | "mediaFile">,
  sha256: string,
): FileToServe {
  const model = registry.list({ ready: true }).find((m) => m.sha256 === sha256);
  if (!model) {
    throw new NotFound(`this node holds no model file with sha256 ${sha256}`, {
      resource: "model file",
      id: sha256,
    });
  }
  return registry.mediaFile(model.id, "model");
}
