/**
 * JSON-RPC as a service of the node (spec/jsonrpc.yaml), at /jsonrpc/v1, for local callers only.
 *
 * @module
 */
import type { Service } from "../http/service.ts";
import type { Identity } from "../identity/identity.ts";
import { JSONRPC_PATH, mountJsonRpc } from "./routes.ts";

/** JSON-RPC's service over this identity. */
export function jsonRpcService(identity: Identity): Service {
  return {
    name: "jsonrpc",
    prefixes: [JSONRPC_PATH],
    hint: `JSON-RPC at ${JSONRPC_PATH}`,
    mount: (pipeline) => mountJsonRpc(pipeline, identity),
  };
}
