/**
 * The tiny llama GGUF writer: its files are deterministic, read by the registry's header reader,
 * and loaded and run by llama.cpp (the tests' shared engine, installed on first use:
 * testing/engine.ts). The engine runs in a Deno subprocess
 * of its own (it needs --node-modules-dir=manual, no config and FFI), which prints JSON.
 */
import assert from "node:assert/strict";
import { readGgufMetadata } from "../src/store/gguf_metadata.ts";
import { withTempDir } from "../testing/node.ts";
import { runToEnd } from "../testing/run.ts";
import { ensureTestEngine } from "../testing/engine.ts";
import { hugeDeclaredGguf, tinyLlamaGguf, type TinyLlamaOptions } from "../testing/tiny_llama.ts";

Deno.test("the tiny model is deterministic per seed, small, and read by the header reader", () =>
  withTempDir(async (dir) => {
    const model = tinyLlamaGguf();
    assert.deepEqual(model, tinyLlamaGguf({ seed: 1 }));
    assert.notDeepEqual(model, tinyLlamaGguf({ seed: 2 }));
    assert.ok(model.length < 2_000_000, `${model.length} bytes`);
    await Deno.writeFile(`${dir}/tiny.gguf`, model);
    const { info, chatTemplate } = await readGgufMetadata(`${dir}/tiny.gguf`);
    assert.equal(info.architecture, "llama");
    assert.equal(info.contextLength, 512);
    assert.equal(info.embeddingLength, 64);
    assert.equal(info.quantization, "F32");
    assert.ok(chatTemplate?.includes("<|im_start|>"));
    // Whole tensor data: header plus 4 bytes per parameter, padded.
    assert.ok(info.parameterCount! * 4 < model.length && model.length < info.parameterCount! * 5);
  }));

Deno.test("the huge declared model is a tiny file whose header claims a 70B model", () =>
  withTempDir(async (dir) => {
    const huge = hugeDeclaredGguf();
    assert.ok(huge.length < 200_000, `${huge.length} bytes`);
    await Deno.writeFile(`${dir}/huge.gguf`, huge);
    const { info } = await readGgufMetadata(`${dir}/huge.gguf`);
    assert.equal(info.architecture, "llama");
    assert.equal(info.contextLength, 131072);
    assert.equal(info.quantization, "F16");
    assert.ok(info.parameterCount! > 60e9, `${info.parameterCount} parameters`);
  }));

/** Run in the subprocess: its arguments are the engine entry and the two model paths. */
const PROBE = `
const [entry, modelPath, eosFirstPath] = Deno.args;
const { getLlama, LlamaChatSession, resolveChatWrapper } = await import(new URL("file://" + entry).href);
const llama = await getLlama({ gpu: false, build: "never", logLevel: "warn" });
const model = await llama.loadModel({ modelPath });
const context = await model.createContext({ contextSize: 512, threads: 1 });
const chatWrapper = resolveChatWrapper(model);
async function reply(ctx, prompt) {
  const session = new LlamaChatSession({ contextSequence: ctx.getSequence(), chatWrapper });
  let tokens = 0;
  const start = performance.now();
  const result = await session.promptWithMeta(prompt, {
    maxTokens: 100, temperature: 0, onToken: (chunk) => tokens += chunk.length,
  });
  const seconds = (performance.now() - start) / 1000;
  session.sequence.dispose();
  return { text: result.responseText, stopReason: result.stopReason, tokens, seconds };
}
const replies = [await reply(context, "Hello there"), await reply(context, "Tell me about a cat")];
const embeddingContext = await model.createEmbeddingContext({ contextSize: 128, threads: 1 });
const embedding = (await embeddingContext.getEmbeddingFor("hello world")).vector.length;
const facts = {
  trainContextSize: model.trainContextSize,
  embeddingVectorSize: model.embeddingVectorSize,
  blockCount: model.fileInfo.metadata.llama.block_count,
  wrapper: chatWrapper?.wrapperName,
  replies,
  embedding,
};
await embeddingContext.dispose();
await context.dispose();
await model.dispose();
const eosModel = await llama.loadModel({ modelPath: eosFirstPath });
const eosContext = await eosModel.createContext({ contextSize: 512, threads: 1 });
facts.eosFirst = await reply(eosContext, "Hello there");
await eosContext.dispose();
await eosModel.dispose();
console.log(JSON.stringify(facts));
`;

Deno.test({
  name: "node-llama-cpp loads the tiny model, chats with ChatML to max tokens, and embeds",
  fn: () =>
    withTempDir(async (dir) => {
      const options: TinyLlamaOptions = {
        seed: 3,
        layers: 3,
        embedding: 96,
        heads: 6,
        feedForward: 160,
        contextLength: 1024,
      };
      await Deno.writeFile(`${dir}/tiny.gguf`, tinyLlamaGguf(options));
      await Deno.writeFile(`${dir}/eos.gguf`, tinyLlamaGguf({ eos: "first" }));
      await Deno.writeTextFile(`${dir}/probe.ts`, PROBE);
      const run = await runToEnd(Deno.execPath(), {
        args: [
          "run",
          "-A",
          "--no-config",
          "--node-modules-dir=manual",
          `${dir}/probe.ts`,
          `${await ensureTestEngine()}/node_modules/node-llama-cpp/dist/index.js`,
          `${dir}/tiny.gguf`,
          `${dir}/eos.gguf`,
        ],
        cwd: dir,
      });
      assert.equal(run.code, 0, run.stderr);
      const facts = JSON.parse(run.stdout.trim().split("\n").at(-1)!);
      assert.equal(facts.trainContextSize, 1024);
      assert.equal(facts.embeddingVectorSize, 96);
      assert.equal(facts.blockCount, 3);
      assert.equal(facts.wrapper, "ChatML");
      for (const reply of facts.replies) {
        assert.equal(reply.tokens, 100, JSON.stringify(reply));
        assert.equal(reply.stopReason, "maxTokens");
        assert.match(reply.text, /^[\x20-\x7e]+$/);
      }
      assert.notEqual(facts.replies[0].text, facts.replies[1].text);
      assert.equal(facts.embedding, 96);
      assert.equal(facts.eosFirst.text, "");
      assert.equal(facts.eosFirst.stopReason, "eogToken");
      const seconds = facts.replies.reduce(
        (sum: number, r: { seconds: number }) => sum + r.seconds,
        0,
      );
      console.log(`tiny llama: ${Math.round(200 / seconds)} tokens/s (threads 1)`);
    }),
});
