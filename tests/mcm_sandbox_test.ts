/**
 * The sandbox: a hostile microservice cannot read the node's files, its environment, spawn,
 * load native code or reach the network by itself, and its runaway loop or memory exhaustion
 * costs only its own requests: the node and another container keep answering, and it comes
 * back.
 */
import assert from "node:assert/strict";
import { ContainerSchema } from "../gen/mcm/validators.ts";
import { expectError, expectJson } from "../testing/contract.ts";
import {
  deployExample,
  getJson,
  mcm,
  postContainer,
  scriptImage,
  serviceUrl,
  startContainer,
  uploadImage,
} from "../testing/mcm.ts";
import { startTestNode, type TestNode, waitFor } from "../testing/node.ts";

const CONFIG = { apiKey: "a-test-key-of-enough-length", discovery: { mdns: false } };

/** A microservice that tries everything it must not be able to do. */
function hostileScript(node: TestNode): string {
  const key = `${node.dataDir}/identity/node-key.json`;
  return `
var KEY = ${JSON.stringify(key)};
function attempt(fn) {
  try { var value = fn(); return Promise.resolve(value).then(function (v) { return "LEAKED " + JSON.stringify(v).slice(0, 80); }, function (e) { return e.name; }); }
  catch (e) { return Promise.resolve(e.name); }
}
var NODE = "http://127.0.0.1:${new URL(node.url).port}";
// A refusal by status is an outcome; a body the node served would be a leak.
function status(response) { return response.status === 403 ? Promise.reject({ name: "status 403" }) : response.text(); }
var probes = {
  deno: function () { return typeof Deno === "undefined" ? Promise.reject({ name: "NoDeno" }) : Deno.readTextFileSync(KEY); },
  process: function () { return typeof process === "undefined" ? Promise.reject({ name: "NoProcess" }) : process.env; },
  // A client's process exposes V8's gc to its sandbox, which compacts its heap with it.
  gc: function () { return typeof gc === "undefined" ? Promise.reject({ name: "NoGc" }) : gc(); },
  importKey: function () { return eval('import("file://' + KEY + '", { with: { type: "json" } })'); },
  importFunction: function () { return Function('return import("node:fs")')(); },
  importAsync: function () { return (async function () {}).constructor('return import("node:sqlite")')(); },
  importData: function () { return eval("import('data:text/javascript,export default 1')"); },
  importComment: function () { return eval("import/**/('node:fs')"); },
  importMeta: function () { return new Function("return import.meta")(); },
  timerString: function () { return setTimeout("globalThis.pwned = 1", 0); },
  worker: function () { return new Worker("data:text/javascript,1", { type: "module" }); },
  fetchFile: function () { return fetch("file://" + KEY).then(function (r) { return r.text(); }); },
  nodeStore: function () { return fetch(NODE + "/ai/store/v1/models").then(status); },
  nodeToken: function () { return fetch(NODE + "/jsonrpc/v1", { method: "POST", body: '{"jsonrpc":"2.0","id":1,"method":"getEdgeIdToken"}' }).then(status); },
  loopback: function () { return fetch("http://127.0.0.2:${
    new URL(node.url).port
  }/").then(status); },
  localhostName: function () { return fetch("http://localhost:1/").then(status); },
  zeros: function () { return fetch("http://0.0.0.0:9/").then(status); },
  metadata: function () { return fetch("http://169.254.169.254/latest/meta-data/").then(status); },
};
mimikModule.exports = function (context, req, res) {
  var path = req.url.split("?")[0];
  if (path === "/probe") {
    var names = Object.keys(probes);
    return Promise.all(names.map(function (n) { return attempt(probes[n]); })).then(function (results) {
      var out = {};
      names.forEach(function (n, i) { out[n] = results[i]; });
      res.end(JSON.stringify(out));
    });
  }
  if (path === "/loop") { while (true) {} }
  if (path === "/oom") { var hoard = []; while (true) hoard.push(new Array(1e6).fill(Math.random())); }
  if (path === "/throw") throw new Error("boom");
  res.end(JSON.stringify({ ok: true }));
};`;
}

async function deployHostile(node: TestNode) {
  const archive = await scriptImage(hostileScript(node));
  await uploadImage(node, archive, "hostile.tar");
  const container = await startContainer(node, {
    name: "hostile",
    image: "hostile",
    env: { "MCM.MAX_EXECUTION_TIME_SEC": "1", "MCM.MEMORY_MB": "32" },
  });
  return { container, url: serviceUrl(node, container) };
}

async function timed<T>(work: Promise<T>): Promise<{ value: T; ms: number }> {
  const start = performance.now();
  const value = await work;
  return { value, ms: performance.now() - start };
}

async function restarted(node: TestNode, id: string, after: number) {
  await waitFor(
    async () => {
      const c = await expectJson(await mcm(node, `/containers/${id}`), 200, ContainerSchema);
      return c.state === "started" && c.restarts > after;
    },
    `${id} restarted`,
    20_000,
  );
}

