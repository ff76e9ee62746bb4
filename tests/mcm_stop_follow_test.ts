/**
 * Stopping, restarting and following a container (spec/mcm.yaml: POST /containers/{id}/stop
 * and /restart, GET /containers/{id}/logs?follow=true) on a real node: a stopped container's
 * base path answers 503 naming it, a node restart keeps it stopped, and a followed log streams
 * new lines and ends when the container is removed.
 */
import assert from "node:assert/strict";
import { EventSourceParserStream } from "eventsource-parser/stream";
import * as v from "valibot";
import { ContainerSchema, LogFollowMessageSchema } from "../gen/mcm/validators.ts";
import { expectError, expectJson } from "../testing/contract.ts";
import {
  deployExample,
  deployScript,
  getJson,
  mcm,
  serviceUrl,
  startContainer,
} from "../testing/mcm.ts";
import { startTestNode, waitFor, withTempDir } from "../testing/node.ts";
import {
  MAX_FOLLOWERS_PER_CLIENT,
  MAX_FOLLOWERS_PER_NODE,
} from "../src/mcm/runtime/log_followers.ts";

const CONFIG = { apiKey: "a-test-key-of-enough-length", discovery: { mdns: false } };

/** POST /mcm/v1/containers/{id}/{verb}, checked against the spec. */
async function change(node: Parameters<typeof mcm>[0], id: string, verb: "stop" | "restart") {
  return await expectJson(
    await mcm(node, `/containers/${id}/${verb}`, { method: "POST" }),
    200,
    ContainerSchema,
  );
}

Deno.test("a stopped container answers 503 naming it, stays stopped over a node restart, and restarts", () =>
  withTempDir(async (dataDir) => {
    await Deno.writeTextFile(`${dataDir}/config.json`, JSON.stringify(CONFIG), { mode: 0o600 });
    let url: string;
    {
      await using node = await startTestNode({ dataDir });
      const deployed = await deployExample(node, "hello-mim", "pausable");
      url = deployed.url;
      assert.equal((await change(node, "pausable", "stop")).state, "stopped");
      const stopped = await fetch(`${url}/`);
      assert.equal(stopped.headers.get("retry-after"), null, "it will not come back by itself");
      await expectError(stopped, 503, /container api-pausable is stopped/);
      assert.equal((await change(node, "api-pausable", "stop")).state, "stopped", "a no-op");
      await expectError(await mcm(node, "/containers/nobody/stop", { method: "POST" }), 404);
    }
    await using node = await startTestNode({ dataDir });
    url = url.replace(/^http:\/\/[^/]+/, node.url);
    const kept = await expectJson(await mcm(node, "/containers/pausable"), 200, ContainerSchema);
    assert.equal(kept.state, "stopped", "a node restart keeps it stopped");
    assert.equal(await fetch(`${url}/`).then((r) => r.text().then(() => r.status)), 503);

    const restarted = await change(node, "pausable", "restart");
    assert.equal(restarted.state, "started");
    assert.equal(restarted.restarts, 0, "a restart asked for is not a crash");
    assert.equal((await getJson(`${url}/`)).status, 200);
    // Restarting a running one starts it afresh; through the /mims alias too.
    assert.equal((await change(node, "pausable", "restart")).state, "started");
    const viaMims = await mcm(node, "/mims/pausable/stop", { method: "POST" });
    assert.equal(v.parse(ContainerSchema, await viaMims.json()).state, "stopped");
    await expectJson(
      await mcm(node, "/mims/pausable/restart", { method: "POST" }),
      200,
      ContainerSchema,
    );
    await node.stop();
    // Restarted: a node restart brings it back running.
    await using again = await startTestNode({ dataDir });
    const back = url.replace(/^http:\/\/[^/]+/, again.url);
    await waitFor(
      async () => (await fetch(`${back}/`).then((r) => r.text().then(() => r.status))) === 200,
      "the restarted container back after the node's restart",
    );
    // A redeploy of a stopped container starts it.
    assert.equal((await change(again, "pausable", "stop")).state, "stopped");
    const redeployed = await startContainer(again, { name: "pausable", image: "pausable" }, 200);
    assert.equal(redeployed.state, "started");
    assert.equal((await getJson(`${back}/`)).status, 200);
  }));

