/**
 * `edgenode pull NAME` and `edgenode run NAME` against a real node and a stand-in Hugging Face
 * Hub (testing/hf_hub.ts, through HF_ENDPOINT): the quant asked for is downloaded into a record
 * named by the id rule and chats; a second pull downloads nothing; `run hf.co/...` pulls first;
 * an unknown repository or quant is a clear error naming what exists, and leaves no record.
 */
import assert from "node:assert/strict";
import { edgenode } from "./helpers/cli_env.ts";
import { ensureTestEngine } from "../testing/engine.ts";
import { startHfHub } from "../testing/hf_hub.ts";
import { MAIN, startTestNode } from "../testing/node.ts";
import { runToEnd } from "../testing/run.ts";
import { EXECUTABLE_FLAGS } from "../src/program/executable_flags.ts";
import { tinyLlamaGguf } from "../testing/tiny_llama.ts";

const KEY = "a-pull-command-test-key-0123456789";
const SAMPLING = ["--temperature", "0", "--max-tokens", "8"];

Deno.test("edgenode pull hf.co/USER/REPO:QUANT, then run; unknown repos and quants", async (t) => {
  await ensureTestEngine();
  await using node = await startTestNode({
    config: { apiKey: KEY, discovery: { mdns: false } },
  });
  await using hub = startHfHub();
  const model = tinyLlamaGguf();
  hub.repository("test/tiny", {
    "tiny-Q4_K_M.gguf": model,
    "tiny-Q8_0.gguf": tinyLlamaGguf({ seed: 2 }),
    "README.md": new TextEncoder().encode("# tiny"),
  });
  const env = { EDGENODE_NODE: node.url, EDGENODE_API_KEY: KEY, HF_ENDPOINT: hub.url };
  const cli = (args: string[]) => edgenode(args, env);
  const record = async (id: string) => {
    const response = await fetch(`${node.storeUrl}/models/${id}`, { headers: node.auth() });
    return response.status === 404 ? void await response.body?.cancel() : await response.json();
  };

  await t.step("pull downloads the quant asked for, with the id rule's name", async () => {
    const pulled = await cli(["pull", "hf.co/test/tiny:q4_k_m"]);
    assert.equal(pulled.code, 0, pulled.stderr);
    assert.match(pulled.stderr, /pulling test--tiny-q4_k_m from test\/tiny, tiny-Q4_K_M\.gguf/);
    assert.match(pulled.stdout, /^pulled test--tiny-q4_k_m: .*, ready\n$/);
    const made = await record("test--tiny-q4_k_m");
    assert.equal(made.kind, "llm");
    assert.equal(made.readyToUse, true);
    assert.equal(made.totalSize, model.byteLength);
    assert.ok(
      hub.requests.includes("/test/tiny/resolve/main/tiny-Q4_K_M.gguf"),
      hub.requests.join(),
    );
  });

  await t.step("the single executable's permissions let pull read HF_ENDPOINT", async () => {
    // The executable may read only the variables it names: one it does not name reads as unset,
    // and the pull would go to huggingface.co instead.
    hub.repository("test/narrow", { "narrow-Q4_K_M.gguf": tinyLlamaGguf({ seed: 3 }) });
    const pulled = await runToEnd(Deno.execPath(), {
      args: ["run", ...EXECUTABLE_FLAGS, MAIN, "pull", "hf.co/test/narrow"],
      env: { NO_COLOR: "1", ...env },
    });
    assert.equal(pulled.code, 0, pulled.stderr);
    assert.ok(hub.requests.includes("/api/models/test/narrow"), hub.requests.join());
    assert.equal((await record("test--narrow-q4_k_m")).readyToUse, true);
  });

  await t.step("a second pull downloads nothing", async () => {
    const files = hub.requests.filter((path) => path.startsWith("/cdn/")).length;
    const again = await cli(["pull", "hf.co/test/tiny:Q4_K_M"]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /test--tiny-q4_k_m is ready .*nothing to download/);
    assert.equal(hub.requests.filter((path) => path.startsWith("/cdn/")).length, files);
  });

  await t.step("run NAME chats with the pulled model; run of a new quant pulls it", async () => {
    const ran = await cli(["run", "hf.co/test/tiny:Q4_K_M", "hello", ...SAMPLING]);
    assert.equal(ran.code, 0, ran.stderr);
    assert.ok(ran.stdout.trim().length > 0, "an answer");
    const byId = await cli(["run", "test--tiny-q4_k_m", "hello", ...SAMPLING]);
    assert.equal(byId.stdout, ran.stdout, "the same model by its id");
    // Pulled once, it runs without the Hub, as an edge node offline does.
    const offline = await edgenode(["run", "hf.co/test/tiny:Q4_K_M", "hello", ...SAMPLING], {
      ...env,
      HF_ENDPOINT: "http://127.0.0.1:9",
    });
    assert.equal(offline.code, 0, offline.stderr);
    assert.equal(offline.stdout, ran.stdout);
    const fresh = await cli(["run", "hf.co/test/tiny:Q8_0", "hello", ...SAMPLING]);
    assert.equal(fresh.code, 0, fresh.stderr);
    assert.match(fresh.stderr, /pulled test--tiny-q8_0: .*, ready/);
    assert.ok(fresh.stdout.trim().length > 0);
    assert.equal((await record("test--tiny-q8_0")).readyToUse, true);
    const json = await cli(["run", "hf.co/test/tiny:Q8_0", "hello", "--json", ...SAMPLING]);
    assert.equal(json.code, 0, json.stderr);
    assert.equal(JSON.parse(json.stdout).object, "chat.completion", "stdout is the JSON alone");
  });

  await t.step(
    "a repository with an mmproj file: a vlm with its projector; --revision",
    async () => {
      hub.repository("test/seeing-GGUF", {
        "seeing-Q4_K_M.gguf": model,
        "mmproj-seeing-F16.gguf": tinyLlamaGguf({ seed: 3 }),
      });
      const pulled = await cli(["pull", "hf.co/test/seeing-GGUF", "--revision", "v2"]);
      assert.equal(pulled.code, 0, pulled.stderr);
      const made = await record("test--seeing-q4_k_m");
      assert.equal(made.kind, "vlm");
      assert.ok(made.mmproj, JSON.stringify(made));
      assert.ok(hub.requests.includes("/api/models/test/seeing-GGUF/revision/v2"));
      assert.ok(hub.requests.includes("/test/seeing-GGUF/resolve/v2/mmproj-seeing-F16.gguf"));
    },
  );

  await t.step("two users' repositories of one name are two models", async () => {
    hub.repository("other/tiny", { "tiny-Q4_K_M.gguf": tinyLlamaGguf({ seed: 4 }) });
    const pulled = await cli(["pull", "hf.co/other/tiny:Q4_K_M"]);
    assert.equal(pulled.code, 0, pulled.stderr);
    assert.match(pulled.stdout, /^pulled other--tiny-q4_k_m: .*, ready\n$/);
    assert.ok(hub.requests.includes("/other/tiny/resolve/main/tiny-Q4_K_M.gguf"));
    assert.equal((await record("other--tiny-q4_k_m")).readyToUse, true);
    assert.equal((await record("test--tiny-q4_k_m")).readyToUse, true, "the first one kept");
  });

  await t.step(
    "a URL (a Hub file's too): pull names the record after its file; models pull, the same kind",
    async () => {
      hub.repository("test/vectors", { "nomic-embed-text-Q4_0.gguf": tinyLlamaGguf({ seed: 5 }) });
      // The stand-in Hub's resolve URL stands for https://huggingface.co/USER/REPO/resolve/...
      const url = `${hub.url}/test/vectors/resolve/main/nomic-embed-text-Q4_0.gguf`;
      const pulled = await cli(["pull", url]);
      assert.equal(pulled.code, 0, pulled.stderr);
      assert.equal((await record("nomic-embed-text-q4_0")).kind, "embed");
      const named = await cli(["models", "pull", "vectors", url]);
      assert.equal(named.code, 0, named.stderr);
      assert.equal((await record("vectors")).kind, "embed");
      // Another file of the same name: refused, not answered "ready" with the first one.
      hub.repository("else/vectors", { "nomic-embed-text-Q4_0.gguf": tinyLlamaGguf({ seed: 6 }) });
      const other = `${hub.url}/else/vectors/resolve/main/nomic-embed-text-Q4_0.gguf`;
      const refused = await cli(["pull", other]);
      assert.equal(refused.code, 2);
      assert.match(refused.stderr, /'nomic-embed-text-q4_0' is on the node already.*--force/);
      const forced = await cli(["pull", other, "--force"]);
      assert.equal(forced.code, 0, forced.stderr);
      assert.ok(hub.requests.includes("/else/vectors/resolve/main/nomic-embed-text-Q4_0.gguf"));
    },
  );

  await t.step(
    "an unknown repository or quant: exit non-zero, what exists, no record",
    async () => {
      const repo = await cli(["pull", "hf.co/test/nope"]);
      assert.equal(repo.code, 1);
      assert.match(repo.stderr, /no repository test\/nope on http:\/\/127\.0\.0\.1:\d+ \(404/);
      const quant = await cli(["pull", "hf.co/test/tiny:Q2_K"]);
      assert.equal(quant.code, 2);
      assert.match(quant.stderr, /test\/tiny has no Q2_K file; it has: Q4_K_M, Q8_0/);
      assert.equal(await record("test--tiny-q2_k"), undefined);
      const url = await cli(["pull", "http://h/x.gguf", "--revision", "v1"]);
      assert.equal(url.code, 2);
      assert.match(url.stderr, /--revision is for a Hugging Face name/);
      const name = await cli(["pull", "no-such-model"]);
      assert.equal(name.code, 1);
      assert.match(name.stderr, /edgenode pull hf\.co\/USER\/REPO\[:QUANT\]/);
    },
  );
});
