/**
 * Compatibility with microservices written the way the reference vendor's helper libraries and
 * published microservices write them (tests/helpers/reference_mims.ts): platform probes, a
 * patched setTimeout, the edge polyfill, discovery through localhost, context.http.request's
 * modes and failures, storage files, and the reference's deploy calls.
 */
import assert from "node:assert/strict";
import { packImage } from "../src/cli/image_build.ts";
import { ImageListSchema } from "../gen/mcm/validators.ts";
import { expectJson } from "../testing/contract.ts";
import { startFileServer } from "../testing/file_server.ts";
import { cliToken, makeIssuer, rpc } from "../testing/identity.ts";
import {
  getJson,
  mcm,
  scriptImage,
  serviceUrl,
  startContainer,
  uploadImage,
} from "../testing/mcm.ts";
import { sha256Hex, startTestNode, type TestNode, withTempDir } from "../testing/node.ts";
import { REFERENCE_MIM } from "./helpers/reference_mims.ts";

const CONFIG = { apiKey: "a-test-key-of-enough-length", discovery: { mdns: false } };
const LOOPBACK = { ...CONFIG, mcm: { outboundNetworks: ["public", "private", "loopback"] } };
const encoder = new TextEncoder();

/** Uploads and starts the reference-style microservice; returns its URL. */
async function deployReference(node: TestNode, name = "refmim"): Promise<string> {
  await uploadImage(node, await scriptImage(REFERENCE_MIM), `${name}.tar`);
  return serviceUrl(node, await startContainer(node, { name, image: name }));
}

/** GET /fetch of the microservice: its context.http.request with these options. */
async function viaMim(url: string, options: Record<string, string>) {
  const { status, body } = await getJson(`${url}/fetch?${new URLSearchParams(options)}`);
  assert.equal(status, 200, JSON.stringify(body));
  return body;
}

Deno.test("reference: platform probes, context.ml's errors, a patched setTimeout and the edge polyfill", async () => {
  await using node = await startTestNode({ config: CONFIG });
  await using files = startFileServer();
  const url = await deployReference(node);
  const { status, body } = await getJson(`${url}/probe`);
  assert.equal(status, 200, JSON.stringify(body));
  for (const [name, type] of Object.entries(body.types)) {
    assert.equal(type, "undefined", `typeof ${name}`);
  }
  assert.equal(Object.keys(body.types).length, 11);
  assert.equal(body.debugEnv, "undefined");
  assert.equal(body.globalIsGlobalThis, true, "webpack's global detection finds the global");
  assert.equal(body.gSetImmediate, "function");
  assert.equal(body.setImmediate, "function");
  assert.equal(body.clearImmediate, "function");
  assert.equal(body.base64, "aGk=");
  assert.equal(body.encodedLength, 5);
  assert.equal(body.decoded, "été");
  assert.equal(body.consoleLog, "function");
  // This node is AI-enabled: the reference's ml-less path (501) is not taken, and a model the
  // registry lacks comes back through the error callback.
  assert.equal(body.ml, "object");
  const ml = await getJson(`${url}/ml`);
  assert.equal(ml.status, 404, JSON.stringify(ml.body));
  assert.match(ml.body.message, /model 'no-such-model' not found in the model registry/);

  // The bundle replaced setTimeout with a wrapper of setImmediate.
  for (let i = 0; i < 2; i++) {
    const late = await fetch(`${url}/late`);
    assert.equal(late.status, 200);
    assert.equal(await late.text(), "late");
  }

  // Object.assign onto context.edge at every request: the second request works as the first.
  const me = await rpc(node, "getMe");
  for (let i = 0; i < 2; i++) {
    assert.deepEqual(await getJson(`${url}/polyfill`), {
      status: 200,
      body: {
        info: { nodeId: me.nodeId, httpPort: new URL(node.url).port },
        decrypt: "function",
        clusterDiscovery: "function",
      },
    });
  }
  assert.equal((await getJson(`${url}/nowhere`)).status, 404);

  // By default a microservice does not reach this machine's loopback.
  const refused = await viaMim(url, { url: files.serve("/small.txt", encoder.encode("hello")) });
  assert.equal(refused.error?.status, 0);
  assert.match(refused.error.message, /outboundNetworks/);
  assert.equal(files.requests.length, 0, "nothing reached the file server");
});