Deno.test("a followed log streams the recent lines, new ones, and ends when the container goes", async () => {
  await using node = await startTestNode({ config: CONFIG });
  const { url } = await deployExample(node, "hello-mim", "chatty");
  await expectError(await mcm(node, "/containers/nobody/logs?follow=true"), 404);
  const response = await mcm(node, "/containers/chatty/logs?follow=true");
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("content-type"), "text/event-stream");
  const events = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(
    new EventSourceParserStream(),
  )[Symbol.asyncIterator]();
  const next = async () =>
    v.parse(LogFollowMessageSchema, JSON.parse((await events.next()).value.data));
  const first = await next();
  assert.ok("level" in first && first.level === "node" && /started in/.test(first.message));
  await getJson(`${url}/sayHello/Ada`);
  let message = await next();
  while ("level" in message && message.message !== "GET /sayHello/Ada") message = await next();
  await mcm(node, "/containers/chatty", { method: "DELETE" }).then((r) => r.body?.cancel());
  do message = await next(); while (!("end" in message));
  assert.deepEqual(message, { end: "removed", message: "container api-chatty was removed" });
  assert.equal((await events.next()).done, true, "the stream ends");
});

Deno.test("a followed log ends when the node stops, and does not hold the node up", async () => {
  await using node = await startTestNode({ config: CONFIG });
  await deployExample(node, "hello-mim", "lasting");
  const response = await mcm(node, "/containers/lasting/logs?follow=true");
  const text = response.text();
  const began = Date.now();
  await node.stop();
  assert.ok(Date.now() - began < 10_000, `the node stopped in ${Date.now() - began} ms`);
  const last = (await text).trimEnd().split("\n\n").at(-1);
  assert.deepEqual(JSON.parse(last!.slice("data: ".length)), {
    end: "node_stopping",
    message: "the node is stopping",
  });
});

/** A microservice whose code takes 1.2 s to load (a busy loop at load). */
const SLOW_LOAD = `var t = Date.now(); while (Date.now() - t < 1200) {}
mimikModule.exports = function (context, req, res) { res.end('ok'); };`;

/** A data folder whose node ran container `slow` (SLOW_LOAD) and stopped. */
async function slowAfterRestart(dataDir: string): Promise<void> {
  await Deno.writeTextFile(`${dataDir}/config.json`, JSON.stringify(CONFIG), { mode: 0o600 });
  await using node = await startTestNode({ dataDir });
  await deployScript(node, "slow", SLOW_LOAD);
}

/** The messages of container `id`'s log that say it started. */
async function starts(node: Parameters<typeof mcm>[0], id: string): Promise<string[]> {
  const { data } = await (await mcm(node, `/containers/${id}/logs`)).json();
  return data.map((line: { message: string }) => line.message).filter((message: string) =>
    message.startsWith("started in")
  );
}

Deno.test("a stop while the container loads (after a node restart) is kept: it stays stopped", () =>
  withTempDir(async (dataDir) => {
    await slowAfterRestart(dataDir);
    await using node = await startTestNode({ dataDir });
    assert.equal((await change(node, "slow", "stop")).state, "stopped");
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const after = await expectJson(await mcm(node, "/containers/slow"), 200, ContainerSchema);
    assert.equal(after.state, "stopped", "the load that was under way did not start it");
    assert.deepEqual(await starts(node, "slow"), []);
    await expectError(await fetch(`${serviceUrl(node, after)}/`), 503, /is stopped/);
  }));

Deno.test("a restart while the container loads (after a node restart) leaves one process", () =>
  withTempDir(async (dataDir) => {
    await slowAfterRestart(dataDir);
    await using node = await startTestNode({ dataDir });
    const restarted = await change(node, "slow", "restart");
    assert.equal(restarted.state, "started");
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const started = await starts(node, "slow");
    assert.equal(started.length, 1, `one start, not two: ${started.join("; ")}`);
    assert.equal((await getJson(`${serviceUrl(node, restarted)}/`)).status, 200);
  }));

