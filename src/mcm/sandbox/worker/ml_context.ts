/**
 * `context.ml`, as the reference's AI-enabled engines give it: `chatCompletions` and
 * `embeddings`, with `success` and `error` callbacks. The work runs on the node
 * (src/mcm/services/ml_calls.ts) over the container's channel; a streamed completion calls `success` as
 * each message arrives, so the worker stays free to serve while a model generates.
 *
 * @module
 */
import { MAX_FRAME_BYTES } from "../../../tunnel/pipe_frames.ts";
import type { NodeCallError, NodeCalls } from "./node_calls.ts";
import { callBack, requestSignal } from "./request_scope.ts";

/** What `success` gets: an HTTP-like answer, or one message of a stream (`done: false`). */
export interface MlEvent {
  status: number;
  headers: Record<string, string>;
  data: string;
  done: boolean;
}

/** What `error` gets. */
export interface MlFailure {
  message: string;
  status: number;
}

/** The options of a `context.ml` call: the inference API's body plus the callbacks. */
export interface MlOptions {
  success?: (event: MlEvent) => void;
  error?: (failure: MlFailure) => void;
  /** Cancels the call (by default, it ends with the request being served: request_scope.ts). */
  signal?: AbortSignal;
  [field: string]: unknown;
}

/** `context.ml`. */
export interface MlContext {
  /** A chat completion: `{model, messages, stream, max_tokens, ...}` of POST /chat/completions. */
  chatCompletions(options: MlOptions): void;
  /** Embeddings of `input` (a string or strings) on `model`; `data` is the vectors' JSON. */
  embeddings(options: MlOptions): void;
}

/** Half a channel frame: room for the call's envelope and JSON's escapes. */
const MAX_REQUEST_BYTES = MAX_FRAME_BYTES / 2;

/** Sends one `context.ml` call; its outcome goes to the callbacks. */
function mlCall(calls: NodeCalls, op: "chat" | "embed", name: string, options: MlOptions): void {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`context.ml.${name} takes an options object`);
  }
  const { success, error, signal: given, ...fields } = options;
  const inRequest = requestSignal();
  const signal = given instanceof AbortSignal ? given : inRequest;
  // Nothing ends a call made outside a request, or with a signal of its own, with a request: the
  // node charges it to the container's detached budget (ml_calls.ts, DETACHED_FIELD).
  const request = { ...fields, edgenodeDetached: signal !== inRequest || inRequest === undefined };
  const fail = (message: string, status: number) =>
    callBack(error, { message, status } satisfies MlFailure, signal);
  let size: number;
  try {
    // Only data goes to the node (JSON leaves functions out).
    size = new TextEncoder().encode(JSON.stringify(request)).length;
  } catch (problem) {
    return fail(`the options do not convert to JSON: ${(problem as Error).message}`, 400);
  }
  if (size > MAX_REQUEST_BYTES) {
    return fail(`the request is over ${MAX_REQUEST_BYTES} bytes as JSON`, 413);
  }
  calls.call({ op, request }, {
    signal,
    onEvent: (event) => callBack(success, event as MlEvent, signal),
  }).then(
    (event) => callBack(success, event as MlEvent, signal),
    (problem: NodeCallError) => fail(problem.message, problem.status ?? 500),
  );
}

/** The `context.ml` of a container, calling its node through `calls`. */
export function mlContext(calls: NodeCalls): MlContext {
  return {
    chatCompletions: (options) => mlCall(calls, "chat", "chatCompletions", options),
    embeddings: (options) => mlCall(calls, "embed", "embeddings", options),
  };
}
