/**
 * Proof of identity between nodes. A node id is the first 28 bytes of SHA-256 of the node's
 * Ed25519 public key, so a JWS that carries the key, signs a fresh challenge and names the id is
 * enough to trust what it says: no registry of keys is needed. spec/mds.yaml has the format.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { CompactSign, compactVerify, EmbeddedJWK, type JWK } from "jose";
import * as v from "valibot";
import {
  type NodeDescription,
  NodeProofPayloadSchema,
  PingAnswerSchema,
} from "../../gen/mds/validators.ts";
import { readText } from "../http/input.ts";
import { nodeIdOf } from "../identity/node_key.ts";

/** The JWS `typ` of proofs. */
const PROOF_TYPE = "edgenode-proof";

/** A proof with 1024 services fits easily; anything larger is not a node. */
const MAX_ANSWER_BYTES = 512 * 1024;

/** How long a peer has to answer a check. */
const CHECK_TIMEOUT_MS = 3000;

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
 * Verifies a proof against the challenge sent and, when given, the id the peer claimed.
 * Returns the peer's signed description.
 */
export async function verifyProof(
  proof: string,
  challenge: string,
  claimedId?: string,
): Promise<NodeDescription> {
  let payloadBytes: Uint8Array;
  let jwk: JWK;
  try {
    const verified = await compactVerify(proof, EmbeddedJWK, { algorithms: ["EdDSA"] });
    if (verified.protectedHeader.typ !== PROOF_TYPE) throw new ProofError("not a node proof");
    payloadBytes = verified.payload;
    jwk = verified.protectedHeader.jwk!;
  } catch (error) {
    if (error instanceof ProofError) throw error;
    throw new ProofError(`the proof does not verify: ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(payloadBytes));
  } catch {
    throw new ProofError("the proof's payload is not JSON");
  }
  const payload = v.safeParse(NodeProofPayloadSchema, parsed);
  if (!payload.success) {
    throw new ProofError(`the proof's payload is malformed: ${payload.issues[0].message}`);
  }
  const { node } = payload.output;
  if (payload.output.challenge !== challenge) {
    throw new ProofError("the proof is for another challenge");
  }
  if (jwk.kty !== "OKP" || jwk.crv !== "Ed25519" || typeof jwk.x !== "string") {
    throw new ProofError("the proof's key is not Ed25519");
  }
  if ((await nodeIdOf(jwk)) !== node.id) {
    throw new ProofError(`the proof's key does not belong to node ${node.id}`);
  }
  if (claimedId !== undefined && node.id !== claimedId) {
    throw new ProofError(`the node at that address is ${node.id}, not ${claimedId}`);
  }
  return node;
}

/**
 * Asks the node at `baseUrl` to prove who it is (GET /mds/v1/nodes?ping=true&challenge=...) and
 * returns its verified description. Throws ProofError (or a network error) otherwise.
 */
export async function checkPeer(baseUrl: string, claimedId?: string): Promise<NodeDescription> {
  const challenge = newChallenge();
  const url = new URL("/mds/v1/nodes", baseUrl);
  url.searchParams.set("ping", "true");
  url.searchParams.set("challenge", challenge);
  const response = await fetch(url, {
    signal: AbortSignal.timeout(CHECK_TIMEOUT_MS),
    redirect: "error",
    // A compressed answer would be counted after inflating; a peer has no reason to compress.
    headers: { "Accept-Encoding": "identity" },
  });
  if (!response.ok) {
    await response.body?.cancel();
    throw new ProofError(`${url.host} answered ${response.status}`);
  }
  const text = await readText(response, MAX_ANSWER_BYTES, "the answer").catch(() => {
    throw new ProofError(`${url.host} sent more than ${MAX_ANSWER_BYTES} bytes`);
  });
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ProofError(`${url.host} did not answer JSON`);
  }
  const answer = v.safeParse(PingAnswerSchema, body);
  if (!answer.success || !answer.output.data.proof) {
    throw new ProofError(`${url.host} sent no proof`);
  }
  return await verifyProof(answer.output.data.proof, challenge, claimedId);
}
