/**
 * `<nodeId>@mmesh/<path>` resolved by the runtime: two real nodes on loopback in a private mDNS
 * group (as tests/mesh_services_test.ts), a microservice on A calls B's microservice through
 * `context.http.request` (mode "stream") and through `fetch`, without resolving B itself, and
 * B's answer streams back. A's microservices may not reach loopback (the default
 * `mcm.outboundNetworks`): the mesh reaches B, a plain `http://127.0.0.1:<B>` stays refused.
 * An unknown node is a 404 in the reference's shape, and a peer whose description names an
 * address where it is not (A's loopback) is not called there.
 */
import assert from "node:assert/strict";
import { deployScript } from "../testing/mcm.ts";
import {
  announcement,
  describeImpostor,
  impostorKey,
  linkLocalNodes,
  nodeIdOf,
  openMdnsClient,
  proofFor,
  randomMdnsPort,
  startMeshNode,
} from "../testing/mesh.ts";
import { waitFor } from "../testing/node.ts";
import { SCRIPTED_MILM as MILM_STYLE } from "./helpers/reference_style_mims.ts";

const CLIENT = "0b6c4a2e-6f4b-4d4e-9a51-3c2f1e0d9b8a";

/**
 * A's microservice: sends the request's body to `?target=` as it is written, through
 * `context.http.request` (`/http`) or `fetch` (`/fetch`), and streams back what comes; a
 * failure is answered `{status, message, content}` with status 599.
 */
const CALLER = `
function fail(res, e) {
  try {
    res.statusCode = 599;
  } catch (x) {
    // Streaming already: the status went.
  }
  res.end(JSON.stringify({ status: e.status, message: e.message, content: e.content }));
}
mimikModule.exports = function (context, req, res) {
  var path = req.url.split('?')[0];
  var target = decodeURIComponent(req.url.split('target=')[1] || '');
  var idle = (req.url.match(/[?&]idle=([0-9]+)/) || [])[1];
  var headers = { 'content-type': 'application/json', 'x-trace': 'trace-' + path.slice(1) };
  // A caller that sends the hub's credential on every call: B, on the LAN, must not get it.
  headers['x-edge-authorization'] = 'Bearer a.b.c';
  if (path === '/http') {
    return context.http.request({
      url: target, type: 'POST', headers: headers, data: req.body, mode: 'stream',
      socketTimeout: idle ? Number(idle) : undefined,
      success: function (chunk) {
        if (chunk.data) res.write(chunk.data);
        if (chunk.done) res.end();
      },
      error: function (e) { fail(res, e); }
    });
  }
  fetch(target, { method: 'POST', headers: headers, body: req.body }).then(function (answer) {
    if (answer.status >= 400) {
      return answer.text().then(function (text) {
        fail(res, { status: answer.status, message: 'HTTP ' + answer.status, content: text });
      });
    }
    var reader = answer.body.getReader();
    var decoder = new TextDecoder();
    function pump() {
      return reader.read().then(function (r) {
        if (r.done) return res.end();
        res.write(decoder.decode(r.value, { stream: true }));
        return pump();
      });
    }
    return pump();
  }).catch(function (e) { fail(res, { status: 0, message: String(e && e.message) }); });
};`;

/** What arrived of a streamed answer, and when. */
async function arrivals(response: Response) {
  const parts: { at: number; text: string }[] = [];
  const decoder = new TextDecoder();
  for await (const chunk of response.body!) {
    parts.push({ at: Date.now(), text: decoder.decode(chunk, { stream: true }) });
  }
  return parts;
}

