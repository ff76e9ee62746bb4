import assert from "node:assert/strict";
import { CompactSign, exportJWK } from "jose";
import { nodeIdOf } from "./node_key.ts";
import { ProofError } from "./node_proof.ts";
import { signNodeRequest, verifyNodeRequest } from "./node_request.ts";

async function key() {
  const { publicKey, privateKey } = await crypto.subtle.generateKey("Ed25519", true, [
    "sign",
    "verify",
  ]) as CryptoKeyPair;
  const publicJwk = await exportJWK(publicKey);
  return { privateKey, publicJwk, id: await nodeIdOf(publicJwk) };
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(() => undefined, (e) => e);
  assert.ok(error instanceof ProofError, `refused with a ProofError, not ${error}`);
  return error.message;
}

Deno.test("a node request verifies to its sender, for that node, method, path and minute only", async () => {
  const a = await key();
  const b = await key();
  const path = "/v1/chat/completions";
  const signed = await signNodeRequest(a.privateKey, a.publicJwk, {
    from: a.id,
    to: b.id,
    method: "post",
    path,
  });
  assert.equal(await verifyNodeRequest(signed, { to: b.id, method: "POST", path }), a.id);
  assert.match(
    await refusal(verifyNodeRequest(signed, { to: a.id, method: "POST", path })),
    /is for node/,
  );
  assert.match(
    await refusal(verifyNodeRequest(signed, { to: b.id, method: "GET", path })),
    /another method or path/,
  );
  assert.match(
    await refusal(verifyNodeRequest(signed, { to: b.id, method: "POST", path: "/v1/embeddings" })),
    /another method or path/,
  );
  assert.match(
    await refusal(
      verifyNodeRequest(signed, { to: b.id, method: "POST", path }, Date.now() + 61_000),
    ),
    /too old/,
  );
});

Deno.test("a node request whose key is not its sender's, or that is a proof, is refused", async () => {
  const a = await key();
  const b = await key();
  const path = "/p";
  // Signed with A's key, claiming to be B.
  const forged = await signNodeRequest(a.privateKey, a.publicJwk, {
    from: b.id,
    to: a.id,
    method: "GET",
    path,
  });
  assert.match(
    await refusal(verifyNodeRequest(forged, { to: a.id, method: "GET", path })),
    /does not belong to node/,
  );
  const payload = { from: a.id, to: b.id, method: "GET", path, at: Date.now() };
  const { kty, crv, x } = a.publicJwk;
  const proofTyped = await new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ alg: "EdDSA", typ: "edgenode-proof", jwk: { kty, crv, x } })
    .sign(a.privateKey);
  assert.match(
    await refusal(verifyNodeRequest(proofTyped, { to: b.id, method: "GET", path })),
    /not a node request/,
  );
  assert.match(
    await refusal(verifyNodeRequest("a.b.c", { to: b.id, method: "GET", path })),
    /does not verify/,
  );
});
