/**
 * The JSON-RPC interface: protocol (batches, notifications, standard errors), identity, id
 * tokens, association with tokens from a real CLI-made issuer, GPS, and persistence.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { DatabaseSync } from "node:sqlite";
import { createLocalJWKSet, jwtVerify } from "jose";
import { MeSchema } from "../gen/jsonrpc/validators.ts";
import * as v from "valibot";
import { parse } from "yaml";
import {
  cliToken,
  makeIssuer,
  now,
  rpc,
  rpcFails,
  rpcRaw,
  signedToken,
} from "../testing/identity.ts";
import { startTestNode, withPrivateGroup, withTempDir } from "../testing/node.ts";

/** Written into data directories by hand: in a private discovery group, as startTestNode does. */
const CONFIG = withPrivateGroup({ apiKey: "a-test-key-of-enough-length", nodeName: "living-room" });

Deno.test("getMe names the node; its id and key survive restarts; the key file is 0600", () =>
  withTempDir(async (dataDir) => {
    await Deno.writeTextFile(`${dataDir}/config.json`, JSON.stringify(CONFIG), { mode: 0o600 });
    let first;
    {
      await using node = await startTestNode({ dataDir });
      first = v.parse(MeSchema, await rpc(node, "getMe", [""]));
      assert.deepEqual({ ...first, nodeId: "" }, {
        nodeId: "",
        accountId: "",
        name: "living-room",
        version: "0.1.0",
      });
      assert.match(first.nodeId, /^[0-9a-f]{56}$/);
      assert.deepEqual(await rpc(node, "getMe"), first, "params may be left out");
    }
    assert.equal((await Deno.stat(`${dataDir}/identity/node-key.json`)).mode! & 0o777, 0o600);
    await using node = await startTestNode({ dataDir });
    assert.deepEqual(await rpc(node, "getMe", []), first);
  }));

Deno.test("JSON-RPC 2.0: batches, requests without id, and the standard errors", async () => {
  await using node = await startTestNode();
  const call = (id: number | null, method: string, params?: unknown) =>
    JSON.stringify({ jsonrpc: "2.0", id, method, params });
  const batch = await rpcRaw(
    node,
    `[${call(1, "getMe")}, {"jsonrpc":"2.0","method":"getMe"}, ${call(2, "nope")}]`,
  ) as { id: number | null; result?: unknown; error?: { code: number } }[];
  assert.deepEqual(batch.map((a) => a.id), [1, null, 2], "answers in order; no id: id null");
  assert.equal(batch[0].result !== undefined && batch[1].result !== undefined, true);
  assert.equal(batch[2].error?.code, -32601);
  assert.deepEqual(await rpcRaw(node, `[${call(7, "getMe")}]`).then((a) => (a as []).length), 1);
  // node-runtime.md's envelope has no id, and the reference answers it with "id": null.
  const documented = await rpcRaw(node, `{"jsonrpc":"2.0","method":"getMe","params":[""]}`) as {
    id: unknown;
    result: { nodeId: string };
  };
  assert.equal(documented.id, null);
  assert.match(documented.result.nodeId, /^[0-9a-f]{56}$/);
  // ...and the contract says so from its first lines (it once said "no answer; 204").
  const spec = parse(await Deno.readTextFile(new URL("../spec/jsonrpc.yaml", import.meta.url)));
  assert.doesNotMatch(spec.info.description, /no answer|204/);
  assert.match(spec.info.description, /a request without `id` is answered too/);
  // JSON-RPC 2.0's example 6, a string as params, an object id, a null body, a large id.
  const invalid = async (body: string) => {
    const answer = (await rpcRaw(node, body)) as { id: unknown; error: { code: number } };
    return [answer.error.code, answer.id];
  };
  assert.deepEqual(await invalid(`{"jsonrpc":"2.0","method":1,"params":"bar"}`), [-32600, null]);
  assert.deepEqual(await invalid(`{"jsonrpc":"2.0","method":"getMe","params":"bar","id":4}`), [
    -32600,
    4,
  ]);
  assert.deepEqual(await invalid(`{"jsonrpc":"2.0","method":"getMe","id":{"a":1}}`), [
    -32600,
    null,
  ]);
  assert.deepEqual(await invalid("null"), [-32600, null]);
  const big = await fetch(`${node.url}/jsonrpc/v1`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: `{"jsonrpc":"2.0","method":"getMe","id":12345678901234567890}`,
  });
  assert.match(await big.text(), /"id":12345678901234567890[,}]/, "the id's own digits");
  const error = async (body: string) =>
    ((await rpcRaw(node, body)) as { error: { code: number } }).error.code;
  assert.equal(await error("{not json"), -32700);
  assert.equal(await error(`{"jsonrpc":"2.0","id":1}`), -32600);
  assert.equal(await error("[]"), -32600);
  assert.equal(await error(`[${call(1, "getMe")}`), -32700, "a broken batch is one parse error");
  assert.deepEqual(
    ((await rpcRaw(node, " [1]")) as { error: { code: number } }[]).map((a) => a.error.code),
    [-32600],
    "a batch of one bad element is answered with an array",
  );
  assert.equal(await error(call(1, "getYou")), -32601);
  await rpcFails(node, "associateAccount", [], -32602, /missing param 'edgeAccessToken'/);
  await rpcFails(node, "associateAccount", [42], -32602, /param 'edgeAccessToken'/);
  await rpcFails(node, "associateAccount", ["a.b.c", "x"], -32602, /at most 1 params/);
  await rpcFails(node, "associateAccount", { token: "a.b.c" }, -32602, /no param 'token'/);
  await rpcFails(node, "getMe", { verbose: true }, -32602, /no param 'verbose'/);
});

