/**
 * The GGUF header reader and the chat template hints, on files and templates shaped like the
 * real ones (llama.cpp converter layout; templates as Hugging Face model cards ship them).
 */
import assert from "node:assert/strict";
import { hintForTemplate } from "../src/store/chat_template_hint.ts";
import { GgufMalformed, readGgufMetadata } from "../src/store/gguf_metadata.ts";
import { concatBytes } from "../src/tunnel/bytes.ts";
import { ModelSchema } from "../gen/store/validators.ts";
import { expectError, expectJson } from "../testing/contract.ts";
import { allMessages, startDownload, streamError } from "../testing/events.ts";
import { startFileServer } from "../testing/file_server.ts";
import { ggufWithMetadata, LLAMA3_TEMPLATE } from "./helpers/gguf.ts";
import { listFiles, startTestNode, withTempDir } from "../testing/node.ts";
import { createModel, uploadRaw } from "./helpers/store.ts";

Deno.test("chat templates of the common families map to their hints; unknown ones to none", () => {
  const cases: [string, string | undefined][] = [
    [
      "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{% endfor %}",
      "chatml",
    ],
    [LLAMA3_TEMPLATE, "llama3"],
    ["{{ bos_token }}[INST] <<SYS>>\n{{ system }}\n<</SYS>>\n\n{{ m }} [/INST]", "llama2"],
    ["{{ bos_token }}[SYSTEM_PROMPT]{{ s }}[/SYSTEM_PROMPT][INST]{{ m }}[/INST]", "mistral-v7"],
    ["[AVAILABLE_TOOLS]{{ tools }}[/AVAILABLE_TOOLS][INST]{{ m }}[/INST]", "mistral-v3"],
    ["{{ '<|user|>\n' + m + '<|end|>\n<|assistant|>\n' }}", "phi3"],
    ["<bos><start_of_turn>user\n{{ m }}<end_of_turn>\n<start_of_turn>model\n", "gemma"],
    ["<|START_OF_TURN_TOKEN|><|USER_TOKEN|>{{ m }}<|END_OF_TURN_TOKEN|>", "command-r"],
    ["{{'<｜User｜>' + m}}{{'<｜Assistant｜>'}}", "deepseek3"],
    ["{{ '<|user|>\n' + m + '</s>' }}<|assistant|>", "zephyr"],
    ["GPT4 Correct User: {{ m }}<|end_of_turn|>GPT4 Correct Assistant:", "openchat"],
    ["{{ 'USER: ' + m + ' ASSISTANT: ' }}", "vicuna"],
    ["{{ 'SYSTEM: ' + s + 'USER: ' + m + ' ASSISTANT: ' }}", "vicuna-orca"],
    ["<|system|>\n{{ s }}\n<|user|>\n{{ m }}\n<|assistant|>\n", "falcon3"],
    ["### Instruction:\n{{ m }}\n### Response:\n{{ r }}\n<|EOT|>", "deepseek"],
    ["{{ 'User: ' + m }}{{ 'Assistant: ' + message['content'] + eos_token }}", "deepseek2"],
    ["{% for m in messages %}{{ m.content }}{% endfor %}", undefined],
  ];
  for (const [template, hint] of cases) assert.equal(hintForTemplate(template), hint, template);
});

Deno.test("the reader skips a large vocabulary and sums tensor shapes", () =>
  withTempDir(async (dir) => {
    const path = `${dir}/m.gguf`;
    await Deno.writeFile(
      path,
      ggufWithMetadata({
        architecture: "qwen2",
        contextLength: 32768,
        fileType: 7,
        vocabulary: 200_000,
        tensors: [[896, 151936], [896]],
      }),
    );
    const metadata = await readGgufMetadata(path);
    assert.deepEqual(metadata?.info, {
      architecture: "qwen2",
      contextLength: 32768,
      quantization: "Q8_0",
      parameterCount: 896 * 151936 + 896,
      hasChatTemplate: false,
    });
  }));

/** A GGUF v3 header: magic, version, tensor count, key/value count, then `rest`. */
function header(tensors: bigint, keys: bigint, ...rest: Uint8Array[]): Uint8Array {
  const head = new Uint8Array(24);
  head.set([0x47, 0x47, 0x55, 0x46, 3]);
  const view = new DataView(head.buffer);
  view.setBigUint64(8, tensors, true);
  view.setBigUint64(16, keys, true);
  return concatBytes([head, ...rest]);
}

/** Little-endian encodings. */
const u32 = (n: number) => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n, true);
  return b;
};
const u64 = (n: bigint) => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, n, true);
  return b;
};
const str = (s: string) => concatBytes([u64(BigInt(s.length)), new TextEncoder().encode(s)]);

/** `levels + 1` arrays nested one in another, each of one element (the innermost holds a u32). */
function nestedArrays(levels: number): Uint8Array {
  const level = concatBytes([u32(9), u64(1n)]); // item type array, one item
  const levelsBytes = new Uint8Array(levels * level.byteLength);
  for (let i = 0; i < levels; i++) levelsBytes.set(level, i * level.byteLength);
  // The key's value is an array (type 9); the innermost array holds one u32.
  return header(0n, 1n, str("deep"), u32(9), levelsBytes, u32(4), u64(1n), u32(0));
}

const real = ggufWithMetadata({
  architecture: "llama",
  vocabulary: 1000,
  chatTemplate: LLAMA3_TEMPLATE,
  tensors: [[8, 8], [8]],
  filler: 64,
});

