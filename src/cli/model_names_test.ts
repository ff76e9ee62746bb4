import assert from "node:assert/strict";
import {
  expectedHfId,
  hfModelId,
  idOf,
  kindOf,
  kindOfDownload,
  parseModelName,
  quantOf,
  resolveHfName,
  urlDownload,
} from "./model_names.ts";
import { ConfigError } from "../config/config_error.ts";
import { GgufWriter } from "../../testing/gguf_writer.ts";
import { tinyLlamaGguf } from "../../testing/tiny_llama.ts";

Deno.test("parseModelName: a registry id, a Hugging Face repository, a URL", () => {
  const cases: [string, unknown][] = [
    ["tiny", { source: "id", id: "tiny" }],
    ["hf.co/test/tiny", { source: "hf", user: "test", repo: "tiny" }],
    ["hf.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF:q4_k_m", {
      source: "hf",
      user: "Qwen",
      repo: "Qwen2.5-0.5B-Instruct-GGUF",
      quant: "q4_k_m",
    }],
    ["huggingface.co/a/b:Q8_0", { source: "hf", user: "a", repo: "b", quant: "Q8_0" }],
    ["http://h/m.gguf", { source: "url", url: "http://h/m.gguf" }],
    // With a scheme, an address on the Hub is a URL: a file's, as often copied from its page.
    ["https://huggingface.co/a/b/resolve/main/x.gguf", {
      source: "url",
      url: "https://huggingface.co/a/b/resolve/main/x.gguf",
    }],
    ["https://hf.co/a/b:Q8_0", { source: "url", url: "https://hf.co/a/b:Q8_0" }],
  ];
  for (const [given, want] of cases) assert.deepEqual(parseModelName(given), want, given);
  assert.throws(() => parseModelName("hf.co/only-user"), ConfigError);
});

Deno.test("the id and kind rules", () => {
  assert.equal(
    hfModelId("Qwen", "Qwen2.5-0.5B-Instruct-GGUF", "qwen2.5-0.5b-instruct-q4_k_m.gguf"),
    "qwen--qwen2.5-0.5b-instruct-q4_k_m",
  );
  assert.equal(hfModelId("t", "tiny", "sub/tiny-IQ4_XS.gguf"), "t--tiny-iq4_xs");
  assert.equal(hfModelId("t", "tiny", "model.gguf"), "t--tiny-model");
  // Two users' quants of one repository name are two models.
  const bartowski = expectedHfId(parseModelName("hf.co/bartowski/X-GGUF:Q4_K_M"));
  assert.equal(bartowski, "bartowski--x-q4_k_m");
  assert.notEqual(expectedHfId(parseModelName("hf.co/unsloth/X-GGUF:Q4_K_M")), bartowski);
  assert.equal(hfModelId("bartowski", "X-GGUF", "X-Q4_K_M.gguf"), bartowski);
  assert.equal(expectedHfId(parseModelName("hf.co/Q/Qwen2-GGUF:Q4_K_M")), "q--qwen2-q4_k_m");
  assert.equal(expectedHfId(parseModelName("hf.co/Q/Qwen2-GGUF")), undefined);
  assert.equal(quantOf("x.Q5_K_S.gguf"), "Q5_K_S");
  assert.equal(quantOf("x-f16.gguf"), "F16");
  assert.equal(quantOf("model.gguf"), undefined);
  assert.equal(idOf("..A b/c.."), "a-b-c");
  assert.equal(kindOf(["nomic-embed-text-v1.5-GGUF"], false), "embed");
  assert.equal(kindOf(["llava"], true), "vlm");
  assert.equal(kindOf(["tiny"], false), "llm");
  assert.deepEqual(urlDownload("http://h/dir/My%20Model.Q4_0.gguf"), {
    id: "my-model.q4_0",
    kind: "llm",
    url: "http://h/dir/My%20Model.Q4_0.gguf",
    from: "http://h/dir/My%20Model.Q4_0.gguf",
  });
});

/** A fetch answering the Hub's API for one repository with these files and sizes. */
function hub(files: Record<string, number>): typeof fetch {
  return (input) => {
    const url = String(input);
    if (!url.startsWith("https://hub.test/api/models/u/r?")) {
      return Promise.resolve(Response.json({ error: "Repository not found" }, { status: 404 }));
    }
    const siblings = Object.entries(files).map(([rfilename, size]) => ({ rfilename, size }));
    return Promise.resolve(Response.json({ siblings }));
  };
}

