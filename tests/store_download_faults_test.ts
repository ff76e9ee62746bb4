/**
 * Downloads when things go wrong: clients leave, the model is deleted, two clients ask at once,
 * the connection drops or stalls, the file is not what was promised, the node crashes.
 */
import assert from "node:assert/strict";
import { ModelSchema } from "../gen/store/validators.ts";
import { expectError, expectJson } from "../testing/contract.ts";
import {
  allMessages,
  doneModel,
  type DownloadMessage,
  messages,
  startDownload,
  streamError,
} from "../testing/events.ts";
import { startFileServer } from "../testing/file_server.ts";
import {
  ggufBytes,
  listFiles,
  sha256Hex,
  startTestNode,
  type TestNode,
  waitFor,
} from "../testing/node.ts";
import { createModel } from "./helpers/store.ts";

const SLOW = { bytesPerSecond: 256 * 1024 };

/**
 * Reads a stream until its first progress message with bytes in it, and leaves it open:
 * breaking out of for-await would cancel the body, which is the client leaving.
 */
async function untilProgress(response: Response) {
  const stream = messages(response);
  while (true) {
    const { value: message, done } = await stream.next();
    if (done) throw new Error("the stream ended before any progress");
    if ("size" in message && message.size > 0) return message;
  }
}

const partials = async (dir: string) =>
  (await listFiles(`${dir}/models`)).filter((name) => name.endsWith(".partial"));

/** DELETEs model `m` while `stream` follows its download; the stream must end with a 409. */
async function deleteWhileDownloading(
  node: TestNode,
  stream: AsyncIterable<DownloadMessage>,
) {
  const deleted = await fetch(`${node.storeUrl}/models/m`, {
    method: "DELETE",
    headers: node.auth(),
  });
  assert.equal(deleted.status, 200);
  await deleted.body?.cancel();
  const rest: DownloadMessage[] = [];
  for await (const message of stream) rest.push(message);
  streamError(rest, 409, /model 'm' was deleted while its file was being downloaded/);
}

Deno.test("when the last client disconnects the transfer stops and its partial file goes", async () => {
  await using node = await startTestNode();
  await using source = startFileServer();
  const url = source.serve("/m.gguf", ggufBytes(8 * 1024 * 1024), SLOW);
  await createModel(node, "m");
  const client = new AbortController();
  await untilProgress(await startDownload(node, "m", { url }, client.signal));
  // The partial file is opened before the first byte is read.
  const seen = await listFiles(`${node.dataDir}/models`);
  assert.equal(
    seen.filter((name) => name.endsWith(".partial")).length,
    1,
    `a partial file while downloading; the models folder holds ${JSON.stringify(seen)}; ` +
      `the node said:\n${node.output().slice(-3000)}`,
  );
  client.abort();
  await waitFor(() => source.abandoned === 1, "the node to stop reading the source");
  await waitFor(async () => (await listFiles(`${node.dataDir}/models`)).length === 0, "cleanup");
  const model = await expectJson(await fetch(`${node.storeUrl}/models/m`), 200, ModelSchema);
  assert.equal(model.readyToUse, false);
});

Deno.test("DELETE during a download ends its stream with an error and removes everything", async () => {
  await using node = await startTestNode();
  await using source = startFileServer();
  const url = source.serve("/m.gguf", ggufBytes(8 * 1024 * 1024), SLOW);
  await createModel(node, "m");
  const response = await startDownload(node, "m", { url });
  const stream = messages(response);
  // next() rather than for-await: breaking out of for-await would close the stream.
  while (true) {
    const { value } = await stream.next();
    if (value && "size" in value && value.size > 0) break;
  }
  await deleteWhileDownloading(node, stream);
  await expectError(await fetch(`${node.storeUrl}/models/m`), 404);
  await waitFor(async () => (await listFiles(`${node.dataDir}/models`)).length === 0, "cleanup");
});

Deno.test("a second client joins the running transfer; other URLs are refused meanwhile", async () => {
  await using node = await startTestNode();
  await using source = startFileServer();
  const bytes = ggufBytes(1024 * 1024);
  const url = source.serve("/m.gguf", bytes, { bytesPerSecond: 1024 * 1024 });
  await createModel(node, "m");
  const first = await startDownload(node, "m", { url });
  const firstMessages = messages(first);
  await firstMessages.next();
  const second = await startDownload(node, "m", { url });
  await expectError(
    await startDownload(node, "m", { url: `${url}?other` }),
    409,
    /already downloading from other URLs/,
  );
  // The first client leaving does not cancel the transfer the second still follows.
  await firstMessages.return(undefined);
  const model = doneModel(await allMessages(second));
  assert.equal(model.sha256, await sha256Hex(bytes));
  assert.equal(source.requests.filter((r) => r.path === "/m.gguf").length, 1, "one transfer");
});