/** Files that pass the magic and version check but whose header cannot be read. */
const MALFORMED: [string, Uint8Array][] = [
  ["cut at 24 bytes", real.slice(0, 24)],
  ["cut at 1 KB", real.slice(0, 1024)],
  ["cut at half", real.slice(0, real.byteLength / 2)],
  ["a key/value count of 2^40", header(0n, 1n << 40n)],
  ["a tensor count of 2^40", header(1n << 40n, 0n)],
  ["a string length of 2^63", header(0n, 1n, str("general.name"), u32(8), u64(1n << 63n))],
  ["a key length of 2^63", header(0n, 1n, u64(1n << 63n))],
  ["an array of 2^40 u32", header(0n, 1n, str("a"), u32(9), u32(4), u64(1n << 40n))],
  ["an array of 2^40 strings", header(0n, 1n, str("a"), u32(9), u32(8), u64(1n << 40n))],
  ["an unknown value type", header(0n, 1n, str("a"), u32(13), u32(0))],
  ["an array of an unknown type", header(0n, 1n, str("a"), u32(9), u32(99), u64(0n))],
  ["arrays nested 5 deep", nestedArrays(5)],
  ["800k nested arrays", nestedArrays(800_000)],
  ["a tensor with 9 dimensions", header(1n, 0n, str("t"), u32(9), ...Array(9).fill(u64(2n)))],
];

Deno.test("headers that cannot be read are refused quickly, in constant memory", () =>
  withTempDir(async (dir) => {
    for (const [what, bytes] of MALFORMED) {
      const path = `${dir}/m.gguf`;
      await Deno.writeFile(path, bytes);
      const rss = Deno.memoryUsage().rss;
      const started = performance.now();
      await assert.rejects(() => readGgufMetadata(path), GgufMalformed, what);
      const ms = performance.now() - started;
      assert.ok(ms < 200, `${what}: refused in ${ms.toFixed(0)} ms`);
      const grown = Deno.memoryUsage().rss - rss;
      assert.ok(grown < 32 << 20, `${what}: RSS grew by ${grown} bytes`);
    }
  }));

Deno.test("arrays nested up to 4 deep and an empty header are read", () =>
  withTempDir(async (dir) => {
    const path = `${dir}/m.gguf`;
    await Deno.writeFile(path, nestedArrays(3)); // 4 arrays deep
    assert.deepEqual((await readGgufMetadata(path)).info, { hasChatTemplate: false });
    await Deno.writeFile(path, header(0n, 0n));
    assert.deepEqual((await readGgufMetadata(path)).info, { hasChatTemplate: false });
  }));

Deno.test("parameterCount is exact in BigInt and left out when it is not a safe integer", () =>
  withTempDir(async (dir) => {
    const path = `${dir}/m.gguf`;
    const huge = 1n << 40n;
    const tensor = (dims: bigint[]) =>
      concatBytes([str("t"), u32(dims.length), ...dims.map(u64), u32(0), u64(0n)]);
    await Deno.writeFile(path, header(1n, 0n, tensor([huge, huge, huge])));
    assert.equal((await readGgufMetadata(path)).info.parameterCount, undefined);
    // 2^26 * 2^26 + 3 = 2^52 + 3: beyond a float's exact sum of the parts in some orders.
    await Deno.writeFile(path, header(2n, 0n, tensor([1n << 26n, 1n << 26n]), tensor([3n])));
    const count = (await readGgufMetadata(path)).info.parameterCount;
    assert.equal(count, 2 ** 52 + 3);
    assert.ok(Number.isSafeInteger(count));
  }));

Deno.test("an upload whose GGUF header cannot be read is 400 and leaves nothing", async () => {
  await using node = await startTestNode();
  await createModel(node, "m");
  for (const [what, bytes] of MALFORMED) {
    await expectError(await uploadRaw(node, "m", bytes), 400, /not a usable GGUF file/);
    const model = await expectJson(await fetch(`${node.storeUrl}/models/m`), 200, ModelSchema);
    assert.equal(model.readyToUse, false, what);
    assert.deepEqual(await listFiles(`${node.dataDir}/models`), [], what);
  }
  // A file that parses is still accepted, with its metadata.
  const ready = await expectJson(await uploadRaw(node, "m", real), 200, ModelSchema);
  assert.equal(ready.readyToUse, true);
  assert.equal(ready.ggufInfo?.architecture, "llama");
  assert.equal(ready.ggufInfo?.parameterCount, 72);
  // A bad replacement leaves the ready file as it was.
  await expectError(await uploadRaw(node, "m", MALFORMED[1][1]), 400, /not a usable GGUF/);
  const kept = await fetch(`${node.storeUrl}/models/m?alt=media`);
  assert.deepEqual(new Uint8Array(await kept.arrayBuffer()), real);
  // A vlm's projector is walked too.
  await createModel(node, "v", "vlm");
  await expectError(
    await uploadRaw(node, "v", MALFORMED[0][1], "?file=mmproj"),
    400,
    /projector: not a usable GGUF file/,
  );
});

Deno.test("a download whose GGUF header cannot be read ends with a 400 event, not ready", async () => {
  await using node = await startTestNode();
  await using source = startFileServer();
  await createModel(node, "m");
  for (const [what, bytes] of MALFORMED.slice(0, 4)) {
    const url = source.serve(`/${what.replaceAll(" ", "-")}.gguf`, bytes);
    const all = await allMessages(await startDownload(node, "m", { url }));
    streamError(all, 400, /not a usable GGUF file/);
    const model = await expectJson(await fetch(`${node.storeUrl}/models/m`), 200, ModelSchema);
    assert.equal(model.readyToUse, false, what);
    assert.deepEqual(await listFiles(`${node.dataDir}/models`), [], what);
  }
});
