/**
 * Which of the spec's chatTemplateHint values a GGUF file's Jinja chat template matches. The
 * markers follow llama.cpp's own template detection (`llm_chat_detect_template`): each family
 * has tokens no other family uses. A template that matches no rule gets no suggestion.
 *
 * @module
 */
import type { ChatTemplateHint } from "../../gen/store/validators.ts";

type Rule = [hint: ChatTemplateHint, matches: (has: (marker: string) => boolean) => boolean];

/** Checked in order: earlier, more specific rules win. */
const RULES: Rule[] = [
  ["chatml", (has) => has("<|im_start|>")],
  ["mistral-v7", (has) => has("[SYSTEM_PROMPT]")],
  ["mistral-v3", (has) => has("[AVAILABLE_TOOLS]") && has("[INST]")],
  ["mistral-v1", (has) => has("' [INST] ' + system_message") || has("' [INST] ' + ")],
  ["llama2", (has) => has("[INST]")],
  ["llama3", (has) => has("<|start_header_id|>") && has("<|end_header_id|>")],
  ["phi3", (has) => has("<|assistant|>") && has("<|end|>")],
  ["zephyr", (has) => has("<|user|>") && has("</s>")],
  ["falcon3", (has) => has("<|assistant|>") && has("<|user|>")],
  ["gemma", (has) => has("<start_of_turn>")],
  ["command-r", (has) => has("<|START_OF_TURN_TOKEN|>") && has("<|USER_TOKEN|>")],
  ["deepseek3", (has) => has("<｜Assistant｜>") && has("<｜User｜>")],
  ["deepseek2", (has) => has("'Assistant: ' + message['content'] + eos_token")],
  ["deepseek", (has) => has("### Instruction:") && has("<|EOT|>")],
  ["openchat", (has) => has("GPT4 Correct ")],
  ["vicuna-orca", (has) => has("USER: ") && has("ASSISTANT: ") && has("SYSTEM: ")],
  ["vicuna", (has) => has("USER: ") && has("ASSISTANT: ")],
];

/** The hint a chat template clearly matches, if any. */
export function hintForTemplate(template: string): ChatTemplateHint | undefined {
  const has = (marker: string) => template.includes(marker);
  return RULES.find(([, matches]) => matches(has))?.[0];
}
