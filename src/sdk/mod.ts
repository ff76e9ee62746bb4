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
  type DashboardClient,
  dashboardClient,
  type InsightClient,
  insightClient,
  type McmClient,
  mcmClient,
  type MdsClient,
  mdsClient,
  type NodeConnection,
  PREFIXES,
  type StoreClient,
  storeClient,
} from "./clients.ts";
export { downloadEvents, type DownloadMessage } from "./download_events.ts";
export { installingEngineOf } from "./load_progress.ts";
export { rpcCall, RpcError, type RpcMethod, type RpcMethods, type RpcResult } from "./json_rpc.ts";
export { decryptNodeListing, fetchLocalNodes, type LocalLinkListing } from "./local_nodes.ts";
export {
  type CreateModelRequest,
  type DownloadModelRequest,
  type DownloadProgressMessage,
  ensureModel,
  findModel,
  followDownload,
  type Model,
  pullModel,
} from "./models.ts";
export {
  errorMessage,
  NodeError,
  nodeFetch,
  NodeUnreachableError,
  NotANodeError,
} from "./node_errors.ts";
export { humanBytes } from "./human_units.ts";