Deno.test("reference: discovery through localhost, decrypted with the caller's token", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    await using node = await startTestNode({ config: CONFIG, args: ["--trust", issuer.trustFile] });
    await rpc(node, "associateAccount", [
      await cliToken(issuer, "acct-1", "edge:account:associate"),
    ]);
    const me = await rpc(node, "getMe");
    const url = await deployReference(node);
    const token = await cliToken(issuer, "acct-1", "edge:clusters");
    for (let i = 0; i < 2; i++) {
      const { status, body } = await getJson(`${url}/nodes`, {
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(status, 200, JSON.stringify(body));
      assert.ok(Array.isArray(body.localLinkNetwork?.nodes), JSON.stringify(body));
      assert.ok(
        body.localLinkNetwork.nodes.some((n: { id: string }) => n.id === me.nodeId),
        "the listing holds the node itself",
      );
    }
    const denied = async (headers: Record<string, string>) => {
      const { status, body } = await getJson(`${url}/nodes`, { headers });
      assert.equal(status, 403, JSON.stringify(body));
      assert.match(body.message, /token/i);
      assert.ok([401, 403].includes(body.status), JSON.stringify(body));
    };
    await denied({});
    await denied({ authorization: "Bearer not-a-token" });
    await denied({ authorization: `Bearer ${await cliToken(issuer, "acct-2", "edge:clusters")}` });
    await denied({
      authorization: `Bearer ${await cliToken(issuer, "acct-1", "edge:account:associate")}`,
    });

    assert.deepEqual(await getJson(`${url}/ping`), { status: 200, body: { id: me.nodeId } });
    for (const [path, type] of [["/ai/store/v1/models", "GET"], ["/jsonrpc/v1", "POST"]]) {
      const { body } = await getJson(`${url}/node-api?${new URLSearchParams({ path, type })}`);
      assert.equal(body.status, 403, `${type} ${path}: ${JSON.stringify(body)}`);
      assert.equal(body.leaked, undefined);
    }
    const bep = await getJson(`${url}/bep`);
    assert.equal(bep.status, 200);
    assert.equal(bep.body.status, 503);
    assert.match(bep.body.message, /hub/);
  }));

Deno.test("reference: context.http.request streams, saves to a file, fails and times out", async () => {
  await using node = await startTestNode({ config: LOOPBACK });
  await using files = startFileServer();
  const url = await deployReference(node);

  // (a) stream mode: several chunks with done:false, then one done:true.
  const text = "0123456789abcdef".repeat(20_000);
  const streamed = await viaMim(url, {
    url: files.serve("/big.txt", encoder.encode(text)),
    mode: "stream",
  });
  assert.equal(streamed.error, undefined, JSON.stringify(streamed.error));
  const last = streamed.calls.at(-1);
  assert.equal(last.done, true);
  assert.ok(streamed.calls.length >= 3, `${streamed.calls.length} calls`);
  assert.ok(streamed.calls.slice(0, -1).every((c: { done: boolean }) => c.done === false));
  assert.equal(streamed.calls.filter((c: { done: boolean }) => c.done).length, 1);
  assert.equal(streamed.total, text.length);

  // (b) outputFile: the body goes to the container's storage, then is served back.
  const model = new Uint8Array(300_000).map((_, i) => (i * 7919 + (i >> 8)) & 0xff);
  const saved = await viaMim(url, {
    url: files.serve("/model.bin", model),
    outputFile: "model.bin",
  });
  assert.deepEqual(saved.calls, [{ length: 0, status: 200 }]);
  const served = await fetch(`${url}/file?name=model.bin`);
  assert.equal(served.status, 200);
  assert.equal(served.headers.get("content-type"), "application/octet-stream");
  assert.equal(await sha256Hex(new Uint8Array(await served.arrayBuffer())), await sha256Hex(model));

  // (c) an error status: the error callback with the status, the body and the headers.
  const missing = await viaMim(url, { url: `${files.url}/missing.bin` });
  assert.equal(missing.error.status, 404);
  assert.equal(missing.error.content, "no such file");
  assert.equal(missing.error.headers, "object");
  assert.match(missing.error.message, /404/);
  assert.deepEqual(missing.calls, []);
  const notSaved = await viaMim(url, { url: `${files.url}/missing.bin`, outputFile: "gone.bin" });
  assert.equal(notSaved.error?.status, 404);
  assert.equal((await getJson(`${url}/file?name=gone.bin`)).status, 404, "no file of an error");

  // (d) timeouts in milliseconds: a server that never answers, and one that stops sending.
  const silent = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of silent) held.push(conn);
  })();
  try {
    const noHead = await viaMim(url, {
      url: `http://127.0.0.1:${silent.addr.port}/never`,
      connectionTimeout: "500",
    });
    assert.equal(noHead.error?.status, 0, JSON.stringify(noHead));
    assert.match(noHead.error.message, /timed out/);
    assert.ok(noHead.ms >= 450 && noHead.ms < 5000, `${noHead.ms} ms: 500 ms, not 500 s`);
    assert.ok(held.length > 0, "the request reached the silent server");
    const stalled = await viaMim(url, {
      url: files.serve("/stall.bin", model, { stallAfter: 65_536, failures: 99 }),
      socketTimeout: "500",
    });
    assert.equal(stalled.error?.status, 0, JSON.stringify(stalled));
    assert.match(stalled.error.message, /timed out/);
    assert.ok(stalled.ms >= 450 && stalled.ms < 5000, `${stalled.ms} ms`);
  } finally {
    silent.close();
    for (const conn of held) conn.close();
    await accepting.catch(() => {});
  }

  // (e) a URL without a scheme.
  files.serve("/hello.txt", encoder.encode("hello there"));
  const bare = await viaMim(url, { url: `${files.url.replace("http://", "")}/hello.txt` });
  assert.equal(bare.data, "hello there", JSON.stringify(bare));
});

