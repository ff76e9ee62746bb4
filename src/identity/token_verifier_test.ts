import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose";
import { TokenError, TokenVerifier } from "./token_verifier.ts";

const T0 = 1_800_000_000;

async function issuer() {
  const { publicKey, privateKey } = await generateKeyPair("EdDSA", { extractable: true });
  const jwk = { ...await exportJWK(publicKey), alg: "EdDSA", kid: "k1" };
  const sign = (claims: JWTPayload) =>
    new SignJWT(claims).setProtectedHeader({ alg: "EdDSA", kid: "k1" }).setIssuer("lab")
      .sign(privateKey);
  return { trusted: [{ issuer: "lab", jwks: { keys: [jwk] } }], sign };
}

/** A verifier whose clock is `clock.now` (Unix seconds). */
async function verifierAt(trusted: Awaited<ReturnType<typeof issuer>>["trusted"]) {
  const clock = { now: T0 };
  const verifier = await TokenVerifier.create("node-a", trusted, { now: () => clock.now });
  return { verifier, clock };
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(() => undefined, (e) => e);
  assert.ok(error instanceof TokenError, `refused with a TokenError, not ${error}`);
  return error.message;
}

Deno.test("a token verified once is still refused once it expires", async () => {
  const { trusted, sign } = await issuer();
  const { verifier, clock } = await verifierAt(trusted);
  const token = await sign({ sub: "acct", scope: "edge:clusters", iat: T0, exp: T0 + 60 });
  assert.equal((await verifier.verify(token, "edge:clusters")).accountId, "acct");
  clock.now = T0 + 60 + 20; // within the 30 s of clock skew: still good
  assert.equal((await verifier.verify(token, "edge:clusters")).accountId, "acct");
  clock.now = T0 + 60 + 31;
  assert.match(await refusal(verifier.verify(token, "edge:clusters")), /expired/);
});

Deno.test("a remembered token is still checked for its scope and its node at every use", async () => {
  const { trusted, sign } = await issuer();
  const { verifier } = await verifierAt(trusted);
  const token = await sign({
    sub: "acct",
    scope: "edge:clusters",
    node_id: "node-a",
    iat: T0,
    exp: T0 + 3600,
  });
  await verifier.verify(token, "edge:clusters");
  assert.match(await refusal(verifier.verify(token, "edge:mcm")), /lacks scope 'edge:mcm'/);
  assert.match(await refusal(verifier.verify(token, "edge:clusters", "node-b")), /not this one/);
});

Deno.test("a forged token is refused even when a genuine one with its claims was accepted", async () => {
  const { trusted, sign } = await issuer();
  const other = await issuer();
  const { verifier } = await verifierAt(trusted);
  const claims = { sub: "acct", scope: "edge:clusters", iat: T0, exp: T0 + 3600 };
  await verifier.verify(await sign(claims), "edge:clusters");
  const forged = await other.sign(claims);
  assert.match(await refusal(verifier.verify(forged, "edge:clusters")), /signature|key/);
});