Deno.test("followed logs are capped per client and per node: 429 naming the cap", async () => {
  await using node = await startTestNode({ config: CONFIG });
  await deployExample(node, "hello-mim", "watched");
  const open: Response[] = [];
  const follow = (client: string) =>
    mcm(node, "/containers/api-watched/logs?follow=true", { headers: { "x-client-id": client } });
  try {
    for (let i = 0; i < MAX_FOLLOWERS_PER_CLIENT; i++) {
      const response = await follow("one");
      assert.equal(response.status, 200);
      open.push(response);
    }
    await expectError(await follow("one"), 429, /follows 8 logs already.*\(8\)/);
    // A follower that goes frees its place.
    await open.shift()!.body!.cancel();
    await waitFor(async () => {
      const again = await follow("one");
      if (again.status === 200) open.push(again);
      else await again.body?.cancel();
      return again.status === 200;
    }, "a place freed by a follower that went");
    for (let client = 2; open.length < MAX_FOLLOWERS_PER_NODE; client++) {
      for (let i = 0; i < MAX_FOLLOWERS_PER_CLIENT && open.length < MAX_FOLLOWERS_PER_NODE; i++) {
        const response = await follow(`client-${client}`);
        assert.equal(response.status, 200);
        open.push(response);
      }
    }
    const full = await follow("one-more");
    assert.equal(full.headers.get("retry-after"), "5");
    await expectError(full, 429, /the node has 32 followed logs open, its most \(32\)/);
  } finally {
    await Promise.all(open.map((response) => response.body?.cancel()));
  }
});

Deno.test("a restart that fails for another reason than the code is retried: 503, state restarting", () =>
  withTempDir(async (dataDir) => {
    await slowAfterRestart(dataDir);
    // The same code, on a node that gives it 1 s to load: each start times out (not a LoadError).
    const config = { ...CONFIG, mcm: { loadTimeoutSeconds: 1 } };
    await Deno.writeTextFile(`${dataDir}/config.json`, JSON.stringify(config), { mode: 0o600 });
    await using node = await startTestNode({ dataDir });
    const failed = await mcm(node, "/containers/slow/restart", { method: "POST" });
    assert.equal(failed.headers.get("retry-after"), "1");
    await expectError(failed, 503, /did not load within 1 s.*retried/);
    const after = await expectJson(await mcm(node, "/containers/slow"), 200, ContainerSchema);
    assert.notEqual(after.state, "failed", "it is being retried, not given up");
    const { data } = await (await mcm(node, "/containers/slow/logs")).json();
    const messages = data.map((line: { message: string }) => line.message).join("\n");
    assert.match(messages, /the start failed; restarting in \d+ ms/);
  }));

Deno.test("requests under way at a stop get 502, a busy process killed once the 2 s grace ends", async () => {
  await using node = await startTestNode({ config: CONFIG });
  const { url } = await deployScript(
    node,
    "inflight",
    `mimikModule.exports = function (context, req, res) {
      if (req.url.indexOf('busy') < 0) return void setTimeout(function () { res.end('late'); }, 1000);
      var t = Date.now(); while (Date.now() - t < 5000) {} res.end('busy, done');
    };`,
  );
  const under = (path: string) => fetch(`${url}/${path}`);
  const waiting = under("waiting");
  const busy = under("busy");
  await new Promise((resolve) => setTimeout(resolve, 300));
  const began = Date.now();
  assert.equal((await change(node, "inflight", "stop")).state, "stopped");
  const stoppedIn = Date.now() - began;
  assert.ok(stoppedIn < 4000, `the busy one was killed after the grace: ${stoppedIn} ms`);
  for (const answer of [await waiting, await busy]) {
    await expectError(answer, 502, /the microservice's process ended during the request/);
  }
});
