/**
 * A hostile microservice's outbound requests (issue 34, items 1 and 7): thousands of `fetch`es
 * to a server that never answers are capped per container (over the cap `fetch` fails at once,
 * naming it), their bodies are bounded, each has a deadline, they end the moment their
 * container does, and its sibling never pays for them; an address the node gains after a
 * container started is the node's for that container too.
 */
import assert from "node:assert/strict";
import {
  curlInside,
  namespace,
  namespacesAvailable,
  silentServer,
} from "./helpers/hostile_host_net.ts";
import { containerRecord, deployScript, mcm, scriptImage } from "../testing/mcm.ts";
import { startTestNode, waitFor } from "../testing/node.ts";

const CONFIG = {
  apiKey: "a-test-key-of-enough-length",
  discovery: { mdns: false },
  // The never-answering server is on this machine's loopback.
  mcm: { outboundNetworks: ["public", "private", "loopback"] },
};

/** Fires /flood?n=N fetches at env TARGET; /bodies sends three 3 MB bodies; /results. */
const FLOODER = `var results = { refused: 0, failed: 0, answered: 0, message: "" };
function tally(e) {
  if (/MCM.MAX_OUTBOUND_REQUESTS|request bodies/.test(e.message)) {
    results.refused++;
    results.message = e.name + ": " + e.message;
  } else results.failed++;
}
mimikModule.exports = function (context, req, res) {
  var target = context.env.TARGET;
  if (req.url.indexOf("/flood") === 0) {
    var n = Number(req.url.split("n=")[1]);
    for (var i = 0; i < n; i++) {
      fetch(target + "f" + i).then(function () { results.answered++; }, tally);
    }
    return res.end("fired " + n);
  }
  if (req.url === "/bodies") {
    // One after another, so that the copies of each are collected before the next.
    var body = new Uint8Array(3 * 1024 * 1024);
    [0, 1, 2].forEach(function (j) {
      setTimeout(function () {
        fetch(target + "b" + j, { method: "POST", body: body })
          .then(function () { results.answered++; }, tally);
      }, j * 300);
    });
    return res.end("sent");
  }
  res.end(JSON.stringify(results));
};`;

/** Counts visits in its storage. */
const CALM = `mimikModule.exports = function (context, req, res) {
  var visits = Number(context.storage.getItem("visits") || 0) + 1;
  context.storage.setItem("visits", String(visits));
  res.end(JSON.stringify({ visits: visits }));
};`;

const container = containerRecord;

async function text(url: string): Promise<string> {
  const response = await fetch(url);
  const body = await response.text();
  assert.equal(response.status, 200, `${url}: ${response.status} ${body}`);
  return body;
}

