/**
 * Storage file names with folders, as the reference's language-model microservice (mILM) uses
 * them: it downloads its model with `context.http.request({ url, outputFile: "cache/<id>.gguf",
 * mode: "stream" })`, serves and deletes it by the same name, and never makes a folder nor learns
 * an absolute path. The microservice below is written that way (for these tests; no vendor code).
 * Hostile names and links planted in the storage folder are refused, and nothing is written
 * outside it.
 */
import assert from "node:assert/strict";
import { startFileServer } from "../testing/file_server.ts";
import { getJson, scriptImage, serviceUrl, startContainer, uploadImage } from "../testing/mcm.ts";
import { ggufBytes, listFiles, sha256Hex, startTestNode, type TestNode } from "../testing/node.ts";

const MODES = ["per-client", "per-container"] as const;

/** A node whose microservices may download from the test's file server on 127.0.0.1. */
const config = (containerProcess: typeof MODES[number] = "per-client") => ({
  apiKey: "a-test-key-of-enough-length",
  discovery: { mdns: false },
  mcm: { outboundNetworks: ["public", "private", "loopback"], containerProcess },
});

/** A mILM-style microservice: models in `cache/<id>.gguf`, plus raw routes for hostile names. */
const MILM_STYLE = String.raw`
function query(url) {
  var out = {};
  var q = url.indexOf('?') < 0 ? '' : url.slice(url.indexOf('?') + 1);
  q.split('&').forEach(function (pair) {
    if (!pair) return;
    var i = pair.indexOf('=');
    out[decodeURIComponent(pair.slice(0, i))] = decodeURIComponent(pair.slice(i + 1));
  });
  return out;
}
function send(res, status, body) {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(body));
}
function modelFile(id) { return 'cache/' + id + '.gguf'; }
function models(context) { return JSON.parse(context.storage.getItem('models') || '{}'); }
function download(context, res, url, outputFile, done) {
  var calls = 0;
  context.http.request({
    url: url,
    outputFile: outputFile,
    mode: 'stream',
    success: function (r) { calls++; if (r.done) done(calls); },
    error: function (e) { send(res, 500, { message: e.message, status: e.status }); }
  });
}
var routes = {
  'POST /models': function (context, req, res) {
    var body = JSON.parse(req.body);
    download(context, res, body.url, modelFile(body.id), function () {
      var all = models(context);
      all[body.id] = { id: body.id, readyToUse: true };
      context.storage.setItem('models', JSON.stringify(all));
      send(res, 201, all[body.id]);
    });
  },
  'GET /models': function (context, req, res) {
    var all = models(context);
    send(res, 200, { data: Object.keys(all).map(function (k) { return all[k]; }) });
  },
  'GET /models/file': function (context, req, res) {
    res.writeMimeFile(modelFile(query(req.url).modelId), 'application/octet-stream');
  },
  'DELETE /models': function (context, req, res) {
    var id = query(req.url).modelId;
    var all = models(context);
    if (!all[id]) return send(res, 404, { message: 'No model found with id: ' + id });
    try {
      context.storage.deleteFile(modelFile(id));
    } catch (e) {
      return send(res, 500, { message: e.message });
    }
    delete all[id];
    context.storage.setItem('models', JSON.stringify(all));
    send(res, 200, { data: { id: id, object: 'model', deleted: true } });
  },
  'GET /download': function (context, req, res) {
    var q = query(req.url);
    download(context, res, q.url, q.name, function (calls) { send(res, 201, { calls: calls }); });
  },
  'POST /save': function (context, req, res) {
    try {
      context.storage.saveFile(query(req.url).name, req.body);
      send(res, 201, { saved: true });
    } catch (e) {
      send(res, 400, { message: e.message });
    }
  },
  'GET /delete': function (context, req, res) {
    try {
      context.storage.deleteFile(query(req.url).name);
      send(res, 200, { deleted: true });
    } catch (e) {
      send(res, 400, { message: e.message });
    }
  },
  'GET /file': function (context, req, res) {
    res.writeMimeFile(query(req.url).name, 'application/octet-stream');
  },
  'POST /form': function (context, req, res) {
    var path = query(req.url).path;
    var stored = [];
    try {
      req.handleFormRequest({
        found: function (key, filename) { return filename ? { action: 'store', path: path } : { action: 'skip' }; },
        store: function (p, size) { stored.push({ path: p, size: size }); }
      });
    } catch (e) {
      return send(res, 400, { message: e.message });
    }
    send(res, 201, { stored: stored });
  }
};
mimikModule.exports = function (context, req, res) {
  var route = routes[req.method + ' ' + req.url.split('?')[0]];
  if (!route) return send(res, 404, { message: 'Not Found' });
  route(context, req, res);
};
`;

