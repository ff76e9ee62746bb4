/**
 * `context.ml`: a microservice written the reference's way (ES5, callbacks) runs chat
 * completions, streamed and whole, and embeddings on its node's models, named by registry id or
 * by file path, and only those; a client that goes away stops the generation; with inference
 * off its calls fail with 503. Also the call channel's streaming and cancellation (NodeCalls
 * against CallAnswers, in process), and a microservice whose callbacks throw later, again and
 * again, keeps its worker.
 */
import assert from "node:assert/strict";
import * as v from "valibot";
import { ChatCompletionSchema } from "../gen/inference/validators.ts";
import type { ContainerCall } from "../gen/mcm/validators.ts";
import { CallAnswers, StreamingAnswer } from "../src/mcm/services/container_calls.ts";
import { type NodeAnswer, NodeCalls } from "../src/mcm/sandbox/worker/node_calls.ts";
import { ensureTestEngine } from "../testing/engine.ts";
import { deployScript, getJson, mcm } from "../testing/mcm.ts";
import { startTestNode, type TestNode, waitFor } from "../testing/node.ts";
import { createModel, uploadRaw } from "./helpers/store.ts";
import { tinyLlamaGguf } from "../testing/tiny_llama.ts";

const CONFIG = { apiKey: "a-test-key-of-enough-length", discovery: { mdns: false } };
/** The tiny model's n_embd (testing/tiny_llama.ts). */
const EMBEDDING = 64;

/** POST /chat and /embed: the body is context.ml's options; the callbacks answer. */
const ML_MIM = String.raw`
function send(res, status, body) {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(body));
}
function failed(res) {
  return function (err) {
    console.log('ml error ' + err.status);
    send(res, 422, { callback: 'error', message: err.message, status: err.status });
  };
}
mimikModule.exports = function (context, req, res) {
  var path = req.url.split('?')[0];
  if (path === '/late-errors') {
    setTimeout(function () { throw new Error('late one'); }, 0);
    setTimeout(function () { throw new Error('late two'); }, 0);
    setTimeout(function () { Promise.reject(new Error('rejected')); }, 0);
    return send(res, 200, { scheduled: 3 });
  }
  if (path === '/ok') return send(res, 200, { ok: true, ml: typeof context.ml.chatCompletions });
  var options = JSON.parse(req.body || '{}');
  options.error = failed(res);
  if (path === '/chat') {
    options.success = function (e) {
      res.setHeader('content-type', e.headers['content-type']);
      if (!options.stream) return res.end(e.data);
      res.write(e.data);
      if (e.done) res.end();
    };
    return context.ml.chatCompletions(options);
  }
  if (path === '/embed') {
    options.success = function (e) { send(res, 200, { done: e.done, vectors: JSON.parse(e.data) }); };
    return context.ml.embeddings(options);
  }
  send(res, 404, { code: 404, message: 'Not Found' });
};`;

function post(url: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal,
  });
}

async function logsOf(node: TestNode, id: string): Promise<string> {
  return await (await mcm(node, `/containers/${id}/logs`)).text();
}

const HELLO = [{ role: "user", content: "hello there" }];

/** The error callback's `{status, message}`, asserting the microservice got it. */
async function mlError(url: string, body: unknown) {
  const response = await post(url, body);
  const answer = await response.json();
  assert.equal(response.status, 422, JSON.stringify(answer));
  assert.equal(answer.callback, "error");
  return answer as { status: number; message: string };
}

async function uploadModel(node: TestNode, id: string, kind: string, bytes: Uint8Array) {
  await createModel(node, id, kind);
  const uploaded = await uploadRaw(node, id, bytes);
  assert.equal(uploaded.status, 200, await uploaded.text());
}

