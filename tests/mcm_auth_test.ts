/**
 * /mcm/v1 credentials and clients: the deployment key, edge access tokens with edge:mcm, what
 * each client sees, and the refusals of bad requests.
 */
import assert from "node:assert/strict";
import { ContainerListSchema, ImageListSchema } from "../gen/mcm/validators.ts";
import { expectError, expectJson } from "../testing/contract.ts";
import { cliToken, makeIssuer, now, rpc, signedToken } from "../testing/identity.ts";
import {
  buildExample,
  EXAMPLES,
  mcm,
  postContainer,
  postImage,
  serviceUrl,
  startContainer,
} from "../testing/mcm.ts";
import { startTestNode, withTempDir } from "../testing/node.ts";

const CLIENT = "bb6fba7d-6321-41c5-ac37-1a7a8a9a4ac0";

Deno.test("mcm credentials: key holders administer, token clients see only their own", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    await using node = await startTestNode({
      args: ["--trust", issuer.trustFile],
      config: { apiKey: "a-test-key-of-enough-length", discovery: { mdns: false } },
    });
    const tar = await buildExample(`${EXAMPLES}hello-mim`, `${dir}/hello.tar`);
    const token = (claims: Record<string, unknown>) =>
      signedToken(issuer, { sub: "acct", exp: now() + 600, scope: "edge:mcm", ...claims });
    const appToken = await token({ azp: CLIENT });

    await expectError(await postImage(node, tar, "h.tar", {}, appToken), 403, /not associated/);
    await rpc(node, "associateAccount", [await cliToken(issuer, "acct", "edge:account:associate")]);

    await expectError(await fetch(`${node.url}/mcm/v1/images`), 401, /missing credentials/);
    await expectError(await postImage(node, tar, "h.tar", {}, "wrong-key"), 403, /incorrect/);
    await expectError(
      await postImage(node, tar, "h.tar", {}, await token({ scope: "edge:clusters" })),
      403,
      /lacks scope 'edge:mcm'/,
    );
    await expectError(
      await postImage(node, tar, "h.tar", {}, await token({ sub: "other" })),
      403,
      /account 'other'/,
    );
    await expectError(
      await postImage(node, tar, "h.tar", {}, await token({ node_id: "f".repeat(56) })),
      403,
      /for node/,
    );

    // A token client: its image and container, its client id as the path segment.
    const uploaded = await postImage(node, tar, "h.tar", {}, appToken);
    assert.equal((await uploaded.json()).id, `${CLIENT}-hello-mim`);
    const started = await postContainer(node, {
      name: "app",
      image: "hello-mim",
      env: { "MCM.BASE_API_PATH": "/app/v1" },
      clientId: "ignored",
    }, appToken);
    assert.equal(started.status, 201);
    const container = await started.json();
    assert.equal(container.id, `${CLIENT}-app`);
    assert.equal(container.env["MCM.BASE_API_PATH"], `/${CLIENT}/app/v1`);
    assert.equal(
      (await fetch(`${serviceUrl(node, container)}/info`).then((r) => r.json())).accountId,
      "acct",
    );

    // Another client of the same account sees none of it and cannot use it.
    const otherApp = await token({ azp: "another-app" });
    const asOther = (path: string, init: RequestInit = {}) =>
      fetch(`${node.url}/mcm/v1${path}`, {
        ...init,
        headers: { authorization: `Bearer ${otherApp}`, ...init.headers },
      });
    assert.deepEqual((await expectJson(await asOther("/images"), 200, ImageListSchema)).data, []);
    assert.deepEqual(
      (await expectJson(await asOther("/containers"), 200, ContainerListSchema)).data,
      [],
    );
    await expectError(await asOther(`/containers/${CLIENT}-app`, { method: "DELETE" }), 404);
    // Nor stop, restart or follow it: 404 as for GET, under either path.
    for (const path of [`/containers/${CLIENT}-app`, `/mims/${CLIENT}-app`]) {
      await expectError(await asOther(`${path}/stop`, { method: "POST" }), 404, /no container/);
      await expectError(await asOther(`${path}/restart`, { method: "POST" }), 404, /no container/);
    }
    await expectError(await asOther(`/containers/${CLIENT}-app`), 404, /no container/);
    await expectError(await asOther(`/containers/${CLIENT}-app/logs`), 404, /no container/);
    await expectError(
      await asOther(`/containers/${CLIENT}-app/logs?follow=true`),
      404,
      /no container/,
    );
    assert.equal(
      await fetch(`${serviceUrl(node, container)}/info`).then((r) => r.text().then(() => r.status)),
      200,
      "still running",
    );
    // A followed log does not outlive the token that opened it.
    const followed = await fetch(`${node.url}/mcm/v1/containers/${CLIENT}-app/logs?follow=true`, {
      headers: { authorization: `Bearer ${await token({ azp: CLIENT, exp: now() + 2 })}` },
      signal: AbortSignal.timeout(20_000),
    });
    assert.equal(followed.status, 200);
    const last = (await followed.text()).trim().split("\n").pop()!;
    assert.deepEqual(JSON.parse(last.replace(/^data: /, "")), {
      end: "credential_expired",
      message: "the edge access token expired: follow again with a new one",
    });
    await expectError(
      await postContainer(node, { name: "x", image: "hello-mim" }, otherApp),
      404,
      /no image 'hello-mim'/,
    );
    const generated = await postImage(node, tar, "h.tar", {}, otherApp);
    assert.equal(generated.status, 201);
    const theirs = await (await postContainer(node, { name: "app", image: "hello-mim" }, otherApp))
      .json();
    assert.match(theirs.env["MCM.BASE_API_PATH"], /^\/[0-9a-f-]{36}\/app$/, "a generated segment");
    assert.notEqual(theirs.env["MCM.BASE_API_PATH"].split("/")[1], CLIENT);

    // The key holder sees every client's, names another client with x-client-id.
    const all = await expectJson(await mcm(node, "/containers"), 200, ContainerListSchema);
    assert.deepEqual(all.data.map((c) => c.id).sort(), ["another-app-app", `${CLIENT}-app`]);
    const mims = await expectJson(await mcm(node, "/mims"), 200, ContainerListSchema);
    assert.deepEqual(mims.data, all.data, "/mims is /containers under the newer name");
    const forClient = await fetch(`${node.url}/mcm/v1/containers`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${node.apiKey}`,
        "x-client-id": CLIENT,
        "content-type": "application/json",
      },
      body: JSON.stringify({
        name: "app",
        image: "hello-mim",
        env: { "MCM.BASE_API_PATH": "/app/v1" },
      }),
    });
    assert.equal(forClient.status, 200, "the same client and name: a redeploy");
    await forClient.body?.cancel();

    // Images in use, unknown ones, and deletion.
    await expectError(
      await mcm(node, `/images/${CLIENT}-hello-mim`, { method: "DELETE" }),
      409,
      /used by/,
    );
    await expectJson(
      await mcm(node, `/containers/${CLIENT}-app`, { method: "DELETE" }),
      200,
      ContainerListSchema.entries.data.item,
    );
    const deleted = await mcm(node, `/images/${CLIENT}-hello-mim`, { method: "DELETE" });
    assert.equal((await deleted.json()).id, `${CLIENT}-hello-mim`);
    await expectError(await mcm(node, `/images/${CLIENT}-hello-mim`, { method: "DELETE" }), 404);

    // Through a hub, deployment is refused.
    await expectError(
      await fetch(`${node.url}/mcm/v1/containers`, {
        headers: { authorization: `Bearer ${node.apiKey}`, "x-edge-via": "hub" },
      }),
      403,
      /local callers only/,
    );
  }));

Deno.test("mcm refuses bad container requests with what to fix", async () => {
  await using node = await startTestNode({
    config: { apiKey: "a-test-key-of-enough-length", discovery: { mdns: false } },
  });
  const dir = await Deno.makeTempDir();
  const tar = await buildExample(`${EXAMPLES}hello-mim`, `${dir}/hello.tar`);
  await Deno.remove(dir, { recursive: true });
  assert.equal((await postImage(node, tar)).status, 201);
  const bad = async (body: unknown, status: number, message: RegExp) =>
    await expectError(await postContainer(node, body), status, message);
  await bad({ image: "hello-mim" }, 400, /name/);
  await bad({ name: "a/b", image: "hello-mim" }, 400, /name/);
  await bad({ name: "a", image: "nope" }, 404, /no image 'nope'/);
  await bad({ name: "a", image: "hello-mim", env: { "bad key": "x" } }, 400, /env key 'bad key'/);
  await bad({ name: "a", image: "hello-mim", env: { n: 1 } }, 400, /env/);
  await bad(
    { name: "a", image: "hello-mim", env: { "MCM.BASE_API_PATH": "no-slash" } },
    400,
    /MCM.BASE_API_PATH/,
  );
  await bad(
    { name: "a", image: "hello-mim", env: { "MCM.MAX_EXECUTION_TIME_SEC": "0" } },
    400,
    /from 1 to 3600/,
  );
  await bad(
    { name: "a", image: "hello-mim", env: { "MCM.MEMORY_MB": "lots" } },
    400,
    /MCM.MEMORY_MB/,
  );
  await bad(
    {
      name: "a",
      image: "hello-mim",
      env: { "MCM.API_ALIAS": "true", "MCM.BASE_API_PATH": "/../mcm" },
    },
    400,
    /MCM.BASE_API_PATH/,
  );
  const text = await fetch(`${node.url}/mcm/v1/containers`, {
    method: "POST",
    headers: { authorization: `Bearer ${node.apiKey}`, "content-type": "text/plain" },
    body: "{}",
  });
  assert.equal(text.status, 415);
  await text.body?.cancel();

  const aliased = await startContainer(node, {
    name: "aliased",
    image: "hello-mim",
    env: { "MCM.API_ALIAS": "true", "MCM.BASE_API_PATH": "/hello/v1" },
  });
  const viaAlias = await fetch(`${node.url}/api/hello/v1/sayHello/alias`).then((r) => r.json());
  assert.deepEqual(viaAlias, { message: "Hello alias!" });
  assert.equal((await fetch(`${serviceUrl(node, aliased)}/`)).status, 200);
  const otherClient = await fetch(`${node.url}/mcm/v1/containers`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${node.apiKey}`,
      "x-client-id": "someone-else",
      "content-type": "application/json",
    },
    body: JSON.stringify({
      name: "second",
      image: "api-hello-mim",
      env: { "MCM.API_ALIAS": "true", "MCM.BASE_API_PATH": "/hello/v1" },
    }),
  });
  await expectError(otherClient, 409, /already serves \/api\/hello\/v1/);
});

Deno.test("an alias may not take a path of the node's services, switched on or off", async () => {
  await using node = await startTestNode({
    config: {
      apiKey: "a-test-key-of-enough-length",
      discovery: { mdns: false },
      storePrefixes: ["/ai/store/v1", "/api/store/v1"],
      // Off now: a microservice there would be shadowed once it is switched on.
      inference: { enabled: false, prefixes: ["/v1", "/api/openai/v1"] },
    },
  });
  const dir = await Deno.makeTempDir();
  const tar = await buildExample(`${EXAMPLES}hello-mim`, `${dir}/hello.tar`);
  await Deno.remove(dir, { recursive: true });
  assert.equal((await postImage(node, tar)).status, 201);
  for (const [path, own] of [["/store/v1", "/api/store/v1"], ["/openai/v1", "/api/openai/v1"]]) {
    await expectError(
      await postContainer(node, {
        name: "a",
        image: "hello-mim",
        env: { "MCM.API_ALIAS": "true", "MCM.BASE_API_PATH": path },
      }),
      409,
      new RegExp(`would shadow the node's own ${own}`),
    );
  }
});
