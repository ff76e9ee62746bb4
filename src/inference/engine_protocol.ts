/**
 * What the node and its inference engine process say to each other. The node writes one JSON
 * request a line to the engine's stdin; the engine writes one JSON event a line to its stdout,
 * each behind EVENT_PREFIX, so that anything the native library prints to stdout is told apart
 * (and logged) rather than read as a message.
 *
 * This module holds types and constants only: the engine process imports it without an import
 * map (src/inference/engine_main.ts). A failure travels as its kind of domain error (src/errors),
 * never as an HTTP status: the node makes the same error again with `errorOfKind`.
 *
 * @module
 */
import type { ErrorDetails, ErrorKind } from "../errors/mod.ts";

/** Starts every event line the engine writes. */
export const EVENT_PREFIX = "\u001eedgenode-engine ";

/** The kinds of GGUF model the engine runs. */
export type EngineModelKind = "llm" | "vlm" | "embed";

/** How to load one model. */
export interface LoadSpec {
  /** The registry id, with its sha256: a replaced file is another key. */
  key: string;
  path: string;
  kind: EngineModelKind;
  /** Context size in tokens; 0 or absent: the engine's choice within what fits. */
  contextSize?: number;
  gpuLayers?: number;
  threads: number;
  /** The registry's chatTemplateHint; absent: the template in the file. */
  chatTemplateHint?: string;
  /** Refuse the load when the estimate is above this many bytes (free memory, or the limit). */
  memoryBudget: number;
  /**
   * Sequences of a chat context (each with its own KV cache of `contextSize` tokens): 2 gives the
   * key holder a sequence of its own beside the microservices' (inference.reservedSequence).
   */
  sequences?: number;
}

/** What a loaded model is, as GET /models shows it. */
export interface LoadedModelInfo {
  nVocab: number;
  nCtxTrain: number;
  nEmbd: number;
  nParams: number;
  modelSize: number;
  contextSize: number;
  /** The chat format in use, e.g. "jinjaTemplate" or "chatML". */
  chatTemplate: string;
  threads: number;
  /** Bytes the engine estimated before loading (weights plus context, all its sequences). */
  estimatedBytes: number;
  /** Sequences of its context: jobs that may run on it at once (1 for embeddings). */
  sequences: number;
  /** What it computes on: "cuda", "vulkan", "metal" or "cpu" (the engine's). */
  backend: string;
  /** Layers offloaded to the GPU (0 on the CPU). */
  gpuLayers: number;
  /** Why that many, e.g. "running on the CPU: no NVIDIA driver (...)". */
  gpuLayersReason: string;
  /** Bytes of VRAM the engine estimated for it (0 on the CPU). */
  estimatedVramBytes: number;
}

/** What the engine computes on, as it says when ready. */
export interface EngineBackendInfo {
  /** "cuda", "vulkan", "metal" or "cpu": what node-llama-cpp loaded (`llama.gpu`). */
  backend: string;
  /** The GPUs' names (none on the CPU). */
  devices: string[];
  /** VRAM in bytes at start (0 on the CPU). */
  vramTotal: number;
  vramFree: number;
}

/** A chat message as the engine takes it (the node has checked and flattened OpenAI's). */
export type EngineMessage =
  | { role: "system" | "user"; content: string }
  | { role: "assistant"; content: string; toolCalls?: EngineToolCall[] }
  | { role: "tool"; toolCallId: string; content: string };

/** A tool call a model made, arguments as JSON text. */
export interface EngineToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** A function the model may call. */
export interface EngineTool {
  name: string;
  description?: string;
  /** JSON Schema of the arguments. */
  parameters?: Record<string, unknown>;
}

/** One chat completion. */
export interface ChatJob {
  messages: EngineMessage[];
  /** 0: until the context is full. */
  maxTokens: number;
  temperature: number;
  topP?: number;
  seed?: number;
  stop: string[];
  tools: EngineTool[];
  /** "auto": the model decides; "required": it must call one; a name: it must call that one. */
  toolChoice: "auto" | "none" | "required" | { name: string };
  /** The reply must be JSON (response_format json_object), following `schema` when given. */
  json?: { schema?: Record<string, unknown> };
}

/** Why a completion ended, in OpenAI's words. */
export type FinishReason = "stop" | "length" | "tool_calls";

/** The end of a chat completion. */
export interface ChatResult {
  text: string;
  finishReason: FinishReason;
  toolCalls: EngineToolCall[];
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
  /** From the start of the job to the first generated token (prompt evaluation included). */
  ttftMs: number;
  /** From the first generated token to the last. */
  decodeMs: number;
}

/** The result of an embeddings job. */
export interface EmbedResult {
  vectors: number[][];
  promptTokens: number;
}

/** A request to the engine. */
export type EngineRequest =
  & { id: number }
  & (
    | { op: "load"; spec: LoadSpec }
    | { op: "unload"; key: string }
    | { op: "chat"; key: string; job: ChatJob; sequence?: number }
    | { op: "embed"; key: string; input: string[] }
    | { op: "cancel"; target: number }
  );

/**
 * A failure of a request: a domain error's kind, message and details, or, without a kind, the
 * engine's own failure (a native error, a bug), which the node reports as the engine's.
 */
export interface EngineError {
  /** Always "error". */
  type: "error";
  /** The kind of domain error; absent: the engine itself failed. */
  kind?: ErrorKind;
  /** The message as thrown (the node scrubs host paths from it). */
  message: string;
  /** The domain error's details (the limit exceeded, what was not found). */
  details?: ErrorDetails;
}

/** An event from the engine; `id` 0 is about the engine itself. */
export type EngineEvent =
  & { id: number }
  & (
    | { type: "ready"; buildType: string; cpuMathCores: number } & EngineBackendInfo
    /** The backend chosen could not be loaded (the process then ends). */
    | { type: "unusable"; message: string }
    | { type: "progress"; progress: number }
    | { type: "loaded"; info: LoadedModelInfo }
    | { type: "text"; text: string }
    | { type: "chat-done"; result: ChatResult }
    | { type: "embed-done"; result: EmbedResult }
    | { type: "unloaded" }
    | EngineError
  );
