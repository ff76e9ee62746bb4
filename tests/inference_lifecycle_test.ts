/**
 * Models in the inference engine over time, on a real node running tiny real llama models:
 * loading and unloading (the registry's PUT /models and the older OpenAI-path API), memory
 * refusals, the per-model queue, clients that go away, deleted and replaced files, idle unloads
 * and an engine that crashes.
 */
import assert from "node:assert/strict";
import { waitFor } from "../testing/node.ts";
import {
  alive,
  allData,
  api,
  chat,
  enginePid,
  expectOpenAiError,
  inferenceNode,
  listed,
  replaceFile,
  say,
  sseData,
} from "./helpers/inference.ts";
import { hugeDeclaredGguf, tinyLlamaGguf } from "../testing/tiny_llama.ts";

/** A model whose context holds long generations (8000 tokens take seconds). */
const LONG = {
  bytes: tinyLlamaGguf({ contextLength: 8192, seed: 5 }),
  record: { gguf: { initContextSize: 8192 } },
};

function ask(model: string, maxTokens: number, extra: Record<string, unknown> = {}) {
  return {
    model,
    messages: say("Tell me a story"),
    max_tokens: maxTokens,
    temperature: 0,
    ...extra,
  };
}

/**
 * Starts a streamed generation and reads up to its first piece of text; `data` reads on (the
 * stream stays open until it is read to its end or `abort` is called).
 */
async function startStream(node: Parameters<typeof api>[0], model: string, maxTokens: number) {
  const abort = new AbortController();
  const response = await api(node, "/chat/completions", ask(model, maxTokens, { stream: true }), {
    signal: abort.signal,
  });
  const data = sseData(response);
  while (true) {
    const { value, done } = await data.next();
    assert.ok(!done, "the stream ended before any text");
    // deno-lint-ignore no-explicit-any
    if ((value as any).choices?.[0]?.delta?.content) break;
  }
  return { abort, data };
}

function sleep(ms: number): Promise<undefined> {
  return new Promise((resolve) => setTimeout(() => resolve(undefined), ms));
}

/** `promise` settled, never rejected (so waiting on it later is no unhandled rejection). */
function settled<T>(promise: Promise<T>) {
  return promise.then(
    (value) => ({ ok: true, get: () => value }),
    (error) => ({
      ok: false,
      get: (): T => {
        throw error;
      },
    }),
  );
}

/** Milliseconds `run` takes. */
async function timed(run: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await run();
  return performance.now() - started;
}