Deno.test("a dropped connection resumes with Range from where it stopped", async () => {
  await using node = await startTestNode();
  await using source = startFileServer();
  const bytes = ggufBytes(3 * 1024 * 1024);
  const url = source.serve("/m.gguf", bytes, { dropAfter: 1024 * 1024, failures: 2 });
  await createModel(node, "m");
  const model = doneModel(await allMessages(await startDownload(node, "m", { url })));
  assert.equal(model.sha256, await sha256Hex(bytes));
  const ranges = source.requests.map((r) => r.range);
  assert.deepEqual(ranges, [null, "bytes=1048576-", "bytes=2097152-"]);
  assert.ok(source.requests[1].ifRange, "If-Range guards against a changed file");
});

Deno.test("a source that answers 503 at first is asked again; a 403 fails at once", async () => {
  await using node = await startTestNode();
  await using source = startFileServer();
  const bytes = ggufBytes(10_000);
  const busy = source.serve("/busy.gguf", bytes, { statusFirst: 503, failures: 2 });
  await createModel(node, "m");
  const model = doneModel(await allMessages(await startDownload(node, "m", { url: busy })));
  assert.equal(model.sha256, await sha256Hex(bytes));
  assert.equal(source.requests.length, 3);
  const denied = source.serve("/denied.gguf", bytes, { status: 403 });
  const all = await allMessages(await startDownload(node, "m", { url: denied, force: true }));
  streamError(all, 502, /the source answered 403 Forbidden/);
  assert.equal(source.requests.filter((r) => r.path === "/denied.gguf").length, 1);
});

Deno.test("a source without Content-Length resumes too, and progress has no totalSize", async () => {
  await using node = await startTestNode();
  await using source = startFileServer();
  const bytes = ggufBytes(2 * 1024 * 1024);
  const url = source.serve("/m.gguf", bytes, { dropAfter: 1024 * 1024, noLength: true });
  await createModel(node, "m");
  const all = await allMessages(await startDownload(node, "m", { url }));
  assert.equal(doneModel(all).sha256, await sha256Hex(bytes));
  assert.deepEqual(source.requests.map((r) => r.range), [null, "bytes=1048576-"]);
  const progress = all.filter((m) => "size" in m);
  assert.ok(progress.slice(0, -1).every((m) => m.totalSize === undefined), JSON.stringify(all));
  assert.deepEqual(progress.at(-1), { size: bytes.byteLength, totalSize: bytes.byteLength });
});

Deno.test("a source that ignores Range is downloaded again from the start", async () => {
  await using node = await startTestNode();
  await using source = startFileServer();
  const bytes = ggufBytes(2 * 1024 * 1024);
  const url = source.serve("/m.gguf", bytes, { dropAfter: 512 * 1024, ranges: false });
  await createModel(node, "m");
  const model = doneModel(await allMessages(await startDownload(node, "m", { url })));
  assert.equal(model.sha256, await sha256Hex(bytes));
  assert.equal(source.requests.length, 3, "the first, the refused resume, the fresh start");
  assert.equal(await partials(node.dataDir).then((p) => p.length), 0);
});

Deno.test("a stalled source is abandoned after downloadStallSeconds and resumed", async () => {
  await using node = await startTestNode({
    config: { apiKey: "a-test-key-of-enough-length", downloadStallSeconds: 1 },
  });
  await using source = startFileServer();
  const bytes = ggufBytes(1024 * 1024);
  const url = source.serve("/m.gguf", bytes, { stallAfter: 256 * 1024 });
  await createModel(node, "m");
  const model = doneModel(await allMessages(await startDownload(node, "m", { url })));
  assert.equal(model.sha256, await sha256Hex(bytes));
  assert.deepEqual(source.requests.map((r) => r.range), [null, "bytes=262144-"]);
});

Deno.test("a source that keeps stalling fails with 504 once the retries are used up", async () => {
  await using node = await startTestNode({
    config: { apiKey: "a-test-key-of-enough-length", downloadStallSeconds: 1, downloadRetries: 1 },
  });
  await using source = startFileServer();
  const url = source.serve("/m.gguf", ggufBytes(1024 * 1024), { stallAfter: 0, failures: 9 });
  await createModel(node, "m");
  const all = await allMessages(await startDownload(node, "m", { url }));
  streamError(all, 504, /the source sent no data for 1 s/);
  assert.equal(source.requests.length, 2);
  assert.deepEqual(await partials(node.dataDir), []);
});