Deno.test("resolveHfName: the quant asked, the defaults, the smallest, the projector", async () => {
  const env = (name: string) => name === "HF_ENDPOINT" ? "https://hub.test/" : undefined;
  const files = { "r-Q8_0.gguf": 8, "r-Q4_0.gguf": 4, "r-Q4_K_M.gguf": 5, "README.md": 1 };
  const resolve = (quant: string | undefined, f: Record<string, number> = files) =>
    resolveHfName({ source: "hf", user: "u", repo: "r", quant }, { env, fetch: hub(f) });
  const asked = await resolve("q8_0");
  assert.equal(asked.url, "https://hub.test/u/r/resolve/main/r-Q8_0.gguf");
  assert.equal(asked.id, "u--r-q8_0");
  assert.equal((await resolve(undefined)).id, "u--r-q4_k_m");
  assert.equal(
    (await resolve(undefined, { "r-Q8_0.gguf": 8, "r-Q4_0.gguf": 4 })).id,
    "u--r-q4_0",
  );
  assert.equal(
    (await resolve(undefined, { "r-Q8_0.gguf": 8, "r-Q6_K.gguf": 6 })).id,
    "u--r-q6_k",
  );
  const vision = await resolve(undefined, {
    "r-Q4_K_M.gguf": 5,
    "mmproj-r-Q8_0.gguf": 2,
    "mmproj-r-F16.gguf": 3,
  });
  assert.equal(vision.kind, "vlm");
  assert.equal(vision.mmprojUrl, "https://hub.test/u/r/resolve/main/mmproj-r-F16.gguf");
  const tagged = await resolveHfName({ source: "hf", user: "u", repo: "r" }, {
    env,
    revision: "v1.0",
    fetch: (input) =>
      String(input).startsWith("https://hub.test/api/models/u/r/revision/v1.0?")
        ? hub(files)("https://hub.test/api/models/u/r?blobs=true")
        : Promise.resolve(new Response(null, { status: 404 })),
  });
  assert.equal(tagged.url, "https://hub.test/u/r/resolve/v1.0/r-Q4_K_M.gguf");
  await assert.rejects(resolve("Q2_K"), /u\/r has no Q2_K file; it has: Q8_0, Q4_0, Q4_K_M/);
  await assert.rejects(resolve(undefined, { "README.md": 1 }), /has no GGUF model file/);
  await assert.rejects(
    resolveHfName({ source: "hf", user: "u", repo: "nope" }, { env, fetch: hub(files) }),
    /no repository u\/nope on https:\/\/hub.test \(404/,
  );
});

Deno.test("kindOfDownload: an llm whose header is an encoder's is embed", async () => {
  const serving = (bytes: Uint8Array): typeof fetch => () =>
    Promise.resolve(new Response(bytes as Uint8Array<ArrayBuffer>, { status: 206 }));
  const bert = new GgufWriter().string("general.architecture", "bert").bytes();
  const download = { id: "m", kind: "llm" as const, url: "http://h/m.gguf", from: "" };
  assert.equal(await kindOfDownload(download, serving(bert)), "embed");
  assert.equal(await kindOfDownload(download, serving(tinyLlamaGguf())), "llm");
  assert.equal(await kindOfDownload({ ...download, kind: "vlm" }, serving(bert)), "vlm");
});

Deno.test("the Hub: asked with a time limit, its answer read up to a limit, names listed to 20", async () => {
  const env = (name: string) => name === "HF_ENDPOINT" ? "https://hub.test" : undefined;
  const signals: (AbortSignal | null | undefined)[] = [];
  const files = Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`r-${i}.bin`, 1]));
  const listing = hub(files);
  const resolving = {
    env,
    fetch: ((input, init) => (signals.push(init?.signal), listing(input, init))) as typeof fetch,
  };
  await assert.rejects(
    resolveHfName({ source: "hf", user: "u", repo: "r" }, resolving),
    /its files: r-0\.bin, .*, r-19\.bin and 5 more\)/,
  );
  assert.ok(signals[0] instanceof AbortSignal, "a time limit");
  // An answer of more than the limit is not parsed (nor held): the Hub is said to be wrong.
  const huge: typeof fetch = () =>
    Promise.resolve(
      new Response(
        new ReadableStream({
          pull(controller) {
            controller.enqueue(new Uint8Array(1024 * 1024).fill(32));
          },
        }),
      ),
    );
  await assert.rejects(
    resolveHfName({ source: "hf", user: "u", repo: "r" }, { env, fetch: huge }),
    /the Hub at https:\/\/hub\.test answered 200 for u\/r/,
  );
});

Deno.test("resolveHfName: unsafe names left out; exact quants first; no part or vocab as smallest", async () => {
  const env = (name: string) => name === "HF_ENDPOINT" ? "https://hub.test" : undefined;
  const answering = (siblings: unknown[]): typeof fetch => () =>
    Promise.resolve(Response.json({ siblings }));
  const resolve = (siblings: unknown[], quant?: string) =>
    resolveHfName({ source: "hf", user: "u", repo: "r", quant }, {
      env,
      fetch: answering(siblings),
    });
  const unsafe = [
    { rfilename: 7 },
    null,
    { rfilename: "" },
    { rfilename: "/etc/x-Q4_K_M.gguf" },
    { rfilename: "../x-Q4_K_M.gguf" },
    { rfilename: "a/./x-Q4_K_M.gguf" },
    { rfilename: "a//x-Q4_K_M.gguf" },
    { rfilename: "a\\x-Q4_K_M.gguf" },
  ];
  const safe = await resolve([...unsafe, { rfilename: "d/r-Q8_0.gguf", size: 8 }]);
  assert.equal(safe.url, "https://hub.test/u/r/resolve/main/d/r-Q8_0.gguf");
  // A name containing the quant loses to a file that is a default quant exactly.
  const exact = await resolve([{ rfilename: "r-IQ4_K_M.gguf" }, { rfilename: "r-Q4_0.gguf" }]);
  assert.equal(exact.id, "u--r-q4_0");
  const smallest = await resolve([
    { rfilename: "r-F16-00001-of-00002.gguf", size: 1 },
    { rfilename: "ggml-vocab-r.gguf", size: 2 },
    { rfilename: "r-Q8_0.gguf", size: 8 },
    { rfilename: "r-F16.gguf", size: 16 },
  ]);
  assert.equal(smallest.id, "u--r-q8_0");
});
