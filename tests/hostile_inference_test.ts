/**
 * Issue 34, items 2, 6 and 8, tried as a hostile client would against a real node: detached
 * `context.ml` floods must not take a model away from the key holder (fair queue, 429 at once,
 * `max_tokens` bounded, a budget for detached calls); a crafted model must not reach llama.cpp,
 * nor take the engine (or another model's stream) down, nor leak host paths; a 1 MB prompt is
 * a 400 naming the context length.
 */
import assert from "node:assert/strict";
import { deployScript, mcm } from "../testing/mcm.ts";
import { type TestNode, waitFor } from "../testing/node.ts";
import { uploadRaw } from "./helpers/store.ts";
import { createModel } from "./helpers/store.ts";
import {
  api,
  chat,
  enginePid,
  expectOpenAiError,
  inferenceNode,
  replaceFile,
  say,
  sseData,
} from "./helpers/inference.ts";
import { tinyLlamaGguf } from "../testing/tiny_llama.ts";
import {
  declaredTensorGguf,
  enginePids,
  HOSTILE_ML_MIM,
  withU32,
} from "./helpers/hostile_inference_models.ts";

/** A model whose context lets a generation run for seconds (and, uncapped, for ever). */
const LONG = {
  bytes: tinyLlamaGguf({ contextLength: 2048, seed: 7 }),
  record: { gguf: { initContextSize: 2048 } },
};

function post(url: string, body: unknown): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

interface Outcome {
  status: number;
  message?: string;
  finish?: string;
  tokens?: number;
}

async function results(url: string): Promise<Outcome[]> {
  return await (await fetch(`${url}/results`)).json();
}