Deno.test("context.ml: chat streamed and whole, embeddings, models of the registry only", async (t) => {
  await ensureTestEngine();
  await using node = await startTestNode({ config: CONFIG });
  const tiny = tinyLlamaGguf();
  await uploadModel(node, "tiny", "llm", tiny);
  await uploadModel(node, "tiny-embed", "embed", tiny);
  const { url, container } = await deployScript(node, "mlmim", ML_MIM);
  const modelsDir = `${await Deno.realPath(node.dataDir)}/models`;

  await t.step(
    "a streamed chat: chunks as the API sends them, usage last, then [DONE]",
    async () => {
      const response = await post(`${url}/chat`, {
        model: "tiny",
        messages: HELLO,
        stream: true,
        max_tokens: 6,
        max_context: 99999,
        n_gpu_layers: 99,
      });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get("content-type"), "text/event-stream");
      const messages = (await response.text()).split("\n\n");
      assert.equal(messages.pop(), "", "each message ends with a blank line");
      assert.equal(messages.pop(), "data: [DONE]");
      const chunks = messages.map((message) => {
        assert.match(message, /^data: /);
        return JSON.parse(message.slice(6));
      });
      for (const chunk of chunks) {
        assert.equal(chunk.object, "chat.completion.chunk");
        assert.equal(chunk.model, "tiny");
        assert.equal(chunk.id, chunks[0].id);
      }
      assert.match(chunks[0].id, /^chatcmpl-/);
      assert.deepEqual(chunks[0].choices[0].delta, { role: "assistant", content: "" });
      const last = chunks.at(-1);
      assert.equal(last.choices[0].finish_reason, "length");
      assert.equal(last.usage.completion_tokens, 6);
      assert.ok(last.usage.prompt_tokens > 0);
      const text = chunks.slice(1, -1).map((chunk) => chunk.choices[0].delta.content).join("");
      assert.ok(text.length > 0, "the reply's text came in chunks");
    },
  );

  await t.step("a whole chat: a chat.completion, the same the API gives", async () => {
    const request = { messages: HELLO, max_tokens: 5, temperature: 0 };
    const response = await post(`${url}/chat`, { ...request, model: "tiny" });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "application/json");
    const completion = v.parse(ChatCompletionSchema, await response.json());
    assert.equal(completion.model, "tiny");
    const choice = completion.choices[0] as { finish_reason: string; message: { content: string } };
    assert.equal(choice.finish_reason, "length");
    assert.equal(completion.usage.completion_tokens, 5);
    const api = await fetch(`${node.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${node.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ ...request, model: "tiny" }),
    });
    const direct = await api.json();
    assert.equal(choice.message.content, direct.choices[0].message.content);
    assert.deepEqual(Object.keys(completion).sort(), Object.keys(direct).sort());
  });

  await t.step("a model named by its file's path, resolved in the models folder", async () => {
    for (const path of [`${modelsDir}/tiny/tiny.gguf`, `${modelsDir}/tiny/../tiny/tiny.gguf`]) {
      const response = await post(`${url}/chat`, { model: path, messages: HELLO, max_tokens: 2 });
      const completion = await response.json();
      assert.equal(response.status, 200, JSON.stringify(completion));
      assert.equal(completion.model, "tiny", "the answer names the registry id");
      assert.equal(completion.usage.completion_tokens, 2);
    }
  });

  await t.step("embeddings: one vector of n_embd per input, the API's", async () => {
    const input = ["hello world", "the cat sat"];
    const { status, body } = await getJson(`${url}/embed`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: `${modelsDir}/tiny-embed/tiny-embed.gguf`, input }),
    });
    assert.equal(status, 200, JSON.stringify(body));
    assert.equal(body.done, true);
    assert.equal(body.vectors.length, 2);
    for (const vector of body.vectors) assert.equal(vector.length, EMBEDDING);
    const one = await (await post(`${url}/embed`, { model: "tiny-embed", input: "hello world" }))
      .json();
    assert.deepEqual(one.vectors, [body.vectors[0]]);
  });

  await t.step("a client that goes away mid-stream stops the generation", async () => {
    const long = tinyLlamaGguf({
      contextLength: 8192,
      embedding: 256,
      layers: 4,
      feedForward: 512,
    });
    await uploadModel(node, "long", "llm", long);
    const abort = new AbortController();
    const body = { model: "long", messages: HELLO, stream: true, max_tokens: 6000 };
    const response = await post(`${url}/chat`, body, abort.signal);
    const reader = response.body!.getReader();
    await reader.read();
    abort.abort();
    // 6000 tokens take this model over 10 s; cancelled, the model is free at once.
    const start = performance.now();
    const next = await fetch(`${node.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${node.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "long", messages: HELLO, max_tokens: 1 }),
    });
    assert.equal(next.status, 200, await next.text());
    assert.ok(performance.now() - start < 3000, `waited ${performance.now() - start} ms`);
    await waitFor(async () => (await logsOf(node, container.id)).includes("ml error 499"), "499");
  });

  await t.step("anything but a model of the registry: the error callback says so", async () => {
    const outside = [
      "/etc/passwd",
      "../config.json",
      `${modelsDir}/../config.json`,
      `${modelsDir}/tiny`,
      `${modelsDir}/tiny/nothing.gguf`,
      "/no/such/file.gguf",
    ];
    for (const model of outside) {
      const error = await mlError(`${url}/chat`, { model, messages: HELLO, max_tokens: 1 });
      assert.equal(error.status, 400, model);
      assert.match(error.message, /is not a model of this node's registry/, model);
    }
    const unknown = await mlError(`${url}/chat`, { model: "nope", messages: HELLO });
    assert.equal(unknown.status, 404);
    assert.match(unknown.message, /model 'nope' not found in the model registry/);
    const none = await mlError(`${url}/embed`, { input: "hi" });
    assert.equal(none.status, 400);
    assert.match(none.message, /pass 'model'/);
    const kind = await mlError(`${url}/chat`, { model: "tiny-embed", messages: HELLO });
    assert.equal(kind.status, 400);
    assert.match(kind.message, /kind embed/);
    const invalid = await mlError(`${url}/chat`, { model: "tiny", messages: [] });
    assert.equal(invalid.status, 400);
    assert.match(invalid.message, /field 'messages'/);
  });
});