Deno.test("reference: storage.saveFile and deleteFile, served with writeMimeFile", async () => {
  await using node = await startTestNode({ config: CONFIG });
  const url = await deployReference(node);
  const bytes = crypto.getRandomValues(new Uint8Array(10_000));
  const base64 = btoa(String.fromCharCode(...bytes));
  const save = (name: string) =>
    getJson(`${url}/save?name=${encodeURIComponent(name)}`, { method: "POST", body: base64 });
  assert.deepEqual(await save("blob.bin"), { status: 201, body: { saved: true } });
  const served = await fetch(`${url}/file?name=blob.bin`);
  assert.equal(served.status, 200);
  assert.deepEqual(new Uint8Array(await served.arrayBuffer()), bytes);
  assert.deepEqual(await getJson(`${url}/delete?name=blob.bin`), {
    status: 200,
    body: { deleted: true },
  });
  assert.equal((await getJson(`${url}/file?name=blob.bin`)).status, 404);
  for (const name of ["..", "../escape.bin"]) {
    const { status, body } = await save(name);
    assert.equal(status, 400, `${name}: ${JSON.stringify(body)}`);
    assert.match(body.message, /not a file name/, name);
    const deleted = await getJson(`${url}/delete?name=${encodeURIComponent(name)}`);
    assert.equal(deleted.status, 400, `delete ${name}: ${JSON.stringify(deleted.body)}`);
  }
});

Deno.test("reference: req.handleFormRequest stores file parts and reads fields, as curl -F sends them", async () => {
  await using node = await startTestNode({ config: CONFIG });
  const url = await deployReference(node);
  const bytes = new Uint8Array(200_000).map((_, i) => (i * 7919) % 251);
  await withTempDir(async (dir) => {
    await Deno.writeFile(`${dir}/model.bin`, bytes);
    // curl writes the multipart body (nobody here wrote its encoder).
    const curl = await new Deno.Command("curl", {
      args: ["-sS", "-F", 'title=a "quoted" name', "-F", `model=@${dir}/model.bin`, `${url}/form`],
      stdout: "piped",
    }).output();
    const answer = JSON.parse(new TextDecoder().decode(curl.stdout));
    assert.deepEqual(answer, {
      fields: { title: 'a "quoted" name' },
      stored: [{ path: "upload-model", size: bytes.length }],
    });
  });
  const served = await fetch(`${url}/file?name=upload-model`);
  assert.equal(await sha256Hex(new Uint8Array(await served.arrayBuffer())), await sha256Hex(bytes));
  const plain = await getJson(`${url}/form`, { method: "POST", body: "not a form" });
  assert.equal(plain.status, 400);
  assert.match(plain.body.message, /not multipart\/form-data/);
});