for (const mode of ["per-client", "per-container"] as const) {
  Deno.test(`a fetch flood is capped per container, bounded, cut at the deadline and ended with its container (${mode})`, async () => {
    using server = silentServer();
    await using node = await startTestNode({
      config: { ...CONFIG, mcm: { ...CONFIG.mcm, containerProcess: mode } },
    });
    const env = {
      TARGET: `http://127.0.0.1:${server.port}/`,
      "MCM.MAX_EXECUTION_TIME_SEC": "6",
      "MCM.MEMORY_MB": "32",
    };
    const flooder = await deployScript(node, "flooder", FLOODER, env, "mallory");
    const calm = await deployScript(node, "calm", CALM, { "MCM.MEMORY_MB": "32" }, "mallory");
    assert.equal(JSON.parse(await text(`${calm.url}/`)).visits, 1);

    // 2000 at once: 32 go out, the rest fail at once with the cap's name.
    assert.equal(await text(`${flooder.url}/flood?n=2000`), "fired 2000");
    const results = async () => JSON.parse(await text(`${flooder.url}/results`));
    await waitFor(async () => (await results()).refused === 2000 - 32, "the refusals", 10_000);
    const refused = await results();
    assert.match(refused.message, /^TypeError: .*32 outbound requests at once/);
    assert.match(refused.message, /MCM\.MAX_OUTBOUND_REQUESTS/);
    await waitFor(() => Promise.resolve(server.open() === 32), "32 connections", 10_000);
    assert.equal(server.peak(), 32, "never more than the cap at once");
    if (mode === "per-client") {
      // Its process reports them to the node, which shows them in its record.
      await waitFor(
        async () => (await container(node, flooder.container.id)).usage?.outboundInFlight === 32,
        "the record's outboundInFlight",
        5_000,
      );
    }

    // Their deadline (the execution time) ends them and frees their places.
    await waitFor(() => Promise.resolve(server.open() === 0), "the deadline", 15_000);
    await waitFor(async () => (await results()).failed === 32, "timed out", 5_000);

    // Request bodies held: a quarter of MCM.MEMORY_MB (8 MB) at once: the third is refused.
    assert.equal(await text(`${flooder.url}/bodies`), "sent");
    await waitFor(
      async () => (await results()).refused === 2000 - 32 + 1,
      "a body refused",
      10_000,
    );
    assert.match((await results()).message, /bytes of request bodies in flight/);
    await waitFor(() => Promise.resolve(server.open() === 2), "two bodies sent", 10_000);

    // A stopped container's requests end with it, at once (not at their deadline).
    await text(`${flooder.url}/flood?n=100`);
    await waitFor(() => Promise.resolve(server.open() === 32), "the cap again", 10_000);
    const flooding = await container(node, flooder.container.id);
    assert.equal(flooding.restarts, 0, `the flood never ended its process (${flooding.lastError})`);
    const stopped = Date.now();
    assert.equal(
      (await mcm(node, `/containers/${flooder.container.id}`, { method: "DELETE" })).status,
      200,
    );
    await waitFor(() => Promise.resolve(server.open() === 0), "cancelled", 10_000);
    // At once, not at their deadline (the execution time, 6 s here).
    assert.ok(Date.now() - stopped < 5000, `cancelled in ${Date.now() - stopped} ms`);

    const other = await container(node, calm.container.id);
    assert.equal(other.restarts, 0, `the sibling went on (${other.lastError})`);
    assert.equal(JSON.parse(await text(`${calm.url}/`)).visits, 2, "with its state");
  });
}

const netns = await namespacesAvailable();
if (!netns) console.log("hostile_outbound_test: the address test needs root and 'ip netns'");

/** GET /probe?url fetches url and says what happened. */
const PROBER = `mimikModule.exports = function (context, req, res) {
  var url = decodeURIComponent(req.url.split("url=")[1]);
  fetch(url).then(function (r) { res.end("reached " + r.status); },
    function (e) { res.end("refused: " + e.message); });
};`;

Deno.test({
  name: "an address the node gains after a container started is the node's for it too",
  ignore: !netns,
  async fn() {
    await using ns = await namespace();
    const key = CONFIG.apiKey;
    // The node listens on every address of its namespace, the new one too.
    await using node = await startTestNode({
      wrapper: ["ip", "netns", "exec", ns.name],
      host: "0.0.0.0",
      config: { apiKey: key, discovery: { mdns: false } },
    });
    const port = new URL(node.url).port;
    const base = `http://127.0.0.1:${port}`;
    const auth = ["-H", `authorization: Bearer ${key}`];
    const dir = await Deno.makeTempDir({ prefix: "edgenode-prober-" });
    try {
      await Deno.writeFile(`${dir}/prober.tar`, await scriptImage(PROBER));
      const image = await curlInside(ns.name, [
        ...auth,
        "-F",
        `image=@${dir}/prober.tar`,
        `${base}/mcm/v1/images`,
      ]);
      assert.equal(image.status, 201, image.body);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
    const started = await curlInside(ns.name, [
      ...auth,
      "-H",
      "content-type: application/json",
      "-d",
      JSON.stringify({ name: "prober", image: "prober" }),
      `${base}/mcm/v1/containers`,
    ]);
    assert.equal(started.status, 201, started.body);
    const path = JSON.parse(started.body).env["MCM.BASE_API_PATH"];

    const newcomer = "10.233.7.1";
    const probe = async () =>
      (await curlInside(ns.name, [
        `${base}${path}/probe?url=${encodeURIComponent(`http://${newcomer}:${port}/mcm/v1`)}`,
      ])).body;
    assert.doesNotMatch(await probe(), /^reached/, "not there yet");
    // A VPN or a docker bridge comes up after the deploy.
    const added = await new Deno.Command("ip", {
      args: ["-n", ns.name, "addr", "add", `${newcomer}/32`, "dev", "lo"],
    }).output();
    assert.ok(added.success, "the address was added");
    const answer = await probe();
    assert.match(answer, /^refused: .*a node address/, answer);
  },
});
