/**
 * Node keys for unit tests of proofs and signed requests: a fresh Ed25519 key pair and the node
 * id it names (src/identity/node_key.ts), and the message of a ProofError a promise fails with.
 *
 * @module
 */
import assert from "node:assert/strict";
import { exportJWK, type JWK } from "jose";
import { nodeIdOf } from "../src/identity/node_key.ts";
import { ProofError } from "../src/identity/node_proof.ts";

/** A fresh node key: its private half, its public JWK and the node id. */
export async function freshNodeKey(): Promise<
  { privateKey: CryptoKey; publicJwk: JWK; id: string }
> {
  const { publicKey, privateKey } = await crypto.subtle.generateKey("Ed25519", true, [
    "sign",
    "verify",
  ]) as CryptoKeyPair;
  const publicJwk = await exportJWK(publicKey);
  return { privateKey, publicJwk, id: await nodeIdOf(publicJwk) };
}

/** The message of the ProofError `promise` fails with (asserting it fails with one). */
export async function proofRefusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(() => undefined, (e) => e);
  assert.ok(error instanceof ProofError, `refused with a ProofError, not ${error}`);
  return error.message;
}
