/**
 * The insight service: the API key on every call, the `{ message, statusCode }` errors, GET
 * /info and /nodes for this node, and the stored account token's states (absent, stored,
 * expired) across time and restarts.
 */
import assert from "node:assert/strict";
import * as v from "valibot";
import {
  InfoResponseSchema,
  InsightErrorSchema,
  NodeListSchema,
} from "../gen/insight/validators.ts";
import { cliToken, makeIssuer, rpc, type TestIssuer } from "../testing/identity.ts";
import { scriptImage, startContainer, uploadImage } from "../testing/mcm.ts";
import { startTestNode, type TestNode, waitFor, withTempDir } from "../testing/node.ts";

function insight(node: TestNode, path: string, init: RequestInit = {}, key = node.apiKey) {
  return fetch(`${node.url}/mesh/insight/v1${path}`, {
    ...init,
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
  });
}

async function expectInsightError(response: Response, status: number, message?: RegExp) {
  const body = v.parse(InsightErrorSchema, await response.json());
  assert.equal(response.status, status, body.message);
  assert.equal(body.statusCode, status);
  if (message) assert.match(body.message, message);
}

const putToken = (node: TestNode, body: unknown) =>
  insight(node, "/token", { method: "PUT", body: JSON.stringify(body) });

async function associated(node: TestNode, issuer: TestIssuer, account = "acct") {
  await rpc(node, "associateAccount", [await cliToken(issuer, account, "edge:account:associate")]);
}

Deno.test("every insight call needs the API key: 401 when missing or wrong, in the spec's shape", async () => {
  await using node = await startTestNode();
  const bare = await fetch(`${node.url}/mesh/insight/v1/info?types=self`);
  await expectInsightError(bare, 401, /missing credentials/);
  await expectInsightError(
    await insight(node, "/info?types=self", {}, "wrong"),
    401,
    /incorrect API key/,
  );
  await expectInsightError(await insight(node, "/info"), 400, /types/);
  await expectInsightError(
    await insight(node, "/info?types=self,moon"),
    400,
    /unknown type 'moon'/,
  );
  await expectInsightError(await insight(node, "/info?types=self,self"), 400, /repeated/);
  await expectInsightError(await insight(node, "/nodes?type=galaxy"), 400, /type/);
  await expectInsightError(await insight(node, "/token", { method: "POST" }), 405, /use PUT/);
});

Deno.test("GET /info and /nodes describe this node", async () => {
  await using node = await startTestNode({
    config: { apiKey: "a-test-key-of-enough-length", nodeName: "pi3" },
  });
  const { nodeId } = await rpc(node, "getMe");
  const info = v.parse(
    InfoResponseSchema,
    await (await insight(node, "/info?types=self,supernode")).json(),
  );
  const self = {
    id: nodeId,
    accountId: "",
    name: "pi3",
    os: Deno.build.os,
    addresses: [{ type: "local", url: { href: node.url } }],
    services: [],
  };
  assert.deepEqual(info.data.self, self);
  assert.deepEqual(info.data.supernode, { id: nodeId, name: "pi3", addresses: self.addresses });
  const nodes = v.parse(
    NodeListSchema,
    await (await insight(node, "/nodes?type=linkLocal")).json(),
  );
  assert.deepEqual(nodes.data, [self]);
});

Deno.test("account-scoped answers need a stored, unexpired token; PUT /token walks the states", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    const dataDir = `${dir}/node`;
    await Deno.mkdir(dataDir);
    const start = () => startTestNode({ dataDir, args: ["--trust", issuer.trustFile] });
    const clusters = (account = "acct") => cliToken(issuer, account, "edge:clusters");
    {
      await using node = await start();
      // absent
      await expectInsightError(await insight(node, "/nodes?type=account"), 403, /it is absent/);
      await expectInsightError(
        await insight(node, "/info?types=self,sep"),
        403,
        /sep needs a stored/,
      );
      await expectInsightError(
        await putToken(node, { token: await clusters() }),
        400,
        /not associated/,
      );
      await associated(node, issuer);
      await expectInsightError(await putToken(node, { token: "abc" }), 400, /token/);
      await expectInsightError(
        await putToken(node, { token: await clusters("other") }),
        400,
        /for account 'other'/,
      );
      await expectInsightError(
        await putToken(node, { token: await cliToken(issuer, "acct", "edge:mcm") }),
        400,
        /lacks scope 'edge:clusters'/,
      );
      await expectInsightError(
        await putToken(node, { token: await clusters(), expiresAt: 1000 }),
        400,
        /expiresAt is in the past/,
      );
      // stored, with an expiresAt two seconds away
      const soon = Math.floor(Date.now() / 1000) + 2;
      const ok = await putToken(node, { token: await clusters(), expiresAt: soon });
      assert.deepEqual(await ok.json(), { status: "ok" });
      await expectInsightError(
        await insight(node, "/nodes?type=proximity"),
        503,
        /no.* hub|needs a hub/,
      );
      await expectInsightError(await insight(node, "/info?types=bep"), 503, /hub.url/);
      // expired, once the time passes
      await waitFor(
        async () => (await insight(node, "/nodes?type=account")).status === 403,
        "expiry",
        5000,
      );
      await expectInsightError(await insight(node, "/nodes?type=account"), 403, /it is expired/);
      // stored again, without expiresAt: the token's own exp applies
      assert.equal((await putToken(node, { token: await clusters() })).status, 200);
      await expectInsightError(await insight(node, "/nodes?type=account"), 503);
    }
    {
      await using node = await start();
      await expectInsightError(await insight(node, "/nodes?type=account"), 503, /hub/);
      // "" clears it
      assert.equal((await putToken(node, { token: "" })).status, 200);
      await expectInsightError(await insight(node, "/nodes?type=account"), 403, /absent/);
      assert.equal((await putToken(node, { token: await clusters() })).status, 200);
      // unassociating clears it too
      await rpc(node, "unassociateAccount", [
        await cliToken(issuer, "acct", "edge:account:unassociate"),
      ]);
      await expectInsightError(await insight(node, "/nodes?type=account"), 403, /absent/);
    }
  }));

Deno.test("insight lists the node's running microservices as its services", async () => {
  await using node = await startTestNode();
  await uploadImage(
    node,
    await scriptImage(`mimikModule.exports = (context, req, res) => res.end("hi");`),
    "hello.tar",
  );
  await startContainer(node, { name: "hello", image: "hello" });
  const info = v.parse(InfoResponseSchema, await (await insight(node, "/info?types=self")).json());
  assert.deepEqual(
    info.data.self?.services.map(({ serviceType, status }) => ({ serviceType, status })),
    [{ serviceType: info.data.self?.services[0].id, status: "started" }],
    "the service type is <clientId>-<container name>, as the reference advertises it",
  );
  assert.match(info.data.self?.services[0].id ?? "", /-hello$/);
  const nodes = v.parse(
    NodeListSchema,
    await (await insight(node, "/nodes?type=linkLocal")).json(),
  );
  const self = nodes.data.find((entry) => entry.id === info.data.self?.id);
  assert.equal(self?.services.length, 1, "the listing says the same");
});