Deno.test("a file that is not GGUF, or cut short, is refused and leaves nothing", async () => {
  await using node = await startTestNode();
  await using source = startFileServer();
  await createModel(node, "m");
  const html = new TextEncoder().encode("<!doctype html><title>Sign in</title>");
  const notGguf = await allMessages(
    await startDownload(node, "m", { url: source.serve("/login", html) }),
  );
  streamError(notGguf, 400, /not a GGUF file: it does not start with the bytes 'GGUF'/);
  const short = source.serve("/short.gguf", ggufBytes(1000), {
    announce: 5000,
    ranges: false,
    failures: 0,
  });
  streamError(await allMessages(await startDownload(node, "m", { url: short })), 502);
  assert.deepEqual(await listFiles(`${node.dataDir}/models`), []);
});

Deno.test("a node killed mid-download starts with no partial file and the model not ready", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "edgenode-test-" });
  await using source = startFileServer();
  const url = source.serve("/m.gguf", ggufBytes(8 * 1024 * 1024), SLOW);
  {
    await using node = await startTestNode({ dataDir });
    await createModel(node, "m");
    await untilProgress(await startDownload(node, "m", { url }));
    assert.equal((await partials(dataDir)).length, 1);
    await node.crash();
  }
  assert.equal((await partials(dataDir)).length, 1, "the crash left a partial file");
  await using node = await startTestNode({ dataDir });
  assert.deepEqual(await partials(dataDir), []);
  const model = await expectJson(await fetch(`${node.storeUrl}/models/m`), 200, ModelSchema);
  assert.equal(model.readyToUse, false);
  await Deno.remove(dataDir, { recursive: true });
});

Deno.test("stopping the node ends open download streams with a 503 message", async () => {
  await using node = await startTestNode();
  await using source = startFileServer();
  const url = source.serve("/m.gguf", ggufBytes(8 * 1024 * 1024), SLOW);
  await createModel(node, "m");
  const stream = messages(await startDownload(node, "m", { url }));
  await stream.next();
  const stopped = node.stop();
  const rest = [];
  for await (const message of stream) rest.push(message);
  streamError(rest, 503, /the node is shutting down/);
  assert.equal(await stopped, 0);
});

/** A node whose downloads give up on a silent or trickling source after 1 s. */
const quickStall = (extra: Record<string, unknown> = {}) =>
  startTestNode({
    config: { apiKey: "a-test-key-of-enough-length", downloadStallSeconds: 1, ...extra },
  });

/** Every message of a download, or a failure after `ms` (a download that never ends). */
async function allMessagesWithin(response: Response, ms: number) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the download did not end in ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([allMessages(response), timeout]);
  } finally {
    clearTimeout(timer);
    await response.body?.cancel().catch(() => {});
  }
}

Deno.test("a resumed download that stalls again is cut again and resumed (two stalls in a row)", async () => {
  await using node = await quickStall();
  await using source = startFileServer();
  const bytes = ggufBytes(1024 * 1024);
  const url = source.serve("/m.gguf", bytes, { stalls: [256 * 1024, 256 * 1024] });
  await createModel(node, "m");
  const all = await allMessagesWithin(await startDownload(node, "m", { url }), 15_000);
  assert.equal(doneModel(all).sha256, await sha256Hex(bytes));
  assert.deepEqual(source.requests.map((r) => r.range), [null, "bytes=262144-", "bytes=524288-"]);
  await waitFor(() => source.open === 0, "every stalled connection to be closed");
});

Deno.test("three stalls in a row, the resumed ones silent at once, end in 504 after the retries", async () => {
  await using node = await quickStall({ downloadRetries: 2 });
  await using source = startFileServer();
  const url = source.serve("/m.gguf", ggufBytes(1024 * 1024), { stalls: [256 * 1024, 0, 0, 0] });
  await createModel(node, "m");
  const all = await allMessagesWithin(await startDownload(node, "m", { url }), 15_000);
  streamError(all, 504, /the source sent no data for 1 s/);
  assert.deepEqual(source.requests.map((r) => r.range), [
    null,
    "bytes=262144-",
    "bytes=262144-",
  ]);
  await waitFor(() => source.open === 0, "every stalled connection to be closed");
  assert.deepEqual(await partials(node.dataDir), []);
  const model = await expectJson(await fetch(`${node.storeUrl}/models/m`), 200, ModelSchema);
  assert.equal(model.readyToUse, false);
});

