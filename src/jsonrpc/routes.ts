/**
 * The node's JSON-RPC interface (spec/jsonrpc.yaml) at POST /jsonrpc/v1, and the public key of
 * its id tokens at GET /jsonrpc/v1/jwks.
 *
 * @module
 */
import { jsonrpcMethods } from "../../gen/jsonrpc/methods.ts";
import { jsonResponse } from "../http/errors.ts";
import { requireContentType } from "../http/input.ts";
import type { Pipeline } from "../http/pipeline.ts";
import type { Identity } from "../identity/identity.ts";
import { jsonRpcEndpoint, preparedResult } from "./dispatcher.ts";
import { jsonRpcErrorOf } from "./error_codes.ts";

/** The path of the endpoint. */
export const JSONRPC_PATH = "/jsonrpc/v1";

/**
 * Media types a request may name (or none): JSON's own and those JSON-RPC clients send for JSON
 * text in the wild (`curl -d`'s form type, text/plain of Bitcoin-style clients). A binary or
 * multipart body is refused with 415 before it is read.
 */
export const JSONRPC_CONTENT_TYPES = [
  "application/json",
  "application/json-rpc",
  "application/jsonrequest",
  "text/plain",
  "application/x-www-form-urlencoded",
];

/** Who this node is, as getMe answers: one prepared object until a value of it changes. */
function me(identity: Identity): () => Me {
  let answer: Me | undefined;
  return () => {
    const { nodeId, accountId, name, version } = identity;
    if (
      answer?.nodeId !== nodeId || answer.accountId !== accountId || answer.name !== name ||
      answer.version !== version
    ) {
      answer = preparedResult({ nodeId, accountId, name, version });
    }
    return answer;
  };
}

type Me = { nodeId: string; accountId: string; name: string; version: string };

/** Registers the JSON-RPC routes for this identity. */
export function mountJsonRpc(pipeline: Pipeline, identity: Identity): void {
  const endpoint = jsonRpcEndpoint(jsonrpcMethods, {
    getMe: me(identity),
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
  }, jsonRpcErrorOf);
  // Both local only: identity and account association are not for callers through the hub.
  pipeline.route(
    "POST",
    JSONRPC_PATH,
    ({ request }) => {
      if (request.headers.has("content-type")) requireContentType(request, JSONRPC_CONTENT_TYPES);
      return endpoint(request);
    },
    { local: true },
  );
  pipeline.route(
    "GET",
    `${JSONRPC_PATH}/jwks`,
    () => jsonResponse(identity.jwks()),
    { local: true },
  );
}