/** Host paths and native frames must never reach a caller. */
function assertClean(message: string, dataDir: string) {
  assert.ok(!message.includes(dataDir), `a host path in: ${message}`);
  assert.doesNotMatch(message, /\/root\/|\/tmp\/|gdb|#\d+\s+0x|node_modules/, message);
}

Deno.test("a container's detached flood neither hangs the key holder nor runs unbounded", async (t) => {
  await using node = await inferenceNode({ long: LONG, tiny: { bytes: tinyLlamaGguf() } });
  const { url } = await deployScript(node, "flood", HOSTILE_ML_MIM);

  await t.step("16 detached huge generations: some refused at once with 429", async () => {
    const answer = await post(`${url}/detached`, {
      n: 16,
      options: { model: "long", messages: say("go"), max_tokens: 16_777_216 },
    });
    assert.equal(answer.status, 202);
    // The queue refuses what does not fit at once: nothing waits for a place.
    await waitFor(async () => (await results(url)).some((r) => r.status === 429), "a 429", 15_000);
    const refused = (await results(url)).filter((r) => r.status === 429);
    assert.ok(refused.length >= 8, JSON.stringify(refused));
    assert.match(refused[0].message!, /waiting already/);
  });

  await t.step("the key holder's own chat is answered within seconds, not hung", async () => {
    const started = performance.now();
    const response = await api(node, "/chat/completions", {
      model: "long",
      messages: say("hello"),
      max_tokens: 4,
    }, { signal: AbortSignal.timeout(25_000) });
    const body = await response.json();
    assert.equal(response.status, 200, JSON.stringify(body));
    assert.equal(body.usage.completion_tokens, 4);
    // At most one microservice job runs before it, and that one is bounded by the context.
    assert.ok(performance.now() - started < 25_000);
  });

  await t.step("the detached generations end, bounded by the model's context", async () => {
    await waitFor(
      async () => (await results(url)).filter((r) => r.status === 200).length >= 1,
      "a detached generation to end",
      60_000,
    );
    for (const done of (await results(url)).filter((r) => r.status === 200)) {
      assert.ok(done.tokens! <= 2048, JSON.stringify(done));
    }
  });

  await t.step("the API's max_tokens 16,777,216 is capped to the context", async () => {
    const response = await api(node, "/chat/completions", {
      model: "tiny",
      messages: say("hi"),
      max_tokens: 16_777_216,
    }, { signal: AbortSignal.timeout(60_000) });
    const body = await response.json();
    assert.equal(response.status, 200, JSON.stringify(body));
    assert.equal(body.choices[0].finish_reason, "length");
    assert.ok(body.usage.completion_tokens <= 512, JSON.stringify(body.usage));
  });
});

Deno.test("the key holder's chat runs beside a microservice's long generation, not after it", async () => {
  // A context of 8192 tokens: a detached generation that fills it runs for seconds.
  const WIDE = {
    bytes: tinyLlamaGguf({ contextLength: 8192, seed: 9 }),
    record: { gguf: { initContextSize: 8192 } },
  };
  await using node = await inferenceNode({ wide: WIDE });
  const { url } = await deployScript(node, "hog", HOSTILE_ML_MIM);
  // Loaded first, so that the generation starts at once.
  await chat(node, { model: "wide", messages: say("hi"), max_tokens: 1 });
  const started = performance.now();
  await post(`${url}/detached`, {
    n: 1,
    options: { model: "wide", messages: say("go"), max_tokens: 16_777_216 },
  });
  await new Promise((resolve) => setTimeout(resolve, 300));
  const waits: number[] = [];
  for (let i = 0; i < 5; i++) {
    const asked = performance.now();
    const body = await chat(node, { model: "wide", messages: say(`hello ${i}`), max_tokens: 4 });
    waits.push(performance.now() - asked);
    assert.equal(body.usage.completion_tokens, 4);
  }
  // Answered while the generation still runs: on one shared sequence they would wait for it.
  assert.deepEqual(await results(url), [], `the generation ended first (${waits} ms)`);
  assert.ok(Math.max(...waits) < 1500, `the key holder waited ${waits.map(Math.round)} ms`);
  console.log(
    `key holder beside a detached generation: ${waits.map(Math.round).join(", ")} ms ` +
      `(${Math.round(performance.now() - started)} ms into it)`,
  );
});

Deno.test("detached calls draw from a per-container budget; calls in a request do not", async (t) => {
  await using node = await inferenceNode(
    { long: LONG },
    { detachedEngineSeconds: 1, detachedWindowSeconds: 3600 },
  );
  const { url, container } = await deployScript(node, "budget", HOSTILE_ML_MIM);
  const options = { model: "long", messages: say("go"), max_tokens: 2048 };

  await t.step(
    "once the budget is spent, a detached call is refused with 429 naming it",
    async () => {
      let started = 0;
      await waitFor(
        async () => {
          const outcomes = await results(url);
          if (outcomes.some((r) => r.status === 429 && /detachedEngineSeconds/.test(r.message!))) {
            return true;
          }
          // One at a time: each runs until the budget stops it, the next finds it spent.
          if (outcomes.length === started) {
            started++;
            await post(`${url}/detached`, { n: 1, options });
          }
          await new Promise((resolve) => setTimeout(resolve, 200));
          return false;
        },
        "a refusal naming the budget",
        60_000,
      );
      // The first ran and was stopped at the budget, short of its 2048 tokens.
      const first = (await results(url))[0];
      assert.equal(first.status, 200, JSON.stringify(first));
      const refusal = (await results(url)).find((r) => r.status === 429)!;
      assert.match(refusal.message!, /1 s of engine time per 3600 s/);
    },
  );

  await t.step("a call made while serving a request still runs", async () => {
    const response = await post(`${url}/chat`, { ...options, max_tokens: 3 });
    const body = await response.json();
    assert.equal(response.status, 200, JSON.stringify(body));
    assert.equal(body.usage.completion_tokens, 3);
  });

  await t.step("the container's record shows its engine time and refusals", async () => {
    const view = await (await mcm(node, `/containers/${container.id}`)).json();
    const used = view.inference;
    assert.ok(used, JSON.stringify(view));
    assert.ok(used.requests >= 2 && used.completionTokens > 3, JSON.stringify(used));
    assert.ok(used.detachedEngineMs >= 900, `detached engine time ${used.detachedEngineMs} ms`);
    assert.ok(used.engineMs > used.detachedEngineMs, JSON.stringify(used));
    assert.ok(used.budgetRefusals >= 1, JSON.stringify(used));
  });
});

Deno.test("a 1 MB prompt is a 400 naming the context length, from the API and context.ml", async (t) => {
  await using node = await inferenceNode({ tiny: { bytes: tinyLlamaGguf() } });
  const { url } = await deployScript(node, "bigprompt", HOSTILE_ML_MIM);
  const prompt = "hello world ".repeat(90_000);

  await t.step("the API: 400 context_length_exceeded", async () => {
    // The API takes 64 KB of JSON: a prompt of 48 KB is still many times the context.
    const response = await api(node, "/chat/completions", {
      model: "tiny",
      messages: say(prompt.slice(0, 48_000)),
      max_tokens: 4,
    });
    const error = await expectOpenAiError(response, 400, "invalid_request_error");
    assert.equal(error.code, "context_length_exceeded");
    assert.match(error.message, /context of 512 tokens/);
  });

  await t.step("context.ml: 400 with the same words", async () => {
    const response = await post(`${url}/chat`, {
      model: "tiny",
      messages: say(prompt),
      max_tokens: 4,
    });
    const body = await response.json();
    assert.equal(response.status, 422, JSON.stringify(body).slice(0, 300));
    assert.equal(body.status, 400, body.message);
    assert.match(body.message, /context of 512 tokens/);
  });
});

/** A streamed chat of 1500 tokens on the model "long", its first chunk read. */
async function longStream(node: TestNode) {
  const chunks = sseData(
    await api(node, "/chat/completions", {
      model: "long",
      messages: say("go"),
      max_tokens: 1500,
      stream: true,
    }),
  );
  assert.ok(!(await chunks.next()).done, "the stream started");
  return chunks;
}

Deno.test("crafted models never reach llama.cpp nor take others down", async (t) => {
  const tiny = tinyLlamaGguf();
  await using node = await inferenceNode({ tiny: { bytes: tiny }, long: LONG });

  await t.step(
    "hyperparameters llama.cpp divides by or sizes from are refused at upload",
    async () => {
      const crafted: Record<string, Uint8Array> = {
        "zero-heads": withU32(tiny, "llama.attention.head_count", 0),
        "zero-kv-heads": withU32(tiny, "llama.attention.head_count_kv", 0),
        "many-blocks": withU32(tiny, "llama.block_count", 100_000),
        "zero-context": withU32(tiny, "llama.context_length", 0),
        "zero-feed-forward": withU32(tiny, "llama.feed_forward_length", 0),
        "overflow": declaredTensorGguf([2 ** 32, 2 ** 32]),
      };
      for (const [id, bytes] of Object.entries(crafted)) {
        await createModel(node, id, "llm");
        const response = await uploadRaw(node, id, bytes);
        const text = await response.text();
        assert.equal(response.status, 400, `${id}: ${text}`);
        assert.match(text, /not a usable GGUF file/, id);
        assertClean(text, node.dataDir);
      }
    },
  );

  await t.step(
    "a file cut short fails to load cleanly, while another model streams on",
    async () => {
      await createModel(node, "cut", "llm");
      assert.equal((await uploadRaw(node, "cut", tiny.slice(0, tiny.length - 4096))).status, 200);
      const chunks = await longStream(node);
      for (let attempt = 0; attempt < 2; attempt++) {
        const response = await api(node, "/chat/completions", { model: "cut", messages: say("x") });
        const error = await expectOpenAiError(response, 400);
        assert.match(error.message, attempt === 0 ? /runs past the end/ : /not loaded again/);
        assert.match(error.message, /until its file changes/);
        assertClean(error.message, node.dataDir);
      }
      const rest: unknown[] = [];
      for await (const chunk of chunks) rest.push(chunk);
      assert.equal(rest.at(-1), "[DONE]");
      const last = rest.at(-2) as { choices: { finish_reason: string }[] };
      assert.equal(last.choices[0].finish_reason, "length", JSON.stringify(last));
    },
  );

  await t.step(
    "a file whose load ends its engine is marked failed; other streams go on",
    async () => {
      const shared = await enginePid(node);
      assert.ok(shared, "the shared engine runs");
      const chunks = await longStream(node);
      await createModel(node, "crasher", "llm");
      assert.equal((await uploadRaw(node, "crasher", tinyLlamaGguf({ seed: 9 }))).status, 200);
      const first = api(node, "/chat/completions", { model: "crasher", messages: say("x") });
      // A file that crashes llama.cpp as it loads, as a SIGKILL of the process loading it: the
      // load must happen in a process of its own, not the shared engine.
      let probe: number | undefined;
      await waitFor(
        async () => {
          probe = (await enginePids(node.dataDir)).find((pid) => pid !== shared);
          return probe !== undefined;
        },
        "a throwaway engine loading the new file",
        20_000,
      );
      Deno.kill(probe!, "SIGKILL");
      const error = await expectOpenAiError(await first, 400);
      assert.match(error.message, /failed to load: the inference engine ended while loading it/);
      assertClean(error.message, node.dataDir);
      const again = await api(node, "/chat/completions", { model: "crasher", messages: say("x") });
      assert.match((await expectOpenAiError(again, 400)).message, /not loaded again/);
      const rest: unknown[] = [];
      for await (const chunk of chunks) rest.push(chunk);
      assert.equal(rest.at(-1), "[DONE]");
      const last = rest.at(-2) as { choices: { finish_reason: string }[] };
      assert.equal(last.choices[0].finish_reason, "length", JSON.stringify(last));
      assert.equal(await enginePid(node), shared, "the shared engine was never restarted");
    },
  );

  await t.step("a new file is loaded again", async () => {
    await replaceFile(node, "cut", tiny);
    const response = await api(node, "/chat/completions", {
      model: "cut",
      messages: say("x"),
      max_tokens: 2,
    });
    assert.equal(response.status, 200, await response.text());
  });

  await t.step(
    "a file that crashes the engine as it runs (not as it loads) is marked failed too",
    async () => {
      const chunks = await longStream(node);
      // llama.cpp aborting in the middle of this model's generation, as a crafted file does.
      Deno.kill((await enginePid(node))!, "SIGABRT");
      for await (const _ of chunks) { /* its end */ }
      const again = await api(node, "/chat/completions", { model: "long", messages: say("x") });
      const error = await expectOpenAiError(again, 400);
      assert.match(error.message, /ended the inference engine while it ran.*not loaded again/);
      assertClean(error.message, node.dataDir);
      // Another model runs on the restarted engine.
      const other = await api(node, "/chat/completions", {
        model: "cut",
        messages: say("x"),
        max_tokens: 2,
      });
      assert.equal(other.status, 200, await other.text());
    },
  );

  await t.step("the engine runs without PATH and without ggml's gdb backtrace", async () => {
    const pid = await enginePid(node);
    assert.ok(pid, "the engine runs");
    // Deno reads /proc only with --allow-all: cat reads it.
    const { stdout } = await new Deno.Command("cat", { args: [`/proc/${pid}/environ`] }).output();
    const environ = new TextDecoder().decode(stdout).split("\0");
    assert.ok(!environ.some((entry) => entry.startsWith("PATH=")), environ.join(" "));
    assert.ok(environ.includes("GGML_NO_BACKTRACE=1"), environ.join(" "));
  });
});
