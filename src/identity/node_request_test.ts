import assert from "node:assert/strict";
import { CompactSign } from "jose";
import { freshNodeKey, proofRefusal } from "../../testing/node_keys.ts";
import { signNodeRequest, verifyNodeRequest } from "./node_request.ts";

Deno.test("a node request verifies to its sender, for that node, method, path and minute only", async () => {
  const a = await freshNodeKey();
  const b = await freshNodeKey();
  const path = "/v1/chat/completions";
  const signed = await signNodeRequest(a.privateKey, a.publicJwk, {
    from: a.id,
    to: b.id,
    method: "post",
    path,
  });
  assert.equal(await verifyNodeRequest(signed, { to: b.id, method: "POST", path }), a.id);
  assert.match(
    await proofRefusal(verifyNodeRequest(signed, { to: a.id, method: "POST", path })),
    /is for node/,
  );
  assert.match(
    await proofRefusal(verifyNodeRequest(signed, { to: b.id, method: "GET", path })),
    /another method or path/,
  );
  assert.match(
    await proofRefusal(
      verifyNodeRequest(signed, { to: b.id, method: "POST", path: "/v1/embeddings" }),
    ),
    /another method or path/,
  );
  assert.match(
    await proofRefusal(
      verifyNodeRequest(signed, { to: b.id, method: "POST", path }, Date.now() + 61_000),
    ),
    /too old/,
  );
});

Deno.test("a node request whose key is not its sender's, or that is a proof, is refused", async () => {
  const a = await freshNodeKey();
  const b = await freshNodeKey();
  const path = "/p";
  // Signed with A's key, claiming to be B.
  const forged = await signNodeRequest(a.privateKey, a.publicJwk, {
    from: b.id,
    to: a.id,
    method: "GET",
    path,
  });
  assert.match(
    await proofRefusal(verifyNodeRequest(forged, { to: a.id, method: "GET", path })),
    /does not belong to node/,
  );
  const payload = { from: a.id, to: b.id, method: "GET", path, at: Date.now() };
  const { kty, crv, x } = a.publicJwk;
  const proofTyped = await new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ alg: "EdDSA", typ: "edgenode-proof", jwk: { kty, crv, x } })
    .sign(a.privateKey);
  assert.match(
    await proofRefusal(verifyNodeRequest(proofTyped, { to: b.id, method: "GET", path })),
    /not a node request/,
  );
  assert.match(
    await proofRefusal(verifyNodeRequest("a.b.c", { to: b.id, method: "GET", path })),
    /does not verify/,
  );
});
