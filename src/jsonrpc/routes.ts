/**
 * The node's JSON-RPC interface (spec/jsonrpc.yaml) at POST /jsonrpc/v1, and the public key of
 * its id tokens at GET /jsonrpc/v1/jwks.
 *
 * @module
 */
import type { RouterType } from "itty-router";
import { JSONRPCErrorException } from "json-rpc-2.0";
import { jsonrpcErrors, jsonrpcMethods } from "../../gen/jsonrpc/methods.ts";
import { jsonResponse } from "../http/errors.ts";
import type { Identity } from "../identity/identity.ts";
import { TokenError } from "../identity/token_verifier.ts";
import { INVALID_PARAMS, jsonRpcEndpoint } from "./dispatcher.ts";

/** The path of the endpoint. */
export const JSONRPC_PATH = "/jsonrpc/v1";

function mapError(error: unknown): JSONRPCErrorException | undefined {
  if (error instanceof TokenError) {
    return new JSONRPCErrorException(error.message, jsonrpcErrors[error.problem].code);
  }
  if (error instanceof RangeError) return new JSONRPCErrorException(error.message, INVALID_PARAMS);
  return undefined;
}

/** Registers the JSON-RPC routes for this identity. */
export function mountJsonRpc(router: RouterType, identity: Identity): void {
  const endpoint = jsonRpcEndpoint(jsonrpcMethods, {
    getMe: () => ({
      nodeId: identity.nodeId,
      accountId: identity.accountId,
      name: identity.name,
      version: identity.version,
    }),
    getEdgeIdToken: async () => ({ id_token: await identity.idToken() }),
    associateAccount: async ({ edgeAccessToken }) => ({
      accountId: await identity.associate(edgeAccessToken),
    }),
    unassociateAccount: async ({ edgeAccessToken }) => ({
      accountId: await identity.unassociate(edgeAccessToken),
    }),
    updateGps: async ({ edgeAccessToken, longitude, latitude, speed, bearing }) => {
      await identity.updateGps(edgeAccessToken, {
        longitude: Number(longitude),
        latitude: Number(latitude),
        speed: Number(speed),
        bearing: Number(bearing),
      });
      return { status: "ok" as const };
    },
  }, mapError);
  router.post(JSONRPC_PATH, endpoint);
  router.get(`${JSONRPC_PATH}/jwks`, () => jsonResponse(identity.jwks()));
}
