/**
 * Tokens from issuers other than edgenode's own: a plain OpenSSL-made Ed25519 key, ES256 and
 * RS256 keys (as Keycloak and Auth0 sign), with keys given inline, in a file, or at a URL.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { exportJWK, generateKeyPair, importPKCS8, type JWK, SignJWT } from "jose";
import { rpc } from "../testing/identity.ts";
import { startFileServer } from "../testing/file_server.ts";
import { startTestNode, withTempDir } from "../testing/node.ts";

async function run(command: string, args: string[]): Promise<Uint8Array> {
  const output = await new Deno.Command(command, { args, stdout: "piped", stderr: "piped" })
    .output();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
  return output.stdout;
}

function associateToken(issuer: string, alg: string, kid: string, account: string) {
  return new SignJWT({ scope: "openid edge:account:associate" })
    .setProtectedHeader({ alg, kid })
    .setIssuer(issuer)
    .setSubject(account)
    .setIssuedAt()
    .setExpirationTime("5m");
}

Deno.test("tokens from an OpenSSL Ed25519 key and from ES256 and RS256 issuers verify", () =>
  withTempDir(async (dir) => {
    // OpenSSL: a PKCS#8 private key; the JWK's x is the raw 32-byte public key (the DER's tail).
    await run("openssl", ["genpkey", "-algorithm", "ed25519", "-out", `${dir}/ed.pem`]);
    const der = await run("openssl", [
      "pkey",
      "-in",
      `${dir}/ed.pem`,
      "-pubout",
      "-outform",
      "DER",
    ]);
    const opensslJwk: JWK = {
      kty: "OKP",
      crv: "Ed25519",
      x: Buffer.from(der.slice(-32)).toString("base64url"),
      kid: "ossl",
    };
    const opensslKey = await importPKCS8(await Deno.readTextFile(`${dir}/ed.pem`), "EdDSA");

    const es = await generateKeyPair("ES256");
    const rs = await generateKeyPair("RS256");
    const esJwk = { ...await exportJWK(es.publicKey), kid: "es-1", alg: "ES256" };
    const rsJwk = { ...await exportJWK(rs.publicKey), kid: "rs-1", alg: "RS256" };
    await Deno.writeTextFile(`${dir}/rs-jwks.json`, JSON.stringify({ keys: [rsJwk] }));
    await using jwksServer = startFileServer();
    const jwksUrl = jwksServer.serve(
      "/realms/edge/protocol/openid-connect/certs",
      new TextEncoder().encode(JSON.stringify({ keys: [esJwk] })),
    );

    await using node = await startTestNode({
      config: {
        apiKey: "a-test-key-of-enough-length",
        trustedIssuers: [
          { issuer: "https://openssl.example", jwks: { keys: [opensslJwk] } },
          { issuer: "https://keycloak.example/realms/edge", jwksUrl },
          { issuer: "https://auth0.example/", jwksFile: `${dir}/rs-jwks.json` },
        ],
      },
    });
    const tokens = [
      await associateToken("https://openssl.example", "EdDSA", "ossl", "acct").sign(opensslKey),
      await associateToken("https://keycloak.example/realms/edge", "ES256", "es-1", "acct").sign(
        es.privateKey,
      ),
      await associateToken("https://auth0.example/", "RS256", "rs-1", "acct").sign(rs.privateKey),
    ];
    for (const token of tokens) {
      assert.deepEqual(await rpc(node, "associateAccount", [token]), { accountId: "acct" });
    }
    assert.ok(jwksServer.requests.length >= 1, "the JWKS URL was fetched");
  }));

Deno.test("a trust file that does not exist or is malformed stops the node with a clear message", () =>
  withTempDir(async (dir) => {
    const missing = await startTestNode({ args: ["--trust", `${dir}/nope.json`] }).catch((e) => e);
    assert.match(String(missing), /trust file .*nope\.json does not exist/);
    await Deno.writeTextFile(`${dir}/bad.json`, JSON.stringify({ issuer: "x", jwks: {} }));
    const bad = await startTestNode({ args: ["--trust", `${dir}/bad.json`] }).catch((e) => e);
    assert.match(String(bad), /bad\.json is not a valid trust file: jwks\.keys/);
  }));
