/**
 * The GGUF header reader and the chat template hints, on files and templates shaped like the
 * real ones (llama.cpp converter layout; templates as Hugging Face model cards ship them).
 */
import assert from "node:assert/strict";
import { hintForTemplate } from "../src/store/chat_template_hint.ts";
import { readGgufMetadata } from "../src/store/gguf_metadata.ts";
import { ModelSchema } from "../gen/store/validators.ts";
import { expectJson } from "./helpers/contract.ts";
import { ggufWithMetadata, LLAMA3_TEMPLATE } from "./helpers/gguf.ts";
import { startTestNode, withTempDir } from "./helpers/node.ts";
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

Deno.test("a GGUF file whose header is cut short is accepted, without metadata", async () => {
  await using node = await startTestNode();
  const whole = ggufWithMetadata({ architecture: "llama", vocabulary: 1000, tensors: [[8, 8]] });
  await createModel(node, "m");
  const model = await expectJson(
    await uploadRaw(node, "m", whole.slice(0, 2000)),
    200,
    ModelSchema,
  );
  assert.equal(model.readyToUse, true);
  assert.equal(model.ggufInfo, undefined);
});
