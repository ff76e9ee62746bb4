import assert from "node:assert/strict";
import { CompactSign, exportJWK } from "jose";
import type { NodeDescription } from "../../gen/mds/validators.ts";
import { nodeIdOf } from "./node_key.ts";
import { newChallenge, ProofError, signProof, verifyProof } from "./node_proof.ts";

/** A node key, and a description of the node it names. */
async function node(name = "pi3") {
  const { publicKey, privateKey } = await crypto.subtle.generateKey("Ed25519", true, [
    "sign",
    "verify",
  ]) as CryptoKeyPair;
  const publicJwk = await exportJWK(publicKey);
  const description: NodeDescription = {
    id: await nodeIdOf(publicJwk),
    accountId: "acct-1",
    name,
    os: "linux",
    version: "0.1.0",
    addresses: [{ type: "local", url: { href: "http://192.168.1.20:8083" } }],
    services: [],
    characteristics: [],
    startedAt: 1_800_000_000_000,
    localLinkNetworkId: "lln-0f",
  };
  return { privateKey, publicJwk, description };
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(() => undefined, (e) => e);
  assert.ok(error instanceof ProofError, `refused with a ProofError, not ${error}`);
  return error.message;
}

Deno.test("a proof signed over a challenge verifies to the node's description", async () => {
  const { privateKey, publicJwk, description } = await node();
  const challenge = newChallenge();
  assert.match(challenge, /^[A-Za-z0-9_-]{32}$/);
  const proof = await signProof(privateKey, publicJwk, challenge, description);
  assert.deepEqual(await verifyProof(proof, challenge), description);
  assert.deepEqual(await verifyProof(proof, challenge, description.id), description);
});

Deno.test("a proof for another challenge, or from another id than claimed, is refused", async () => {
  const { privateKey, publicJwk, description } = await node();
  const proof = await signProof(privateKey, publicJwk, "c1", description);
  assert.match(await refusal(verifyProof(proof, "c2")), /another challenge/);
  assert.match(await refusal(verifyProof(proof, "c1", "f".repeat(56))), /not f{56}/);
});

Deno.test("a proof that names another node's id than its key's is refused", async () => {
  const { privateKey, publicJwk } = await node();
  const other = await node("other");
  const proof = await signProof(privateKey, publicJwk, "c1", other.description);
  assert.match(await refusal(verifyProof(proof, "c1")), /does not belong to node/);
});

Deno.test("a JWS that is not a node proof, or not a JWS, is refused", async () => {
  const { privateKey, publicJwk, description } = await node();
  const { kty, crv, x } = publicJwk;
  const payload = new TextEncoder().encode(
    JSON.stringify({ challenge: "c1", iat: 0, node: description }),
  );
  const token = await new CompactSign(payload)
    .setProtectedHeader({ alg: "EdDSA", typ: "JWT", jwk: { kty, crv, x } })
    .sign(privateKey);
  assert.match(await refusal(verifyProof(token, "c1")), /not a node proof/);
  assert.match(await refusal(verifyProof("not.a.jws", "c1")), /does not verify/);
});
