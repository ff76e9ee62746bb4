/**
 * A file fetched from several sources in turn (downloadFromSources), against a real file server:
 * a source that stalls, breaks, answers an error or announces another size than its node
 * advertised is left, and the next goes on from the bytes already written; a last source that
 * cannot continue from a byte starts the file over.
 */
import assert from "node:assert/strict";
import { type Behaviour, startFileServer } from "../../testing/file_server.ts";
import { ggufBytes, sha256Hex } from "../../testing/node.ts";
import { downloadFromSources, type DownloadSource, type FileSource } from "./download_file.ts";
import { ModelFiles } from "./model_files.ts";

const SIZE = 2 * 1024 * 1024;

/** Fetches the file from a "node" behaving as told, then from the URL behaving as told. */
async function twoSources(node: Behaviour & { size?: number }, url: Behaviour = {}) {
  const dir = await Deno.makeTempDir({ prefix: "edgenode-sources-" });
  const files = await ModelFiles.open(dir);
  await using server = startFileServer();
  try {
    const bytes = ggufBytes(SIZE, 9);
    const sources: FileSource[] = [
      {
        url: server.serve("/node", bytes, node),
        label: { node: "n".repeat(56) },
        size: node.size ?? bytes.byteLength,
        stallMs: 300,
        retries: 0,
      },
      { url: server.serve("/url", bytes, url), label: "url" },
    ];
    const said: DownloadSource[] = [];
    const written = await downloadFromSources(files, "m", "m.gguf", sources, {
      signal: new AbortController().signal,
      stallMs: 2000,
      retries: 2,
      headBytes: 24,
      onProgress: (_size, _total, source) => {
        if (JSON.stringify(said.at(-1)) !== JSON.stringify(source)) said.push(source);
      },
    });
    assert.equal(written.sha256, await sha256Hex(bytes));
    assert.equal(written.size, bytes.byteLength);
    await files.discard(written);
    const urlRanges = server.requests.filter((r) => r.path === "/url").map((r) => r.range);
    return { said, urlRanges, used: written.usedSources.map((s) => s.label) };
  } finally {
    files.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a node that stalls mid-file is left: the URL goes on from the bytes written", async () => {
  const { said, urlRanges, used } = await twoSources({ stallAfter: SIZE / 2 });
  assert.deepEqual(said, [{ node: "n".repeat(56) }, "url"]);
  assert.deepEqual(used, [{ node: "n".repeat(56) }, "url"]);
  assert.equal(urlRanges.length, 1);
  assert.match(urlRanges[0] ?? "", /^bytes=[1-9]\d*-$/);
});

Deno.test("a node that breaks the connection is left the same way", async () => {
  const { urlRanges } = await twoSources({ dropAfter: 64 * 1024 });
  assert.deepEqual(urlRanges, ["bytes=65536-"]);
});

Deno.test("a node that answers an error, or another size than it advertised, sends nothing", async () => {
  for (const node of [{ status: 403 }, { size: SIZE - 1 }]) {
    const { urlRanges, used } = await twoSources(node);
    assert.deepEqual(urlRanges, [null], JSON.stringify(node));
    assert.deepEqual(used, ["url"]);
  }
});

Deno.test("a URL that ignores Range after a node stalled starts the file over", async () => {
  const { urlRanges, used } = await twoSources({ stallAfter: SIZE / 2 }, { ranges: false });
  // The first answer (from byte N, ignored) is refused; the file starts over from the URL alone.
  assert.equal(urlRanges.length, 2);
  assert.deepEqual(used, ["url"]);
});
