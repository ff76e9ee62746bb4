/**
 * Microservice deployment end to end: the examples built with the CLI, uploaded, started and
 * called on every route; redeploys, restarts of the node, the fetch model, and the CLI's deploy.
 */
import assert from "node:assert/strict";
import * as v from "valibot";
import { ContainerListSchema, ImageListSchema, LogListSchema } from "../gen/mcm/validators.ts";
import { expectError, expectJson } from "../testing/contract.ts";
import { rpc } from "../testing/identity.ts";
import {
  deployExample,
  EXAMPLES,
  getJson,
  mcm,
  serviceUrl,
  startContainer,
} from "../testing/mcm.ts";
import { runEdgenode, startTestNode, waitFor, withTempDir } from "../testing/node.ts";

const CONFIG = { apiKey: "a-test-key-of-enough-length", discovery: { mdns: false } };

Deno.test("the example microservice, built with the CLI, answers every route of its context", async () => {
  await using node = await startTestNode({ config: CONFIG });
  const { container, url } = await deployExample(node, "hello-mim", "hello-mim", {
    GREETING: "hi",
    "MCM.BASE_API_PATH": "/hello/v1",
  });
  assert.equal(container.state, "started");
  assert.equal(container.id, "api-hello-mim");
  assert.equal(container.image, "hello-mim");
  assert.match(container.env["MCM.BASE_API_PATH"], /^\/[0-9a-f-]{36}\/hello\/v1$/);
  assert.equal(container.env["MCM.WEBSOCKET_SUPPORT"], "false");
  assert.ok(Math.abs(container.created - Date.now()) < 60_000, "created is in milliseconds");

  assert.deepEqual((await getJson(`${url}/`)).body, { message: "Hello from hello-mim" });
  assert.deepEqual((await getJson(`${url}/env`)).body, container.env);
  const me = await rpc(node, "getMe");
  assert.deepEqual((await getJson(`${url}/info`)).body, {
    serviceType: "api-hello-mim", // <clientId>-<container name>, as the reference
    apiRoot: container.env["MCM.BASE_API_PATH"],
    httpPort: new URL(node.url).port,
    accountId: "",
    nodeId: me.nodeId,
  });
  const seen = (await getJson(`${url}/request?a=1`, {
    headers: { "X-Custom": "yes", authorization: "Bearer abc" },
  })).body;
  assert.equal(seen.url, "/request?a=1", "the url is relative to the base path");
  assert.equal(seen.method, "GET");
  assert.equal(seen.headers["x-custom"], "yes", "header names are lowercase");
  assert.equal(seen.authorization, "Bearer abc");
  assert.deepEqual((await getJson(`${url}/sayHello/Ada`)).body, { message: "Hello Ada!" });
  assert.deepEqual((await getJson(`${url}/add?x=2&y=40`)).body, { sum: 42 });
  assert.deepEqual(
    (await getJson(`${url}/form`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "a=1&b=two+words",
    })).body,
    { a: "1", b: "two words" },
  );
  assert.deepEqual(
    (await getJson(`${url}/json`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ list: [1, 2] }),
    })).body,
    { received: { list: [1, 2] } },
  );

  // Storage: items, tags, removal.
  const put = (key: string, value: string, tag?: string) =>
    getJson(`${url}/items/${key}${tag ? `?tag=${tag}` : ""}`, { method: "PUT", body: value });
  await put("a", "1", "letters");
  await put("b", "2", "letters");
  await put("n", "3");
  assert.deepEqual((await getJson(`${url}/items/a`)).body, { key: "a", value: "1" });
  assert.deepEqual((await getJson(`${url}/items?tag=letters`)).body, { a: "1", b: "2" });
  assert.deepEqual((await getJson(`${url}/items`)).body, { a: "1", b: "2", n: "3" });
  await put("a", "10");
  assert.deepEqual(
    (await getJson(`${url}/items?tag=letters`)).body,
    { a: "10", b: "2" },
    "setItem keeps the item's tag",
  );
  assert.deepEqual((await getJson(`${url}/items?tag=letters`, { method: "DELETE" })).body, {
    removed: 2,
  });
  assert.equal((await getJson(`${url}/items/a`)).status, 404);
  assert.deepEqual((await getJson(`${url}/items`)).body, { n: "3" });

  // context.http.request to the node itself.
  assert.deepEqual((await getJson(`${url}/ping-node`)).body, {
    status: 200,
    node: { data: { id: me.nodeId } },
  });

  // A streamed response arrives event by event.
  const stream = await fetch(`${url}/stream?count=3`);
  assert.equal(stream.headers.get("content-type"), "text/event-stream");
  const events = (await stream.text()).trim().split("\n\n");
  assert.deepEqual(events, ['data: {"n":0}', 'data: {"n":1}', 'data: {"n":2}']);

  // Warm: module state survives between requests.
  const first = (await getJson(`${url}/served`)).body.served;
  assert.equal((await getJson(`${url}/served`)).body.served, first + 1);

  // The microservice's own 404, and the node's for a base path nobody serves.
  assert.deepEqual(await getJson(`${url}/nope`), {
    status: 404,
    body: { code: 404, message: "Not Found" },
  });
  const segment = container.env["MCM.BASE_API_PATH"].split("/")[1];
  await expectError(await fetch(`${node.url}/${segment}/other/v1/x`), 404, /no microservice/);

  const logs = await expectJson(
    await mcm(node, "/containers/api-hello-mim/logs"),
    200,
    LogListSchema,
  );
  assert.ok(logs.data.some((line) => line.level === "node" && /started in/.test(line.message)));
  assert.ok(
    logs.data.some((line) => line.level === "info" && line.message === "GET /sayHello/Ada"),
  );
});