const HOSTILE = ["../x", "cache/../../x", "/etc/passwd", "a//b", "cache/./x", "a\\b", "cache/"];

/** Uploads and starts the mILM-style microservice; returns its URL. */
async function deployMilmStyle(node: TestNode): Promise<string> {
  await uploadImage(node, await scriptImage(MILM_STYLE), "milm-style.tar");
  return serviceUrl(node, await startContainer(node, { name: "milm-style", image: "milm-style" }));
}

/** The container's `files` folder on disk: the one holding `marker`. */
async function filesFolder(node: TestNode, marker: string): Promise<string> {
  const found = (await listFiles(node.dataDir)).filter((path) => path.endsWith(`/files/${marker}`));
  assert.equal(found.length, 1, JSON.stringify(found));
  return `${node.dataDir}/${found[0].slice(0, -marker.length - 1)}`;
}

const base64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));

for (const mode of MODES) {
  Deno.test(`storage paths (${mode}): a mILM-style download into cache/, served, listed and deleted by the same name`, async () => {
    await using node = await startTestNode({ config: config(mode) });
    await using files = startFileServer();
    const url = await deployMilmStyle(node);
    const model = ggufBytes(400_000, 3);
    const created = await getJson(`${url}/models`, {
      method: "POST",
      body: JSON.stringify({ id: "tiny", url: files.serve("/tiny.gguf", model) }),
    });
    assert.deepEqual(created, { status: 201, body: { id: "tiny", readyToUse: true } });
    assert.deepEqual((await getJson(`${url}/models`)).body, {
      data: [{ id: "tiny", readyToUse: true }],
    });
    const dir = await filesFolder(node, "cache/tiny.gguf");
    assert.equal(
      await sha256Hex(await Deno.readFile(`${dir}/cache/tiny.gguf`)),
      await sha256Hex(model),
    );

    const served = await fetch(`${url}/models/file?modelId=tiny`);
    assert.equal(served.status, 200);
    assert.equal(served.headers.get("content-length"), String(model.length));
    assert.equal(
      await sha256Hex(new Uint8Array(await served.arrayBuffer())),
      await sha256Hex(model),
    );

    // Replaced in place by a second download of the same id.
    const second = ggufBytes(1000, 4);
    files.serve("/tiny.gguf", second);
    await getJson(`${url}/models`, {
      method: "POST",
      body: JSON.stringify({ id: "tiny", url: `${files.url}/tiny.gguf` }),
    });
    assert.deepEqual(await Deno.readFile(`${dir}/cache/tiny.gguf`), second);

    assert.deepEqual(await getJson(`${url}/models?modelId=tiny`, { method: "DELETE" }), {
      status: 200,
      body: { data: { id: "tiny", object: "model", deleted: true } },
    });
    assert.equal((await fetch(`${url}/models/file?modelId=tiny`)).status, 404);
    // The folder stays, empty (deleting a file never deletes its folder).
    assert.deepEqual(await listFiles(`${dir}/cache`), []);

    // saveFile, form uploads and deleteFile take folder names too; an empty folder is deleted.
    const bytes = crypto.getRandomValues(new Uint8Array(5000));
    assert.equal(
      (await getJson(`${url}/save?name=a/b/c.bin`, { method: "POST", body: base64(bytes) })).status,
      201,
    );
    assert.deepEqual(await Deno.readFile(`${dir}/a/b/c.bin`), bytes);
    const form = new FormData();
    form.append("file", new Blob([bytes]), "upload.bin");
    const uploaded = await getJson(`${url}/form?path=uploads/one.bin`, {
      method: "POST",
      body: form,
    });
    assert.deepEqual(uploaded, {
      status: 201,
      body: { stored: [{ path: "uploads/one.bin", size: 5000 }] },
    });
    assert.deepEqual(
      new Uint8Array(await (await fetch(`${url}/file?name=uploads/one.bin`)).arrayBuffer()),
      bytes,
    );
    assert.equal((await getJson(`${url}/delete?name=a/b/c.bin`)).status, 200);
    assert.equal((await getJson(`${url}/delete?name=a/b`)).status, 200);
    const notEmpty = await getJson(`${url}/delete?name=uploads`);
    assert.equal(notEmpty.status, 400);
    assert.match(notEmpty.body.message, /not empty/);
    assert.deepEqual(await listFiles(dir), ["uploads/one.bin"]);
  });
}

