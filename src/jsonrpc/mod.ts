/**
 * The JSON-RPC endpoint (spec/jsonrpc.yaml): the dispatcher bound to the generated method table, the
 * account methods over the node's identity, and the table from domain errors to JSON-RPC codes.
 *
 * @module
 */
export * from "./routes.ts";
export * from "./service.ts";
