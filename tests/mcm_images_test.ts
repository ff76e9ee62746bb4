/**
 * Image upload: the layouts accepted, how images are named, and archives refused before
 * anything is kept (path traversal, links, devices, oversize, too many entries).
 */
import assert from "node:assert/strict";
import { packTar, type TarEntry } from "modern-tar";
import { ImageListSchema } from "../gen/mcm/validators.ts";
import { expectError, expectJson } from "../testing/contract.ts";
import { buildExample, EXAMPLES, mcm, postImage, uploadImage } from "../testing/mcm.ts";
import { listFiles, runEdgenode, startTestNode, withTempDir } from "../testing/node.ts";

const CONFIG = {
  apiKey: "a-test-key-of-enough-length",
  discovery: { mdns: false },
  mcm: { maxBundleBytes: 4096, maxImageBytes: 256 * 1024 },
};
const SCRIPT = new TextEncoder().encode(
  'mimikModule.exports = function (c, req, res) { res.end("ok"); };',
);

function file(name: string, body: Uint8Array | string): TarEntry {
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
  return { header: { name, size: bytes.length, type: "file" }, body: bytes };
}

const tar = (entries: TarEntry[]) => packTar(entries);

Deno.test("images: docker-save and plain layouts, gzip, and how they are named", () =>
  withTempDir(async (dir) => {
    await using node = await startTestNode({ config: { ...CONFIG, mcm: {} } });
    const built = await buildExample(`${EXAMPLES}hello-mim`, `${dir}/out.tar`);
    const fromTag = await uploadImage(node, built, "whatever.tar");
    assert.equal(fromTag.name, "hello-mim", "the RepoTag names a docker-save image");
    assert.match(fromTag.digest, /^sha256:[0-9a-f]{64}$/);
    assert.equal(fromTag.size, built.length);
    assert.ok(Math.abs(fromTag.created - Date.now() / 1000) < 60, "created is in seconds");

    const plain = await tar([file("./index.js", SCRIPT), file("./package.json", "{}")]);
    assert.equal((await uploadImage(node, plain, "plain-v1-1.2.3.tar")).name, "plain-v1");
    assert.equal(
      (await uploadImage(node, built, "x.tar", { name: "chosen" })).name,
      "chosen",
      "the name field wins",
    );
    const gzipped = new Uint8Array(
      await new Response(new Blob([plain]).stream().pipeThrough(new CompressionStream("gzip")))
        .arrayBuffer(),
    );
    assert.equal((await uploadImage(node, gzipped, "zipped.tar.gz")).name, "zipped");

    const raw = await fetch(`${node.url}/mcm/v1/images?name=rawbody`, {
      method: "POST",
      headers: { authorization: `Bearer ${node.apiKey}`, "content-type": "application/x-tar" },
      body: plain,
    });
    assert.equal((await raw.json()).name, "rawbody");
    const list = await expectJson(await mcm(node, "/images"), 200, ImageListSchema);
    assert.deepEqual(list.data.map((i) => i.id).sort(), [
      "api-chosen",
      "api-hello-mim",
      "api-plain-v1",
      "api-rawbody",
      "api-zipped",
    ]);
    await expectError(await postImage(node, plain, ".tar"), 400, /has no name/);
  }));

