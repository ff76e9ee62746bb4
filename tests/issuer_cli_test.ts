/**
 * `edgenode issuer init` and `edgenode token`: the files they write, the tokens they sign, and
 * their answers to mistakes.
 */
import assert from "node:assert/strict";
import { createLocalJWKSet, jwtVerify } from "jose";
import { cliToken, makeIssuer } from "../testing/identity.ts";
import { runEdgenode, withTempDir } from "../testing/node.ts";

Deno.test("issuer init writes a 0600 key and a trust file; token signs what was asked", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/iss`, "home-lab");
    assert.equal((await Deno.stat(`${dir}/iss/issuer-key.json`)).mode! & 0o777, 0o600);
    const trust = JSON.parse(await Deno.readTextFile(issuer.trustFile));
    assert.equal(trust.issuer, "home-lab");
    assert.equal(trust.jwks.keys.length, 1);
    assert.equal(trust.jwks.keys[0].d, undefined, "the trust file holds no private key");
    const token = await cliToken(issuer, "acct-9", "edge:mcm edge:clusters", [
      "--ttl",
      "90m",
      "--node",
      "abc",
    ]);
    const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(trust.jwks), {
      issuer: "home-lab",
    });
    assert.equal(protectedHeader.alg, "EdDSA");
    assert.equal(payload.sub, "acct-9");
    assert.equal(payload.scope, "edge:mcm edge:clusters");
    assert.equal(payload.node_id, "abc");
    assert.equal(payload.exp! - payload.iat!, 90 * 60);
  }));

Deno.test("issuer and token commands explain their mistakes with exit code 2", () =>
  withTempDir(async (dir) => {
    await makeIssuer(`${dir}/iss`);
    const again = await runEdgenode(["issuer", "init", "--dir", `${dir}/iss`]);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /already holds an issuer key/);
    const cases: [string[], RegExp][] = [
      [["token", "--dir", `${dir}/iss`, "--scope", "edge:mcm"], /--account is required/],
      [["token", "--dir", `${dir}/iss`, "--account", "a"], /--scope is required/],
      [
        ["token", "--dir", `${dir}/iss`, "--account", "a", "--scope", "x", "--ttl", "soon"],
        /--ttl must be a duration/,
      ],
      [
        ["token", "--dir", `${dir}/none`, "--account", "a", "--scope", "x"],
        /no issuer in .*none: run 'edgenode issuer init/,
      ],
      [["issuer", "rotate"], /unknown issuer command 'rotate'/],
    ];
    for (const [args, message] of cases) {
      const result = await runEdgenode(args);
      assert.equal(result.code, 2, `${args.join(" ")}: ${result.stderr}`);
      assert.match(result.stderr, message);
    }
  }));