Deno.test("a redeploy keeps the base path and the storage; a node restart brings containers back", () =>
  withTempDir(async (dataDir) => {
    await Deno.writeTextFile(`${dataDir}/config.json`, JSON.stringify(CONFIG), { mode: 0o600 });
    let url: string;
    {
      await using node = await startTestNode({ dataDir });
      const deployed = await deployExample(node, "hello-mim", "keeper", { A: "1" });
      url = deployed.url;
      await fetch(`${url}/items/kept`, { method: "PUT", body: "still here" }).then((r) =>
        r.body?.cancel()
      );
      const again = await startContainer(
        node,
        { name: "keeper", image: "keeper", env: { A: "2" } },
        200,
      );
      assert.equal(serviceUrl(node, again), url, "same client, same name: same base path");
      assert.equal(again.env.A, "2");
      assert.deepEqual((await getJson(`${url}/items/kept`)).body, {
        key: "kept",
        value: "still here",
      });
      assert.equal((await getJson(`${url}/env`)).body.A, "2", "the new deployment serves");
    }
    await using node = await startTestNode({ dataDir });
    url = url.replace(/^http:\/\/[^/]+/, node.url);
    await waitFor(
      async () => (await fetch(`${url}/`).then((r) => r.text().then(() => r.status))) === 200,
      "the container back",
    );
    const list = await expectJson(await mcm(node, "/containers"), 200, ContainerListSchema);
    assert.deepEqual(list.data.map((c) => [c.id, c.state]), [["api-keeper", "started"]]);
    assert.deepEqual((await getJson(`${url}/items/kept`)).body, {
      key: "kept",
      value: "still here",
    });
    assert.equal((await getJson(`${url}/env`)).body.A, "2");

    // Deleting keeps the storage for the next deployment of the name, unless purged.
    await expectJson(
      await mcm(node, "/containers/api-keeper", { method: "DELETE" }),
      200,
      v.object({ state: v.literal("stopped") }),
    );
    assert.equal((await fetch(`${url}/`)).status, 404);
    const back = await startContainer(node, { name: "keeper", image: "keeper" });
    assert.equal(serviceUrl(node, back), url);
    assert.deepEqual((await getJson(`${url}/items/kept`)).body, {
      key: "kept",
      value: "still here",
    });
    await mcm(node, "/containers/api-keeper?purge=true", { method: "DELETE" }).then((r) =>
      r.body?.cancel()
    );
    await startContainer(node, { name: "keeper", image: "keeper" });
    assert.equal((await getJson(`${url}/items/kept`)).status, 404, "purged");
  }));

Deno.test("the fetch model, deployed with 'edgenode deploy'", async () => {
  await using node = await startTestNode({ config: CONFIG });
  const result = await runEdgenode([
    "deploy",
    `${EXAMPLES}hello-fetch`,
    "--image-name",
    "hello-fetch",
    "--base-path",
    "/greeter/v1",
    "--env",
    "GREETING=howdy",
    "--node",
    node.url,
    "--key",
    node.apiKey,
  ]);
  assert.equal(result.code, 0, result.stderr);
  const url = /serving at (\S+)\/\n/.exec(result.stdout)?.[1];
  assert.ok(url?.endsWith("/greeter/v1"), result.stdout);
  assert.deepEqual((await getJson(`${url}/hello?name=Lin`)).body, {
    message: "Hello Lin",
    greeting: "howdy",
  });
  assert.deepEqual((await getJson(`${url}/visits`, { method: "POST" })).body, { visits: 1 });
  assert.deepEqual((await getJson(`${url}/visits`, { method: "POST" })).body, { visits: 2 });
  const echo = await fetch(`${url}/echo`, { method: "POST", body: "x".repeat(200_000) });
  assert.equal(
    (await echo.text()).length,
    200_000,
    "a body over the inline size streams both ways",
  );
  const images = await expectJson(await mcm(node, "/images"), 200, ImageListSchema);
  assert.deepEqual(images.data.map((i) => [i.id, i.containers]), [["api-hello-fetch", 1]]);
});
