/**
 * Crafted GGUF files and a hostile microservice for tests/hostile_inference_test.ts.
 *
 * @module
 */
import { GgmlType, GgufWriter } from "../../testing/gguf_writer.ts";

/** `bytes` (a GGUF) with the u32 or i32 value of `key` set to `value`. */
export function withU32(bytes: Uint8Array, key: string, value: number): Uint8Array {
  const name = new TextEncoder().encode(key);
  const out = bytes.slice();
  const view = new DataView(out.buffer);
  for (let at = 8; at + name.length + 12 <= out.length; at++) {
    // A key is its u64 length, its bytes, then a u32 value type and the value.
    if (view.getUint32(at - 8, true) !== name.length) continue;
    if (!name.every((byte, i) => out[at + i] === byte)) continue;
    const type = view.getUint32(at + name.length, true);
    if (type !== 4 && type !== 5) throw new Error(`${key} has value type ${type}`);
    view.setUint32(at + name.length + 4, value, true);
    return out;
  }
  throw new Error(`no ${key} in the file`);
}

/** A llama header declaring one tensor of `dims` (no data): for the dimension checks. */
export function declaredTensorGguf(dims: number[]): Uint8Array {
  return new GgufWriter()
    .string("general.architecture", "llama")
    .u32("llama.context_length", 512)
    .u32("llama.embedding_length", 64)
    .u32("llama.block_count", 1)
    .u32("llama.attention.head_count", 4)
    .tensor("token_embd.weight", dims, undefined, GgmlType.F32)
    .bytes();
}

/**
 * A microservice that calls `context.ml` the hostile way. POST /detached `{n, options}` starts
 * `n` chat completions from a timer (outside any request) and answers at once; GET /results
 * lists how they ended (`{status, message}` or `{status: 200, finish, tokens}`); POST /chat runs
 * one chat inside the request and answers with its result or error (422).
 */
export const HOSTILE_ML_MIM = String.raw`
var results = [];
function send(res, status, body) {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(body));
}
function start(context, options) {
  var copy = JSON.parse(JSON.stringify(options));
  copy.success = function (e) {
    if (!e.done) return;
    var answer = JSON.parse(e.data);
    results.push({ status: 200, finish: answer.choices[0].finish_reason,
      tokens: answer.usage.completion_tokens });
  };
  copy.error = function (err) { results.push({ status: err.status, message: err.message }); };
  context.ml.chatCompletions(copy);
}
mimikModule.exports = function (context, req, res) {
  var path = req.url.split('?')[0];
  if (path === '/results') return send(res, 200, results);
  var body = JSON.parse(req.body || '{}');
  if (path === '/detached') {
    setTimeout(function () {
      for (var i = 0; i < body.n; i++) start(context, body.options);
    }, 0);
    return send(res, 202, { started: body.n });
  }
  if (path === '/chat') {
    body.success = function (e) { send(res, 200, JSON.parse(e.data)); };
    body.error = function (err) { send(res, 422, { status: err.status, message: err.message }); };
    return context.ml.chatCompletions(body);
  }
  send(res, 404, { message: 'Not Found' });
};`;

/** `bytes` (a GGUF) with dimension `index` of tensor `tensor` set to `value` in its info. */
export function withTensorDimension(
  bytes: Uint8Array,
  tensor: string,
  index: number,
  value: number,
): Uint8Array {
  const name = new TextEncoder().encode(tensor);
  const out = bytes.slice();
  const view = new DataView(out.buffer);
  for (let at = 8; at + name.length + 4 <= out.length; at++) {
    // A tensor info is its u64 name length, its name, a u32 dimension count, u64 dimensions.
    if (view.getBigUint64(at - 8, true) !== BigInt(name.length)) continue;
    if (!name.every((byte, i) => out[at + i] === byte)) continue;
    const dims = view.getUint32(at + name.length, true);
    if (index >= dims) throw new Error(`${tensor} has ${dims} dimensions`);
    view.setBigUint64(at + name.length + 4 + 8 * index, BigInt(value), true);
    return out;
  }
  throw new Error(`no tensor ${tensor} in the file`);
}

/** The pids of `dataDir`'s engine processes (the shared one, and any probe), oldest first. */
export async function enginePids(dataDir: string): Promise<number[]> {
  const { stdout } = await new Deno.Command("pgrep", {
    args: ["-f", `${dataDir}/models,.*engine_main\\.js`],
    stderr: "null",
  }).output();
  return new TextDecoder().decode(stdout).trim().split("\n").filter(Boolean).map(Number)
    .sort((a, b) => a - b);
}