Deno.test("the HTTP side of JSON-RPC: media types, 415 for binary bodies, 405 for other methods", async () => {
  await using node = await startTestNode();
  const body = `{"jsonrpc":"2.0","id":1,"method":"getMe"}`;
  const post = (headers: Record<string, string>) =>
    fetch(`${node.url}/jsonrpc/v1`, { method: "POST", headers, body });
  // curl -d sends the form type; Bitcoin-style clients send text/plain; some send nothing.
  for (const type of ["application/x-www-form-urlencoded", "text/plain;charset=utf-8", ""]) {
    const answer = await post(type ? { "Content-Type": type } : {});
    assert.equal(answer.status, 200, type);
    assert.equal((await answer.json()).id, 1);
  }
  const binary = await post({ "Content-Type": "application/octet-stream" });
  assert.equal(binary.status, 415);
  assert.match((await binary.json()).error.message, /Content-Type must be application\/json/);
  const get = await fetch(`${node.url}/jsonrpc/v1`);
  assert.equal(get.status, 405);
  assert.equal(get.headers.get("allow"), "POST, OPTIONS");
  await get.body?.cancel();
});

Deno.test("getEdgeIdToken is a short-lived JWT signed by the node's published key", async () => {
  await using node = await startTestNode({ config: CONFIG });
  const { nodeId } = await rpc(node, "getMe");
  const { id_token } = await rpc(node, "getEdgeIdToken", [""]);
  const jwks = await (await fetch(`${node.url}/jsonrpc/v1/jwks`)).json();
  const { payload, protectedHeader } = await jwtVerify(id_token, createLocalJWKSet(jwks));
  assert.equal(protectedHeader.alg, "EdDSA");
  assert.equal(protectedHeader.kid, nodeId);
  assert.equal(payload.node_id, nodeId);
  assert.equal(payload.node_name, "living-room");
  assert.equal(payload.sub, "");
  assert.equal(payload.exp! - payload.iat!, 300);
  assert.ok(typeof payload.jti === "string" && payload.jti.length > 0);
});

Deno.test("association round trip with a CLI-made issuer, and its refusals", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    await using node = await startTestNode({ args: ["--trust", issuer.trustFile] });
    const { nodeId } = await rpc(node, "getMe");
    const associate = await cliToken(issuer, "acct-1", "openid edge:account:associate", [
      "--node",
      nodeId,
    ]);
    assert.deepEqual(await rpc(node, "associateAccount", [associate]), { accountId: "acct-1" });
    assert.equal((await rpc(node, "getMe")).accountId, "acct-1");
    assert.deepEqual(
      await rpc(node, "associateAccount", { edgeAccessToken: associate }),
      { accountId: "acct-1" },
      "the same account again is fine",
    );
    const other = await cliToken(issuer, "acct-2", "edge:account:associate");
    await rpcFails(node, "associateAccount", [other], -32004, /associated with account 'acct-1'/);
    const otherUn = await cliToken(issuer, "acct-2", "edge:account:unassociate");
    await rpcFails(node, "unassociateAccount", [otherUn], -32005, /for account 'acct-2'/);
    await rpcFails(
      node,
      "unassociateAccount",
      [associate],
      -32002,
      /lacks scope 'edge:account:unassociate'/,
    );
    const unassociate = await cliToken(issuer, "acct-1", "edge:account:unassociate");
    assert.deepEqual(await rpc(node, "unassociateAccount", [unassociate]), { accountId: "acct-1" });
    assert.equal((await rpc(node, "getMe")).accountId, "");
    await rpcFails(node, "unassociateAccount", [unassociate], -32005, /not associated/);
  }));