Deno.test("images: hostile and broken archives are refused and leave nothing behind", async () => {
  await using node = await startTestNode({ config: CONFIG });
  const refuse = async (archive: Uint8Array, message: RegExp, status = 400) => {
    await expectError(await postImage(node, archive, "bad.tar"), status, message);
  };
  const link = (name: string, type: "symlink" | "link", target: string): TarEntry => ({
    header: { name, size: 0, type, linkname: target },
  });
  await refuse(await tar([file("../../evil.js", SCRIPT), file("index.js", SCRIPT)]), /'\.\.'/);
  await refuse(await tar([file("/etc/cron.d/evil", SCRIPT), file("index.js", SCRIPT)]), /absolute/);
  await refuse(await tar([link("index.js", "symlink", "/etc/passwd")]), /symlink/);
  await refuse(await tar([file("index.js", SCRIPT), link("other.js", "link", "index.js")]), /link/);
  await refuse(
    await tar([
      { header: { name: "dev", size: 0, type: "character-device" } },
      file("index.js", SCRIPT),
    ]),
    /character-device/,
  );
  await refuse(await tar([file("index.js", new Uint8Array(5000))]), /index\.js is over 4096/);
  await refuse(
    await tar([file("big.bin", new Uint8Array(5000)), file("index.js", SCRIPT)]),
    /over 4096/,
  );
  await refuse(
    await tar([
      ...Array.from({ length: 300 }, (_, i) => file(`f${i}`, "")),
      file("index.js", SCRIPT),
    ]),
    /more than 256 entries/,
  );
  await refuse(await tar([file("readme.txt", "hi")]), /no index\.js/);
  await refuse(await tar([file("index.js", SCRIPT), file("./index.js", SCRIPT)]), /more than one/);
  const layer = await tar([file("index.js", SCRIPT)]);
  await refuse(
    await tar([
      file("manifest.json", JSON.stringify([{ RepoTags: ["x:1"], Layers: ["missing/layer.tar"] }])),
      file("abc/layer.tar", layer),
    ]),
    /names layer 'missing\/layer.tar'/,
  );
  await refuse(
    new TextEncoder().encode("not a tar at all, just text ".repeat(40)),
    /not a readable tar|no index/,
  );
  await refuse(
    await tar([
      file("index.js", SCRIPT),
      file("pad", new Uint8Array(4000)),
      ...Array.from({ length: 80 }, (_, i) => file(`p${i}`, new Uint8Array(4000))),
    ]),
    /over 262144 bytes/,
    413,
  );

  const list = await expectJson(await mcm(node, "/images"), 200, ImageListSchema);
  assert.deepEqual(list.data, [], "no image was recorded");
  assert.deepEqual(await listFiles(`${node.dataDir}/mcm/bundles`), [], "no bundle was kept");
  assert.deepEqual(await listFiles(`${node.dataDir}/mcm/tmp`), [], "no upload was left");
  await expectError(
    await fetch(`${node.url}/mcm/v1/images`, { method: "POST", body: "x" }),
    401,
    /missing credentials/,
  );
});

Deno.test("image build refuses imports that leave the project folder, symlinks included", () =>
  withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/secret.json`, JSON.stringify({ key: "do not bundle me" }));
    await Deno.mkdir(`${dir}/project`);
    await Deno.writeTextFile(
      `${dir}/project/index.js`,
      'import secret from "../secret.json";\nmimikModule.exports = (c, q, r) => r.end(secret.key);\n',
    );
    const outside = await runEdgenode(["image", "build", `${dir}/project`, "-o", `${dir}/a.tar`]);
    assert.equal(outside.code, 2, outside.stderr);
    assert.match(outside.stderr, /'\.\.\/secret\.json' resolves outside the project folder/);

    await Deno.symlink(`${dir}/secret.json`, `${dir}/project/linked.json`);
    await Deno.writeTextFile(
      `${dir}/project/index.js`,
      'import secret from "./linked.json";\nmimikModule.exports = (c, q, r) => r.end(secret.key);\n',
    );
    const linked = await runEdgenode(["image", "build", `${dir}/project`, "-o", `${dir}/b.tar`]);
    assert.equal(linked.code, 2, linked.stderr);
    assert.match(linked.stderr, /'\.\/linked\.json' resolves outside the project folder/);
    await assert.rejects(Deno.stat(`${dir}/a.tar`), Deno.errors.NotFound);

    await Deno.writeTextFile(`${dir}/project/index.js`, 'import fs from "node:fs";\nfs;\n');
    const builtin = await runEdgenode(["image", "build", `${dir}/project`, "-o", `${dir}/c.tar`]);
    assert.equal(builtin.code, 2, builtin.stderr);
    assert.match(builtin.stderr, /node:fs/);
  }));