Deno.test("models load, unload, queue, stop, go and survive an engine crash", async (t) => {
  await using node = await inferenceNode({
    tiny: { bytes: tinyLlamaGguf() },
    long: LONG,
    huge: { bytes: hugeDeclaredGguf() },
  }, { queueLimit: 1 });
  const registry = (body: unknown) =>
    fetch(`${node.storeUrl}/models`, {
      method: "PUT",
      headers: node.auth({ "Content-Type": "application/json" }),
      body: JSON.stringify(body),
    });

  await t.step("the registry's PUT /models loads with progress and unloads", async () => {
    const messages = await allData(await registry({ id: "tiny", action: "load" }));
    const progress = messages.slice(0, -1) as { progress: string }[];
    assert.ok(progress.length >= 1, JSON.stringify(messages));
    for (const { progress: text } of progress) {
      assert.match(text, /^<\|loading_model\|> \d+%<br \/>$/);
    }
    assert.deepEqual(messages.at(-1), { id: "tiny", object: "model", kind: "llm", loaded: true });
    assert.equal((await listed(node, "tiny"))?.loaded, true);
    const unloaded = await registry({ id: "tiny", action: "unload" });
    assert.equal(unloaded.status, 200);
    assert.deepEqual(await unloaded.json(), {
      id: "tiny",
      object: "model",
      kind: "llm",
      loaded: false,
    });
    assert.equal((await listed(node, "tiny"))?.loaded, false);
    const unknown = await registry({ id: "nope", action: "load" });
    assert.equal(unknown.status, 404, await unknown.text());
  });

  await t.step("the older API: POST /models streams the load, DELETE unloads", async () => {
    const messages = await allData(await api(node, "/models", { model: "tiny" }));
    assert.deepEqual(messages.at(-1), { id: "tiny", object: "model", kind: "llm", loaded: true });
    assert.equal((await listed(node, "tiny"))?.loaded, true);
    const unloaded = await api(node, "/models?modelId=tiny", undefined, { method: "DELETE" });
    assert.equal(unloaded.status, 200);
    assert.equal((await unloaded.json()).loaded, false);
    assert.equal((await listed(node, "tiny"))?.loaded, false);
  });

  await t.step("a model declaring more than the machine's memory is refused", async () => {
    const error = await expectOpenAiError(
      await api(node, "/chat/completions", ask("huge", 5)),
      507,
      "insufficient_memory",
    );
    const needs = Number(/needs about (\d+) MiB/.exec(error.message)?.[1]);
    assert.ok(needs > 100_000, error.message);
    assert.equal((await listed(node, "huge"))?.loaded, false);
  });

  let thousandMs = 0;
  await t.step("a client that goes away stops its generation at once", async () => {
    await chat(node, ask("long", 5));
    thousandMs = await timed(() => chat(node, ask("long", 1000)));
    // Left to run, 8000 tokens would take far more than 8 times as long as 1000.
    const stream = await startStream(node, "long", 8000);
    stream.abort.abort();
    const afterStream = await timed(() => chat(node, ask("long", 5)));
    assert.ok(afterStream < 2 * thousandMs + 300, `${afterStream} ms (1000 tokens: ${thousandMs})`);

    const abort = new AbortController();
    const whole = settled(
      api(node, "/chat/completions", ask("long", 8000), { signal: abort.signal }),
    );
    await sleep(300);
    abort.abort();
    assert.equal((await whole).ok, false, "aborted");
    const afterWhole = await timed(() => chat(node, ask("long", 5)));
    assert.ok(afterWhole < 2 * thousandMs + 300, `${afterWhole} ms (1000 tokens: ${thousandMs})`);
  });

  await t.step("one request runs, queueLimit wait, the next are 429", async () => {
    const running = await startStream(node, "long", 8000);
    // A streamed request that leaves the queue frees its place.
    const gone = new AbortController();
    const left = settled(
      api(node, "/chat/completions", ask("long", 5, { stream: true }), { signal: gone.signal }),
    );
    await sleep(300);
    gone.abort();
    assert.equal((await left).ok, false, "aborted while waiting");
    await sleep(100);
    const waiter = settled(chat(node, ask("long", 5)));
    await sleep(300);
    const refused = await api(node, "/chat/completions", ask("long", 5));
    assert.equal(refused.headers.get("retry-after"), "1");
    await expectOpenAiError(refused, 429, "rate_limit_error");
    assert.equal(await Promise.race([waiter, sleep(0)]), undefined, "the second one waits");
    running.abort.abort();
    const answer = (await waiter).get();
    assert.equal(answer.usage.completion_tokens, 5);
  });

  await t.step("deleting a loaded model unloads it", async () => {
    await chat(node, ask("tiny", 5));
    assert.equal((await listed(node, "tiny"))?.loaded, true);
    const deleted = await fetch(`${node.storeUrl}/models/tiny`, {
      method: "DELETE",
      headers: node.auth(),
    });
    assert.equal(deleted.status, 200, await deleted.text());
    assert.equal(await listed(node, "tiny"), undefined);
    const error = await expectOpenAiError(
      await api(node, "/chat/completions", ask("tiny", 5)),
      404,
    );
    assert.equal(error.code, "model_not_found");
  });

  await t.step("a new file for a loaded model replaces it in the engine", async () => {
    const before = (await chat(node, ask("long", 16))).choices[0].message.content;
    const count = (await listed(node, "long"))!.metrics!.inference_count;
    assert.ok(count > 1);
    await replaceFile(node, "long", tinyLlamaGguf({ contextLength: 8192, seed: 6 }));
    assert.equal((await listed(node, "long"))?.loaded, false, "unloaded before the file changed");
    const after = (await chat(node, ask("long", 16))).choices[0].message.content;
    assert.notEqual(after, before, "the new weights answer");
    const entry = await listed(node, "long");
    assert.equal(entry?.loaded, true);
    assert.equal(entry.metrics!.inference_count, 1);
  });

  await t.step("an engine crash ends the running stream, not the node", async () => {
    const stream = await startStream(node, "long", 8000);
    const pid = await enginePid(node);
    assert.ok(pid, "the engine runs");
    Deno.kill(pid, "SIGKILL");
    const rest: unknown[] = [];
    try {
      for await (const data of stream.data) rest.push(data);
      assert.equal(rest.at(-1), "[DONE]");
      // deno-lint-ignore no-explicit-any
      const error = (rest.at(-2) as any)?.error;
      assert.ok(error, JSON.stringify(rest.slice(-3)));
      assert.match(error.message, /engine/);
    } catch (error) {
      if (error instanceof assert.AssertionError) throw error;
      // The connection broke off: the other way a stream may end.
    }
    assert.ok(await alive(node.pid), "the node runs on");
    const answer = await chat(node, ask("long", 5));
    assert.equal(answer.choices[0].finish_reason, "length");
    const restarted = await enginePid(node);
    assert.ok(restarted && restarted !== pid);
    await node.stop();
    await waitFor(async () => !(await alive(restarted)), "the engine to end with the node");
  });
});

Deno.test("inference.memoryLimitMb counts loaded models; idle models unload", async () => {
  await using node = await inferenceNode({
    tiny: { bytes: tinyLlamaGguf() },
    tiny2: { bytes: tinyLlamaGguf({ seed: 2 }) },
    wide: { bytes: tinyLlamaGguf({ contextLength: 16384 }), record: LONG.record },
  }, { memoryLimitMb: 12, idleUnloadSeconds: 2 });
  const refused = async (model: string) => {
    const error = await expectOpenAiError(
      await api(node, "/chat/completions", ask(model, 5)),
      507,
      "insufficient_memory",
    );
    assert.match(error.message, /needs about \d+ MiB .*, and \d+ MiB is available/);
    return Number(/needs about (\d+) MiB/.exec(error.message)![1]);
  };
  // The tiny model needs about 8 MiB with its 512-token context; a 16384-token one, more.
  assert.ok(await refused("wide") > 12);
  await chat(node, ask("tiny", 5));
  assert.equal((await listed(node, "tiny"))?.loaded, true);
  assert.ok(await refused("tiny2") <= 12, "fits alone, not beside the loaded one");
  await waitFor(async () => (await listed(node, "tiny"))?.loaded === false, "idle unload", 4000);
  await chat(node, ask("tiny2", 5));
  assert.equal((await listed(node, "tiny2"))?.loaded, true);
});
