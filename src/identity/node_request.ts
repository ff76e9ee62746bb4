/**
 * A request one node sends another on its own behalf (a chat routed to the node that can answer
 * it, a model file fetched from a peer: issue 37), signed with the sending node's key: the
 * header `x-edge-node-request` holds a compact JWS (EdDSA, the public key embedded, as node
 * proofs) over who sends it, to whom, which method and path, and when.
 *
 * Why a signature and not the account's token: on a LAN a peer's account is its own signed
 * claim, and a bearer token handed to a peer that only claims our account could be replayed at
 * the hub with the account's rights. A signature proves which node asks and is worth nothing for
 * another node, another method or path, or after a minute (MAX_SKEW_MS either way, for clocks
 * that are not quite in step). Within that minute someone who sees it (plain HTTP on a LAN) may
 * send it again to the same node and path, with any body: it does not sign the body. That buys
 * no more than the LAN's trust already gives (a peer is believed when it claims the account), and
 * the work it causes is counted against the signing node. Whether that node may ask (its account)
 * is the receiver's decision, from what it verified of the sender (discovery's proof, or the
 * hub's word for a tunnelled request).
 *
 * @module
 */
import { CompactSign, type JWK } from "jose";
import * as v from "valibot";
import { openNodeSigned, ProofError } from "./node_proof.ts";

/** The header that carries the signature. */
export const NODE_REQUEST_HEADER = "x-edge-node-request";

/** The JWS `typ` of node requests (never accepted as a proof, nor a proof as one). */
const REQUEST_TYPE = "edgenode-node-request";

/** How far a request's time may be from the receiver's clock. */
const MAX_SKEW_MS = 60_000;

/** What a node request signs. */
export interface NodeRequestClaims {
  /** The sending node's id. */
  from: string;
  /** The node it is for. */
  to: string;
  method: string;
  /** The path and query, as the receiver sees them. */
  path: string;
}

const PayloadSchema = v.strictObject({
  from: v.pipe(v.string(), v.regex(/^[0-9a-f]{56}$/)),
  to: v.pipe(v.string(), v.regex(/^[0-9a-f]{56}$/)),
  method: v.pipe(v.string(), v.maxLength(16)),
  path: v.pipe(v.string(), v.maxLength(8192)),
  at: v.pipe(v.number(), v.safeInteger()),
});

/** Signs `claims` with the node's key (`privateKey`, its public half `publicJwk`). */
export async function signNodeRequest(
  privateKey: CryptoKey,
  publicJwk: JWK,
  claims: NodeRequestClaims,
): Promise<string> {
  const payload = { ...claims, method: claims.method.toUpperCase(), at: Date.now() };
  const { kty, crv, x } = publicJwk;
  return await new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ alg: "EdDSA", typ: REQUEST_TYPE, jwk: { kty, crv, x } })
    .sign(privateKey);
}

/**
 * The id of the node that signed `signature` for this request (to `self`, `method`, `path`,
 * within a minute of now); ProofError when it is not a valid one.
 */
export async function verifyNodeRequest(
  signature: string,
  expected: { to: string; method: string; path: string },
  now = Date.now(),
): Promise<string> {
  const { payload: parsed, signer } = await openNodeSigned(
    signature,
    REQUEST_TYPE,
    "the node request",
  );
  const payload = v.safeParse(PayloadSchema, parsed);
  if (!payload.success) throw new ProofError("the node request's payload is malformed");
  const claims = payload.output;
  if (claims.to !== expected.to) throw new ProofError(`the node request is for node ${claims.to}`);
  if (claims.method !== expected.method.toUpperCase() || claims.path !== expected.path) {
    throw new ProofError("the node request was signed for another method or path");
  }
  if (Math.abs(now - claims.at) > MAX_SKEW_MS) {
    throw new ProofError("the node request is too old (or the clocks are more than 60 s apart)");
  }
  if (signer !== claims.from) {
    throw new ProofError(`the node request's key does not belong to node ${claims.from}`);
  }
  return claims.from;
}
