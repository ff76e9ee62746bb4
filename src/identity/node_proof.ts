/**
 * Proof of identity between nodes. A node id is the first 28 bytes of SHA-256 of the node's
 * Ed25519 public key, so a JWS that carries the key, signs a fresh challenge and names the id is
 * enough to trust what it says: no registry of keys is needed. spec/mds.yaml has the format.
 * Discovery asks peers for proofs (src/discovery/peer_proof.ts), the hub asks nodes; both verify
 * here, and the node signs with its key here (Identity.proof).
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { CompactSign, compactVerify, EmbeddedJWK, type JWK } from "jose";
import * as v from "valibot";
import { type NodeDescription, NodeProofPayloadSchema } from "../../gen/mds/validators.ts";
import { nodeIdOf } from "./node_key.ts";

/** The JWS `typ` of proofs. */
const PROOF_TYPE = "edgenode-proof";

/** Signs a proof: the challenge and this node's description, with the public key embedded. */
export async function signProof(
  privateKey: CryptoKey,
  publicJwk: JWK,
  challenge: string,
  node: NodeDescription,
): Promise<string> {
  const payload = { challenge, iat: Math.floor(Date.now() / 1000), node };
  const { kty, crv, x } = publicJwk;
  return await new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ alg: "EdDSA", typ: PROOF_TYPE, jwk: { kty, crv, x } })
    .sign(privateKey);
}

/** A fresh random challenge (24 bytes, base64url). */
export function newChallenge(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString("base64url");
}

/** Why a peer was not accepted. */
export class ProofError extends Error {
  override name = "ProofError";
}

/**
 * Opens a compact JWS of `type` signed by the Ed25519 key it carries (node proofs and node
 * requests): its JSON payload, and the id of the node that key names, for the caller to compare
 * with the node the payload claims. ProofError otherwise; `what` names the JWS in messages.
 */
export async function openNodeSigned(
  token: string,
  type: string,
  what: string,
): Promise<{ payload: unknown; signer: string }> {
  let bytes: Uint8Array;
  let jwk: JWK;
  try {
    const verified = await compactVerify(token, EmbeddedJWK, { algorithms: ["EdDSA"] });
    if (verified.protectedHeader.typ !== type) {
      throw new ProofError(`not a ${what.replace(/^the /, "")}`);
    }
    bytes = verified.payload;
    jwk = verified.protectedHeader.jwk!;
  } catch (error) {
    if (error instanceof ProofError) throw error;
    throw new ProofError(`${what} does not verify: ${(error as Error).message}`);
  }
  let payload: unknown;
  try {
    payload = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new ProofError(`${what}'s payload is not JSON`);
  }
  if (jwk.kty !== "OKP" || jwk.crv !== "Ed25519" || typeof jwk.x !== "string") {
    throw new ProofError(`${what}'s key is not Ed25519`);
  }
  return { payload, signer: await nodeIdOf(jwk) };
}

/**
 * Verifies a proof against the challenge sent and, when given, the id the peer claimed.
 * Returns the peer's signed description.
 */
export async function verifyProof(
  proof: string,
  challenge: string,
  claimedId?: string,
): Promise<NodeDescription> {
  const { payload: parsed, signer } = await openNodeSigned(proof, PROOF_TYPE, "the node proof");
  const payload = v.safeParse(NodeProofPayloadSchema, parsed);
  if (!payload.success) {
    throw new ProofError(`the proof's payload is malformed: ${payload.issues[0].message}`);
  }
  const { node } = payload.output;
  if (payload.output.challenge !== challenge) {
    throw new ProofError("the proof is for another challenge");
  }
  if (signer !== node.id) {
    throw new ProofError(`the proof's key does not belong to node ${node.id}`);
  }
  if (claimedId !== undefined && node.id !== claimedId) {
    throw new ProofError(`the node at that address is ${node.id}, not ${claimedId}`);
  }
  return node;
}
