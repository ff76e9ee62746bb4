/**
 * The edgenode SDK: typed clients of a node's services, built on the same specs as the node.
 *
 * ```ts
 * import { rpcCall, storeClient } from "@edgenode/edgenode/sdk";
 * const node = { url: "http://127.0.0.1:8083", credential: Deno.env.get("EDGENODE_API_KEY") };
 * const { data } = await storeClient(node).GET("/models");
 * const me = await rpcCall(node, "getMe");
 * ```
 *
 * @module
 */
export {
  dashboardClient,
  insightClient,
  mcmClient,
  mdsClient,
  type NodeConnection,
  PREFIXES,
  storeClient,
} from "./clients.ts";
export { downloadEvents, type DownloadMessage } from "./download_events.ts";
export { rpcCall, RpcError, type RpcMethod, type RpcResult } from "./json_rpc.ts";
export { decryptNodeListing, fetchLocalNodes } from "./local_nodes.ts";
export { ensureModel, followDownload, NodeError } from "./models.ts";
export { humanBytes } from "./human_units.ts";
