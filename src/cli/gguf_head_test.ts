import assert from "node:assert/strict";
import { embedsByHead, fetchGgufHead, readGgufHead } from "./gguf_head.ts";
import { GgufWriter } from "../../testing/gguf_writer.ts";
import { tinyLlamaGguf } from "../../testing/tiny_llama.ts";

/** A header of `architecture`, its vocabulary before `extra` keys, as converters write them. */
function header(architecture: string, extra: (w: GgufWriter) => GgufWriter = (w) => w) {
  const writer = new GgufWriter()
    .string("general.architecture", architecture)
    .strings("tokenizer.ggml.tokens", ["a", "b", "c"]);
  return extra(writer).bytes();
}

Deno.test("readGgufHead: the architecture and pooling; an encoder or pooling embeds", () => {
  const bert = readGgufHead(header("bert"));
  assert.deepEqual(bert, { architecture: "bert", pooling: false });
  assert.equal(embedsByHead(bert), true);
  const pooled = readGgufHead(header("qwen3", (w) => w.u32("qwen3.pooling_type", 3)));
  assert.deepEqual(pooled, { architecture: "qwen3", pooling: true });
  assert.equal(embedsByHead(pooled), true);
  const llama = readGgufHead(tinyLlamaGguf());
  assert.equal(llama?.architecture, "llama");
  assert.equal(embedsByHead(llama), false);
  // A prefix cut inside the header keeps what came before the cut.
  assert.equal(readGgufHead(tinyLlamaGguf().subarray(0, 200))?.architecture, "llama");
  assert.equal(readGgufHead(new TextEncoder().encode("not a gguf file at all, no")), undefined);
  assert.equal(embedsByHead(undefined), false);
});

Deno.test("fetchGgufHead: one Range request; a failing source is no answer, or the one given", async () => {
  const ranges: (string | null)[] = [];
  const served = (bytes: Uint8Array, status = 206): typeof fetch => (_input, init) => {
    ranges.push(new Headers(init?.headers).get("range"));
    return Promise.resolve(new Response(bytes as Uint8Array<ArrayBuffer>, { status }));
  };
  const head = await fetchGgufHead("http://h/m.gguf", served(header("nomic-bert")));
  assert.equal(head?.architecture, "nomic-bert");
  assert.deepEqual(ranges, ["bytes=0-262143"]);
  assert.equal(await fetchGgufHead("http://h/m.gguf", served(new Uint8Array(), 404)), undefined);
  const refused: typeof fetch = () => Promise.reject(new TypeError("refused"));
  assert.equal(await fetchGgufHead("http://h/m.gguf", refused), undefined);
  // With a value for "unread", a source that did not answer is told from a file that is not GGUF.
  const text = served(new TextEncoder().encode("not a gguf file at all"));
  assert.equal(await fetchGgufHead("http://h/m.gguf", text, "unread"), undefined);
  const missing = served(new Uint8Array(), 404);
  assert.equal(await fetchGgufHead("http://h/m.gguf", missing, "unread"), "unread");
  assert.equal(await fetchGgufHead("http://h/m.gguf", refused, "unread"), "unread");
});

Deno.test("pooling embeds only as mean, cls or last (1..3); the Range read has a time limit", async () => {
  for (const [value, embeds] of [[0, false], [-1, false], [1, true], [3, true], [4, false]]) {
    const head = readGgufHead(header("qwen3", (w) => w.i32("qwen3.pooling_type", value as number)));
    assert.equal(embedsByHead(head), embeds, `pooling_type ${value}`);
  }
  let signal: AbortSignal | null | undefined;
  const served: typeof fetch = (_input, init) => (
    signal = init?.signal, Promise.resolve(new Response(header("llama") as Uint8Array<ArrayBuffer>))
  );
  assert.equal((await fetchGgufHead("http://h/m.gguf", served))?.architecture, "llama");
  assert.ok(signal instanceof AbortSignal);
});