Deno.test("tokens that are expired, early, untrusted, unsigned, HMAC, tampered or for another node are refused", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    const stranger = await makeIssuer(`${dir}/stranger`, "stranger");
    await using node = await startTestNode({ args: ["--trust", issuer.trustFile] });
    const scope = "edge:account:associate";
    const fails = (token: string, code: number, message: RegExp) =>
      rpcFails(node, "associateAccount", [token], code, message);
    await fails(
      await signedToken(issuer, { sub: "a", scope, exp: now() - 120 }),
      -32001,
      /expired/,
    );
    await fails(
      await signedToken(issuer, { sub: "a", scope, exp: now() + 900, nbf: now() + 600 }),
      -32001,
      /not valid yet/,
    );
    await fails(await cliToken(stranger, "a", scope), -32001, /issuer 'stranger' is not trusted/);
    await fails(await signedToken(issuer, { sub: "a", exp: now() + 60 }), -32002, /lacks scope/);
    await fails(
      await signedToken(issuer, { sub: "a", scope, exp: now() + 60, node_id: "f".repeat(56) }),
      -32003,
      /for node 'f{56}'/,
    );
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
    const claims = { iss: "test-issuer", sub: "a", scope, exp: now() + 60 };
    await fails(
      `${b64({ alg: "none" })}.${b64(claims)}.`,
      -32001,
      /algorithm 'none' is not accepted/,
    );
    await fails(
      `${b64({ alg: "HS256" })}.${b64(claims)}.c2lnbmF0dXJl`,
      -32001,
      /algorithm 'HS256'/,
    );
    const [head, , signature] = (await cliToken(issuer, "a", scope)).split(".");
    const forged = `${head}.${b64({ ...claims, sub: "mallory" })}.${signature}`;
    await fails(forged, -32001, /signature does not verify/);
    await fails("x.y.z", -32001, /not a JWT/);
    assert.equal((await rpc(node, "getMe")).accountId, "", "nothing was associated");
  }));

Deno.test("updateGps takes positional or named decimal strings, checks ranges, and is stored", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    const dataDir = `${dir}/node`;
    await Deno.mkdir(dataDir);
    {
      await using node = await startTestNode({ dataDir, args: ["--trust", issuer.trustFile] });
      const token = await cliToken(issuer, "acct", "edge:clusters");
      await rpcFails(node, "updateGps", [token, "1", "2", "0", "0"], -32005, /not associated/);
      await rpc(node, "associateAccount", [
        await cliToken(issuer, "acct", "edge:account:associate"),
      ]);
      assert.deepEqual(
        await rpc(node, "updateGps", [token, "-122.4194", "37.7749", "1.5", "90"]),
        { status: "ok" },
      );
      await rpcFails(
        node,
        "updateGps",
        [token, "10", "91", "0", "0"],
        -32602,
        /latitude must be from -90 to 90/,
      );
      await rpcFails(node, "updateGps", [token, "181", "0", "0", "0"], -32602, /longitude/);
      await rpcFails(node, "updateGps", [token, "0", "0", "-1", "0"], -32602, /speed/);
      await rpcFails(
        node,
        "updateGps",
        [token, "0", "0", "0", "east"],
        -32602,
        /param 'bearing' must be a decimal/,
      );
      assert.deepEqual(
        await rpc(node, "updateGps", {
          edgeAccessToken: token,
          latitude: "48.8566",
          longitude: "2.3522",
          speed: "0",
          bearing: "0",
        }),
        { status: "ok" },
      );
    }
    const db = new DatabaseSync(`${dataDir}/edgenode.db`);
    const rows = Object.fromEntries(
      db.prepare("SELECT key, value FROM node_state").all().map((
        r,
      ) => [r.key, JSON.parse(r.value as string)]),
    );
    db.close();
    assert.equal(rows.account, "acct");
    assert.deepEqual({ ...rows.gps, at: 0 }, {
      longitude: 2.3522,
      latitude: 48.8566,
      speed: 0,
      bearing: 0,
      at: 0,
    });
    await using node = await startTestNode({ dataDir, args: ["--trust", issuer.trustFile] });
    assert.equal((await rpc(node, "getMe")).accountId, "acct", "the account survives a restart");
  }));