/** A raw HTTP/1.1 request (fetch always labels a string body); returns status and body. */
async function rawRequest(
  node: TestNode,
  method: string,
  path: string,
  body: string,
  type?: string,
) {
  const { hostname, port } = new URL(node.url);
  const conn = await Deno.connect({ hostname, port: Number(port) });
  const bytes = encoder.encode(body);
  const head = [
    `${method} ${path} HTTP/1.1`,
    `Host: ${hostname}:${port}`,
    `Authorization: Bearer ${node.apiKey}`,
    `Content-Length: ${bytes.length}`,
    "Connection: close",
    ...(type ? [`Content-Type: ${type}`] : []),
  ].join("\r\n");
  await conn.write(encoder.encode(`${head}\r\n\r\n${body}`));
  const answer = await new Response(conn.readable).text();
  const [status] = answer.split("\r\n", 1);
  return {
    status: Number(status.split(" ")[1]),
    body: answer.slice(answer.indexOf("\r\n\r\n") + 4),
  };
}

Deno.test("reference: deploy calls without a Content-Type, form-encoded JSON, deletes by name, repoTags", async () => {
  await using node = await startTestNode({ config: CONFIG });
  const script = encoder.encode('mimikModule.exports = function (c, q, r) { r.end("v1"); };');
  const docker = await uploadImage(node, await packImage(script, "example-v1", "1.0.0"), "x.tar");
  assert.equal(docker.name, "example-v1");
  assert.deepEqual(docker.repoTags, ["example-v1:1.0.0"]);
  const plain = await uploadImage(
    node,
    await scriptImage(new TextDecoder().decode(script)),
    "plainmim.tar",
  );
  assert.deepEqual(plain.repoTags, ["plainmim:latest"]);

  const payload = (name: string, image: string) =>
    JSON.stringify({ name, image, env: { "MCM.BASE_API_PATH": `/${name}/v1` } });
  const untyped = await rawRequest(
    node,
    "POST",
    "/mcm/v1/containers",
    payload("example-v1", "example-v1"),
  );
  assert.equal(untyped.status, 201, untyped.body);
  // fetch sends no Content-Type with a Uint8Array body either.
  const bytesBody = await mcm(node, "/containers", {
    method: "POST",
    body: encoder.encode(payload("plainmim", "plainmim")),
  });
  assert.equal(bytesBody.status, 201, await bytesBody.text());
  const formed = await rawRequest(
    node,
    "POST",
    "/mcm/v1/containers",
    payload("formed", "plainmim"),
    "application/x-www-form-urlencoded",
  );
  assert.equal(formed.status, 201, formed.body);
  const served = await fetch(`${serviceUrl(node, JSON.parse(untyped.body))}/`);
  assert.equal(await served.text(), "v1");
  const badJson = await rawRequest(
    node,
    "POST",
    "/mcm/v1/containers",
    "{name:",
    "application/x-www-form-urlencoded",
  );
  assert.equal(badJson.status, 400, badJson.body);
  assert.equal((await rawRequest(node, "POST", "/mcm/v1/containers", "{name:")).status, 400);
  const plainText = await rawRequest(
    node,
    "POST",
    "/mcm/v1/containers",
    payload("t", "plainmim"),
    "text/plain",
  );
  assert.equal(plainText.status, 415, plainText.body);

  for (const name of ["example-v1", "plainmim", "formed"]) {
    const removed = await rawRequest(node, "DELETE", `/mcm/v1/containers/${name}`, "");
    assert.equal(removed.status, 200, `${name}: ${removed.body}`);
  }
  for (const name of ["example-v1", "plainmim"]) {
    const removed = await rawRequest(node, "DELETE", `/mcm/v1/images/${name}`, "");
    assert.equal(removed.status, 200, `${name}: ${removed.body}`);
  }
  const images = await expectJson(await mcm(node, "/images"), 200, ImageListSchema);
  assert.deepEqual(images.data, []);
  assert.equal((await rawRequest(node, "DELETE", "/mcm/v1/containers/example-v1", "")).status, 404);
});