Deno.test("a hostile microservice reaches none of the node's files, env, processes or network", async () => {
  await using node = await startTestNode({ config: CONFIG });
  const { url, container } = await deployHostile(node);
  const { status, body } = await getJson(`${url}/probe`);
  assert.equal(status, 200);
  for (const [probe, outcome] of Object.entries(body)) {
    assert.ok(!String(outcome).startsWith("LEAKED"), `${probe}: ${outcome}`);
  }
  assert.equal(body.deno, "NoDeno");
  assert.equal(body.process, "NoProcess");
  assert.equal(body.gc, "NoGc");
  for (const probe of ["importKey", "importFunction", "importAsync", "importData"]) {
    assert.equal(body[probe], "EvalError", probe);
  }
  assert.equal(body.importComment, "EvalError");
  assert.equal(body.importMeta, "EvalError");
  assert.equal(body.timerString, "TypeError");
  assert.equal(body.worker, "ReferenceError");
  assert.equal(body.fetchFile, "TypeError");
  // The node's own API is not the microservice's: only its listing answers (403 otherwise),
  // and no other loopback or link-local address is reached, by address or by name.
  assert.equal(body.nodeStore, "status 403");
  assert.equal(body.nodeToken, "status 403");
  for (const probe of ["loopback", "localhostName", "zeros", "metadata"]) {
    assert.equal(body[probe], "TypeError", probe);
  }
  await assert.rejects(Deno.stat(`${node.dataDir}/pwned`), Deno.errors.NotFound);
  const failed = await getJson(`${url}/throw`);
  assert.equal(failed.status, 500);
  assert.doesNotMatch(failed.body.error.message, /boom/, "the error's text is not the caller's");
  const reference = /logged as (\w+)/.exec(failed.body.error.message)?.[1];
  assert.ok(reference, failed.body.error.message);
  const logs = await mcm(node, `/containers/${container.id}/logs`);
  assert.match(await logs.text(), new RegExp(`\\[${reference}\\] GET .* failed: .*boom`));
  assert.equal((await getJson(`${url}/ok`)).body.ok, true, "an exception ends only its request");
});

Deno.test("a runaway loop or memory exhaustion harms only its own container, which comes back", async () => {
  await using node = await startTestNode({ config: CONFIG });
  const hostile = await deployHostile(node);
  const bystander = await deployExample(node, "hello-mim", "bystander");

  const looping = timed(fetch(`${hostile.url}/loop`));
  await new Promise((resolve) => setTimeout(resolve, 200));
  const during = await timed(getJson(`${bystander.url}/sayHello/you`));
  assert.deepEqual(during.value.body, { message: "Hello you!" });
  assert.ok(during.ms < 500, `the other container answered in ${during.ms} ms`);
  assert.equal((await fetch(`${node.url}/mds/v1/nodes?ping=true`)).status, 200);
  const loop = await looping;
  await expectError(loop.value, 504, /did not answer within 1 s/);
  assert.ok(loop.ms < 3000, `504 after ${loop.ms} ms`);
  await restarted(node, "api-hostile", 0);
  assert.equal((await getJson(`${hostile.url}/ok`)).body.ok, true);

  const oom = await fetch(`${hostile.url}/oom`);
  assert.ok([502, 504].includes(oom.status), `the exhausting request got ${oom.status}`);
  await oom.body?.cancel();
  assert.deepEqual((await getJson(`${bystander.url}/`)).body, { message: "Hello from hello-mim" });
  await restarted(node, "api-hostile", 1);
  assert.equal((await getJson(`${hostile.url}/ok`)).body.ok, true);

  const logs = await (await mcm(node, "/containers/api-hostile/logs")).json();
  const said = logs.data.map((line: { message: string }) => line.message).join("\n");
  assert.match(said, /no answer to a ping|ran \d+ ms without yielding/);
  assert.match(said, /restarting in/);
});

Deno.test("code that does not load is refused with 422; a failed redeploy keeps the old one", async () => {
  await using node = await startTestNode({ config: CONFIG });
  const pack = scriptImage;
  await uploadImage(node, await pack("export default { fetch() {} }"), "esm.tar");
  await expectError(
    await postContainer(node, { name: "esm", image: "esm" }),
    422,
    /did not start: SyntaxError/,
  );
  await uploadImage(node, await pack("mimikModule.exports = 42;"), "nohandler.tar");
  await expectError(
    await postContainer(node, { name: "nohandler", image: "nohandler" }),
    422,
    /must set mimikModule.exports/,
  );
  await uploadImage(
    node,
    await pack('mimikModule.exports = function (c, q, r) { r.end("v1"); };'),
    "svc.tar",
  );
  const v1 = await startContainer(node, { name: "svc", image: "svc" });
  await uploadImage(node, await pack('throw new Error("broken v2");'), "svc.tar");
  await expectError(await postContainer(node, { name: "svc", image: "svc" }), 422, /broken v2/);
  assert.equal(await (await fetch(serviceUrl(node, v1))).text(), "v1", "the old one still serves");
});