Deno.test("storage paths: traversal, absolute and malformed names are refused, nothing written outside", async () => {
  await using node = await startTestNode({ config: config() });
  await using files = startFileServer();
  const url = await deployMilmStyle(node);
  const source = files.serve("/x.gguf", ggufBytes(1000));
  assert.equal(
    (await getJson(`${url}/save?name=cache/marker.bin`, { method: "POST", body: "AA==" })).status,
    201,
  );
  const dir = await filesFolder(node, "cache/marker.bin");
  for (const name of HOSTILE) {
    const q = encodeURIComponent(name);
    const downloaded = await getJson(`${url}/download?name=${q}&url=${encodeURIComponent(source)}`);
    assert.equal(downloaded.status, 500, `${name}: ${JSON.stringify(downloaded.body)}`);
    assert.match(downloaded.body.message, /not a file name of the container's storage/, name);
    const saved = await getJson(`${url}/save?name=${q}`, { method: "POST", body: "AA==" });
    assert.equal(saved.status, 400, `${name}: ${JSON.stringify(saved.body)}`);
    assert.match(saved.body.message, /not a file name of the container's storage/, name);
    const deleted = await getJson(`${url}/delete?name=${q}`);
    assert.equal(deleted.status, 400, `${name}: ${JSON.stringify(deleted.body)}`);
    const read = await fetch(`${url}/file?name=${q}`);
    assert.notEqual(read.status, 200, name);
    await read.body?.cancel();
    const form = new FormData();
    form.append("file", new Blob(["x"]), "x.bin");
    const uploaded = await getJson(`${url}/form?path=${q}`, { method: "POST", body: form });
    assert.equal(uploaded.status, 400, `${name}: ${JSON.stringify(uploaded.body)}`);
  }
  // Refused before anything is sent: the file server never saw the download.
  assert.deepEqual(files.requests, []);
  const strays = (await listFiles(node.dataDir)).filter((path) =>
    /(^|\/)(x|passwd|b|a\\b)$/.test(path)
  );
  assert.deepEqual(strays, []);
  assert.deepEqual(await listFiles(dir), ["cache/marker.bin"]);
});

for (const mode of MODES) {
  Deno.test(`storage paths (${mode}): a link planted in the storage folder is never followed`, async () => {
    await using node = await startTestNode({ config: config(mode) });
    await using files = startFileServer();
    const url = await deployMilmStyle(node);
    const source = files.serve("/x.gguf", ggufBytes(1000));
    assert.equal(
      (await getJson(`${url}/save?name=cache/marker.bin`, { method: "POST", body: "AA==" })).status,
      201,
    );
    const dir = await filesFolder(node, "cache/marker.bin");
    const outside = await Deno.makeTempDir({ prefix: "edgenode-outside-" });
    try {
      await Deno.writeTextFile(`${outside}/secret`, "secret");
      await Deno.symlink(outside, `${dir}/evil`);
      await Deno.symlink(`${outside}/secret`, `${dir}/cache/link.gguf`);
      for (const name of ["evil/secret", "evil/new.gguf", "evil/sub/new.gguf", "cache/link.gguf"]) {
        const q = encodeURIComponent(name);
        const downloaded = await getJson(
          `${url}/download?name=${q}&url=${encodeURIComponent(source)}`,
        );
        assert.equal(downloaded.status, 500, `${name}: ${JSON.stringify(downloaded.body)}`);
        assert.match(downloaded.body.message, /link/, name);
        const saved = await getJson(`${url}/save?name=${q}`, { method: "POST", body: "AA==" });
        assert.equal(saved.status, 400, `${name}: ${JSON.stringify(saved.body)}`);
        assert.match(saved.body.message, /link/, name);
        const deleted = await getJson(`${url}/delete?name=${q}`);
        assert.equal(deleted.status, 400, `${name}: ${JSON.stringify(deleted.body)}`);
        const read = await fetch(`${url}/file?name=${q}`);
        assert.notEqual(read.status, 200, name);
        assert.doesNotMatch(await read.text(), /secret/);
      }
      assert.deepEqual(files.requests, []);
      assert.deepEqual(await listFiles(outside), ["secret"]);
      assert.equal(await Deno.readTextFile(`${outside}/secret`), "secret");
    } finally {
      await Deno.remove(outside, { recursive: true });
    }
  });
}