Deno.test("context.ml with inference off: 503; late exceptions do not end the worker", async () => {
  await using node = await startTestNode({ config: { ...CONFIG, inference: { enabled: false } } });
  const { url, container } = await deployScript(node, "offmim", ML_MIM);
  const error = await mlError(`${url}/chat`, { model: "tiny", messages: HELLO });
  assert.equal(error.status, 503);
  assert.match(error.message, /inference is off on this node/);

  for (let i = 0; i < 3; i++) {
    assert.equal((await getJson(`${url}/late-errors`)).status, 200);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.deepEqual(await getJson(`${url}/ok`), {
    status: 200,
    body: { ok: true, ml: "function" },
  });
  const state = await (await mcm(node, `/containers/${container.id}`)).json();
  assert.equal(state.restarts, 0, "the worker survived every late exception");
  const logs = await logsOf(node, container.id);
  assert.equal(logs.match(/uncaught: Error: late two/g)?.length, 3, logs);
  assert.equal(logs.match(/unhandled rejection: Error: rejected/g)?.length, 3, logs);
});

Deno.test("a call that streams: events before its answer; a cancel stops the node's work", async () => {
  const sent: NodeAnswer[] = [];
  const stopped = Promise.withResolvers<string>();
  const nodeSide = new CallAnswers(
    (text) => {
      const message = JSON.parse(text) as NodeAnswer;
      sent.push(message);
      queueMicrotask(() => workerSide.onAnswer(message));
    },
    (call) =>
      Promise.resolve(
        new StreamingAnswer(async (emit, signal) => {
          const count = Number((call.request as { count: number }).count);
          for (let i = 0; i < count; i++) emit(`part ${i}`);
          if (count > 0) return "whole";
          await new Promise((resolve) => signal.addEventListener("abort", resolve));
          stopped.resolve(String(signal.reason?.name));
          throw new Error("aborted");
        }),
      ),
    (line) => assert.fail(`logged: ${line}`),
  );

  const workerSide = new NodeCalls((message) =>
    queueMicrotask(() => {
      if (message.t === "call") void nodeSide.answer(message as ContainerCall);
      if (message.t === "cancel") nodeSide.cancel(message.id as number);
    })
  );
  const events: unknown[] = [];
  const value = await workerSide.call({ op: "chat", request: { count: 3 } }, {
    onEvent: (event) => events.push(event),
  });
  assert.deepEqual(events, ["part 0", "part 1", "part 2"]);
  assert.equal(value, "whole");

  const abort = new AbortController();
  const waiting = workerSide.call({ op: "chat", request: { count: 0 } }, { signal: abort.signal });
  await new Promise((resolve) => setTimeout(resolve, 10));
  sent.length = 0;
  abort.abort();
  await assert.rejects(waiting, (error: Error & { status: number }) => error.status === 499);
  assert.equal(await stopped.promise, "AbortError", "the node's work saw the cancel");
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.deepEqual(sent, [], "no answer after the cancel");
});