/**
 * Starts a download whose first answer stalls after 128 KiB and whose resumed answer streams
 * slowly, and returns once the resumed answer has delivered bytes.
 */
async function duringResumedAttempt(node: TestNode, signal?: AbortSignal) {
  const source = startFileServer();
  const url = source.serve("/m.gguf", ggufBytes(8 * 1024 * 1024), {
    stalls: [128 * 1024],
    bytesPerSecond: 256 * 1024,
  });
  await createModel(node, "m");
  const response = await startDownload(node, "m", { url }, signal);
  const stream = messages(response);
  while (true) {
    const { value, done } = await stream.next();
    if (done) throw new Error("the stream ended before the resumed attempt sent anything");
    if ("size" in value && value.size > 256 * 1024) break;
  }
  assert.deepEqual(source.requests.map((r) => r.range), [null, "bytes=131072-"]);
  return { source, stream };
}

Deno.test("DELETE during a resumed attempt releases the source connection", async () => {
  await using node = await quickStall();
  const { source, stream } = await duringResumedAttempt(node);
  await using _source = source;
  await deleteWhileDownloading(node, stream);
  await waitFor(() => source.open === 0, "the node to close the resumed connection", 5_000);
  assert.equal(source.requests.length, 2, "no request after the DELETE");
  await waitFor(async () => (await listFiles(`${node.dataDir}/models`)).length === 0, "cleanup");
});

Deno.test("the last client leaving during a resumed attempt releases the source connection", async () => {
  await using node = await quickStall();
  const client = new AbortController();
  const { source } = await duringResumedAttempt(node, client.signal);
  await using _source = source;
  client.abort();
  await waitFor(() => source.open === 0, "the node to close the resumed connection", 5_000);
  assert.equal(source.requests.length, 2, "no request after the client left");
  await waitFor(async () => (await partials(node.dataDir)).length === 0, "cleanup");
  const model = await expectJson(await fetch(`${node.storeUrl}/models/m`), 200, ModelSchema);
  assert.equal(model.readyToUse, false);
});

Deno.test("a source trickling below the minimum rate is abandoned, resumed, and fails with 504", async () => {
  await using node = await quickStall({ downloadRetries: 1 });
  await using source = startFileServer();
  const url = source.serve("/m.gguf", ggufBytes(256 * 1024), {
    trickleAfter: 0,
    trickleBytesPerSecond: 8,
    failures: 9,
  });
  await createModel(node, "m");
  const all = await allMessagesWithin(await startDownload(node, "m", { url }), 15_000);
  const message = streamError(all, 504, /\d+ B\/s over 1 s, below the minimum of 1024 B\/s/);
  assert.equal(source.requests.length, 2, message);
  assert.match(source.requests[1].range ?? "", /^bytes=\d+-$/, "the second request resumes");
  await waitFor(() => source.open === 0, "every trickling connection to be closed");
  assert.deepEqual(await partials(node.dataDir), []);
});

Deno.test("a source trickling below the minimum rate that ignores Range ends in 504 naming the rate", async () => {
  await using node = await quickStall({ downloadRetries: 1 });
  await using source = startFileServer();
  const url = source.serve("/m.gguf", ggufBytes(256 * 1024), {
    trickleAfter: 0,
    trickleBytesPerSecond: 8,
    failures: 9,
    ranges: false,
  });
  await createModel(node, "m");
  const all = await allMessagesWithin(await startDownload(node, "m", { url }), 20_000);
  // Not 502 "the source cannot continue from byte N and the retries are used up": the rate.
  streamError(all, 504, /\d+ B\/s over 1 s, below the minimum of 1024 B\/s/);
  await waitFor(() => source.open === 0, "every trickling connection to be closed");
  assert.deepEqual(await partials(node.dataDir), []);
});

Deno.test("a source that trickles once is resumed and the download completes", async () => {
  await using node = await quickStall();
  await using source = startFileServer();
  const bytes = ggufBytes(512 * 1024);
  const url = source.serve("/m.gguf", bytes, { trickleAfter: 64 * 1024, trickleBytesPerSecond: 8 });
  await createModel(node, "m");
  const all = await allMessagesWithin(await startDownload(node, "m", { url }), 15_000);
  assert.equal(doneModel(all).sha256, await sha256Hex(bytes));
  assert.equal(source.requests.length, 2);
  const resumedAt = Number(/^bytes=(\d+)-$/.exec(source.requests[1].range ?? "")?.[1]);
  assert.ok(resumedAt >= 64 * 1024 && resumedAt < 64 * 1024 + 100, `resumed at ${resumedAt}`);
});
