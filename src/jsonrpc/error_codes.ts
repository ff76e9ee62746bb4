/**
 * The one table from domain errors to JSON-RPC error codes. Token problems keep the codes of
 * spec/jsonrpc.yaml; invalid input is JSON-RPC's own invalid params; other kinds get codes of the
 * implementation-defined server error range (-32000 to -32099) that spec/jsonrpc.yaml lists.
 *
 * @module
 */
import { JSONRPCErrorException } from "json-rpc-2.0";
import { jsonrpcErrors } from "../../gen/jsonrpc/methods.ts";
import { DomainError, type ErrorKind } from "../errors/mod.ts";
import { TokenError } from "../identity/token_verifier.ts";

/** JSON-RPC's invalid params error. */
export const INVALID_PARAMS = -32602;

/** The JSON-RPC code of each kind of domain error that is not a token problem. */
export const JSONRPC_CODE_OF: Readonly<Record<ErrorKind, number>> = {
  invalid: INVALID_PARAMS,
  unauthenticated: jsonrpcErrors.InvalidToken.code,
  forbidden: jsonrpcErrors.InvalidToken.code,
  not_found: -32010,
  conflict: -32011,
  too_large: INVALID_PARAMS,
  unsupported_type: INVALID_PARAMS,
  range_not_satisfiable: INVALID_PARAMS,
  unprocessable: INVALID_PARAMS,
  cancelled: -32012,
  upstream_failed: -32013,
  unavailable: -32014,
  upstream_timeout: -32013,
  no_space: -32015,
  no_memory: -32016,
  too_many: -32017,
};

/** The JSON-RPC error for a thrown error; undefined leaves it to the dispatcher (internal). */
export function jsonRpcErrorOf(error: unknown): JSONRPCErrorException | undefined {
  if (error instanceof TokenError) {
    return new JSONRPCErrorException(error.message, jsonrpcErrors[error.problem].code);
  }
  if (error instanceof DomainError) {
    return new JSONRPCErrorException(error.message, JSONRPC_CODE_OF[error.kind]);
  }
  if (error instanceof RangeError) return new JSONRPCErrorException(error.message, INVALID_PARAMS);
  return undefined;
}
