/**
 * A typed client of the node's JSON-RPC interface (spec/jsonrpc.yaml): parameters by the method
 * table, results checked against their schemas.
 *
 * @module
 */
import * as v from "valibot";
import { jsonrpcMethods } from "../../gen/jsonrpc/methods.ts";
import type { NodeConnection } from "./clients.ts";
import { NodeError, nodeFetch, notANode } from "./node_errors.ts";

/**
 * The node's JSON-RPC methods, as spec/jsonrpc.yaml gives them.
 *
 * @internal The type of gen/jsonrpc/methods.ts's method table.
 */
export type RpcMethods = typeof jsonrpcMethods;
/** A JSON-RPC method of the node. */
export type RpcMethod = keyof RpcMethods;
/**
 * The result of a method, as validated.
 *
 * @internal valibot's type of the method's result schema.
 */
export type RpcResult<M extends RpcMethod> = v.InferOutput<RpcMethods[M]["result"]>;

/**
 * An error answer: the JSON-RPC code and the node's message. A NodeError too, of the HTTP
 * status that carried it (200, as JSON-RPC answers its errors), so a client handles both alike.
 */
export class RpcError extends NodeError {
  /** Always "RpcError". */
  override name = "RpcError";
  /** The JSON-RPC error code (the node's application codes, or the protocol's). */
  readonly code: number;

  /** An error of `code` with the node's `message`, in an answer of HTTP `status`. */
  constructor(code: number, message: string, status = 200) {
    super(status, message);
    this.code = code;
  }
}

let nextId = 1;

/**
 * Calls `method` with positional `params`; its result, or RpcError (NodeUnreachableError when
 * the node cannot be reached, NotANodeError when what answers is not a node).
 */
export async function rpcCall<M extends RpcMethod>(
  connection: NodeConnection,
  method: M,
  params: string[] = [],
): Promise<RpcResult<M>> {
  const url = connection.url.replace(/\/$/, "");
  const response = await nodeFetch(url)(`${url}/jsonrpc/v1`, {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      ...(connection.credential ? { Authorization: `Bearer ${connection.credential}` } : {}),
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params }),
  });
  const answer = await response.json().catch(() => undefined) as
    | { result?: unknown; error?: { code: number; message: string } }
    | undefined;
  if (!answer) throw notANode(response, `calling ${method}`);
  if (answer.error) throw new RpcError(answer.error.code, answer.error.message, response.status);
  return v.parse(jsonrpcMethods[method].result, answer.result) as RpcResult<M>;
}