Deno.test("a microservice on A calls <nodeB>@mmesh/... itself: B's answer streams, loopback stays closed", async () => {
  const port = randomMdnsPort();
  // Both nodes' default mcm.outboundNetworks: public and private, no loopback.
  await using a = await startMeshNode(port, { name: "a", announceSeconds: 30 });
  await using b = await startMeshNode(port, { name: "b", announceSeconds: 30 });
  const bId = await nodeIdOf(b);
  await waitFor(
    async () => (await linkLocalNodes(a)).some((n: { id: string }) => n.id === bId),
    "A to list B",
  );
  await deployScript(b, "milm-v1", MILM_STYLE, { "MCM.BASE_API_PATH": "/milm/v1" }, CLIENT);
  const caller = await deployScript(a, "caller", CALLER, {}, CLIENT);
  const call = (how: string, target: string, content = "hello B") =>
    fetch(`${caller.url}/${how}?target=${encodeURIComponent(target)}`, {
      method: "POST",
      body: JSON.stringify({ messages: [{ role: "user", content }] }),
    });
  const path = `${CLIENT}/milm/v1/chat/completions`;

  for (
    const [how, target] of [
      ["http", `${bId}@mmesh/${path}`],
      ["fetch", `http://${bId}@mmesh/${path}`],
    ]
  ) {
    const answer = await call(how, target, `hello B by ${how}`);
    assert.equal(answer.status, 200, `${how}: ${answer.status}`);
    const parts = await arrivals(answer);
    const events = parts.map((p) => p.text).join("").split("\n\n").filter(Boolean)
      .map((e) => e.replace(/^data: /, ""));
    assert.equal(events.pop(), "[DONE]", how);
    assert.deepEqual(
      events.map((e) => JSON.parse(e)),
      ["one", "two", "three"].map((part) => ({
        node: bId,
        asked: `hello B by ${how}`,
        trace: `trace-${how}`,
        part,
      })),
      how,
    );
    // Streamed: the first part came well before the last was written (600 ms later).
    const firstAt = parts.find((p) => p.text.includes('"one"'))!.at;
    const lastAt = parts.find((p) => p.text.includes('"three"'))!.at;
    assert.ok(lastAt - firstAt >= 300, `${how}: parts arrived ${lastAt - firstAt} ms apart`);
  }

  // The caller's time without data (socketTimeout) holds across the mesh too: B waits 300 ms.
  const idle = await fetch(
    `${caller.url}/http?idle=100&target=${encodeURIComponent(`${bId}@mmesh/${path}`)}`,
    { method: "POST", body: JSON.stringify({ messages: [{ role: "user", content: "slow" }] }) },
  );
  const cut = await idle.text();
  assert.match(cut, /"part":"one"/, "the first part came");
  assert.doesNotMatch(cut, /"part":"two"/, cut);
  assert.match(cut, /timed out \(no data within 100 ms\)/, cut);

  // The same B, addressed plainly: loopback is not A's microservices' to reach.
  const plain = `${b.url}/${path}`;
  for (const how of ["http", "fetch"]) {
    const refused = await call(how, plain);
    assert.equal(refused.status, 599, `${how} to ${plain}`);
    const why = await refused.json();
    assert.equal(why.status, 0, `${how}: no response`);
    assert.match(why.message, /loopback|refused|not capable|net access/i, `${how}: ${why.message}`);
  }

  // Hostile spellings: an address smuggled after the mesh name is no mesh URL (a URL with
  // credentials, refused), and a path that names another host stays a path of B.
  const smuggled = await call("fetch", `http://${bId}@mmesh@127.0.0.1:${new URL(b.url).port}/`);
  assert.equal(smuggled.status, 599);
  assert.equal((await smuggled.json()).status, 0);
  const pathOnly = await call("http", `${bId}@mmesh//169.254.169.254/latest/meta-data`);
  assert.equal(pathOnly.status, 599);
  const onB = await pathOnly.json();
  assert.equal(onB.status, 404, JSON.stringify(onB));
  assert.match(onB.content, /no route for POST \/169\.254\.169\.254\//, onB.content);

  // A names itself too: its own answer (no milm-v1 on A: the gateway's 404), not "no such node".
  const self = await call("http", `${await nodeIdOf(a)}@mmesh/${path}`);
  assert.equal(self.status, 599);
  const onA = await self.json();
  assert.equal(onA.status, 404, JSON.stringify(onA));
  assert.match(onA.content, /no microservice at/, onA.content);

  // An unknown node: 404 in the reference's shape, through both.
  const nobody = `${"0".repeat(56)}@mmesh/${path}`;
  for (const how of ["http", "fetch"]) {
    const unknown = await call(how, nobody);
    assert.equal(unknown.status, 599);
    const why = await unknown.json();
    assert.equal(why.status, 404, `${how}: ${JSON.stringify(why)}`);
    const body = JSON.parse(why.content);
    assert.equal(body.statusCode, 404);
    assert.match(body.message, /Cannot find node 0{56}/);
  }
});

Deno.test("a peer that claims someone else's address (A's loopback) is not called through the mesh", async () => {
  const port = randomMdnsPort();
  await using a = await startMeshNode(port, { name: "a", announceSeconds: 30 });
  // What listens on A's loopback and is no node: it must never see the microservice's request.
  const seen: string[] = [];
  const victim = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    seen.push(new URL(request.url).pathname);
    return new Response("a loopback service's secret");
  });
  // A peer with a key of its own, proving itself where it listens, describing itself as the
  // victim's address.
  const impostor = await impostorKey();
  const fake = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const url = new URL(request.url);
    const node = describeImpostor(impostor.id, "claims", victim.addr.port);
    return Response.json({
      data: {
        id: impostor.id,
        proof: await proofFor(impostor, url.searchParams.get("challenge")!, node),
      },
    });
  });
  const group = await openMdnsClient(port);
  try {
    await group.send(announcement({ id: impostor.id, name: "claims", port: fake.addr.port }));
    await waitFor(
      async () => (await linkLocalNodes(a)).some((n: { id: string }) => n.id === impostor.id),
      "A to list the impostor",
    );
    const caller = await deployScript(a, "caller", CALLER, {}, CLIENT);
    for (const how of ["http", "fetch"]) {
      const answer = await fetch(
        `${caller.url}/${how}?target=${encodeURIComponent(`${impostor.id}@mmesh/secret`)}`,
        { method: "POST", body: "{}" },
      );
      assert.equal(answer.status, 599, how);
      const why = await answer.json();
      assert.equal(why.status, 0, `${how}: ${JSON.stringify(why)}`);
      assert.match(why.message, /is not that node's/, how);
    }
    assert.ok(!seen.includes("/secret"), `the victim saw ${JSON.stringify(seen)}`);
  } finally {
    await group.close();
    await fake.shutdown();
    await victim.shutdown();
  }
});
