/**
 * `edgenode run MODEL [PROMPT]` against a real node running a tiny real model: the printed
 * answer is the API's at temperature 0 (prompt as an argument, piped in, both, with a system
 * message), --json, the errors a user meets (unknown model, an embedding model, nothing to ask,
 * bad flags, an unreachable node, a wrong key), the conversation over piped lines
 * (`--interactive`: history kept, /clear), and, on Linux with util-linux's `script`, the
 * conversation on a real pseudo-terminal: load progress, Ctrl-C stopping an answer, Ctrl-D.
 */
import assert from "node:assert/strict";
import { cliEnv, edgenode, HAS_SCRIPT } from "./helpers/cli_env.ts";
import { ensureTestEngine } from "../testing/engine.ts";
import {
  LAUNCHER_PERMISSIONS,
  MAIN,
  runEdgenode,
  startTestNode,
  type TestNode,
  waitFor,
} from "../testing/node.ts";
import { createModel, uploadRaw } from "./helpers/store.ts";
import { tinyLlamaGguf } from "../testing/tiny_llama.ts";

const KEY = "a-run-command-test-key-0123456789";
const SAMPLING = ["--temperature", "0", "--max-tokens", "20"];

async function upload(node: TestNode, id: string, kind: string, bytes: Uint8Array) {
  await createModel(node, id, kind);
  const response = await uploadRaw(node, id, bytes);
  assert.equal(response.status, 200, await response.text());
}

type Message = { role: string; content: string };

/** The API's answer to `messages` at temperature 0, 20 tokens at most. */
async function apiAnswer(node: TestNode, messages: Message[], model = "tiny"): Promise<string> {
  const response = await fetch(`${node.url}/v1/chat/completions`, {
    method: "POST",
    headers: node.auth({ "Content-Type": "application/json" }),
    body: JSON.stringify({ model, messages, temperature: 0, max_tokens: 20 }),
  });
  const body = await response.json();
  assert.equal(response.status, 200, JSON.stringify(body));
  return body.choices[0].message.content;
}

/** What `run` prints for an answer: the text, ended by a newline. */
function printed(text: string): string {
  return text.endsWith("\n") ? text : `${text}\n`;
}

const user = (content: string): Message => ({ role: "user", content });

Deno.test("edgenode run: one answer, the API's, from an argument or stdin; its errors", async (t) => {
  await ensureTestEngine();
  await using node = await startTestNode({ config: { apiKey: KEY } });
  await upload(node, "tiny", "llm", tinyLlamaGguf());
  await upload(node, "vectors", "embed", tinyLlamaGguf({ embedding: 32, seed: 5 }));
  const env = { EDGENODE_NODE: node.url, EDGENODE_API_KEY: KEY };
  const run = (args: string[], stdin?: string) => edgenode(["run", ...args], env, stdin);

  await t.step("a PROMPT: the streamed answer is the API's, then exit 0", async () => {
    // The node's owner: the key from its data directory, as the other client commands find it.
    const ran = await runEdgenode(["run", "tiny", "hello", ...SAMPLING], {
      EDGENODE_NODE: node.url,
      EDGENODE_DATA_DIR: node.dataDir,
    });
    assert.equal(ran.code, 0, ran.stderr);
    const expected = await apiAnswer(node, [user("hello")]);
    assert.ok(expected.trim().length > 0);
    assert.equal(ran.stdout, printed(expected));
    assert.equal(ran.stderr, "", "no progress drawn when stderr is not a terminal");
    // Several words make one prompt, as ollama joins them.
    const words = await run(["tiny", "hello", "there", ...SAMPLING]);
    assert.equal(words.code, 0, words.stderr);
    assert.equal(words.stdout, printed(await apiAnswer(node, [user("hello there")])));
  });

  await t.step("piped stdin is the prompt; with a PROMPT too, stdin comes first", async () => {
    const piped = await run(["tiny", ...SAMPLING], "the cat sat\n");
    assert.equal(piped.code, 0, piped.stderr);
    assert.equal(piped.stdout, printed(await apiAnswer(node, [user("the cat sat")])));
    const both = await run(["tiny", "what is it", ...SAMPLING], "a red book\n");
    assert.equal(both.code, 0, both.stderr);
    assert.equal(both.stdout, printed(await apiAnswer(node, [user("a red book what is it")])));
  });

  await t.step("--system, and --json's whole chat.completion", async () => {
    const system = await run(["tiny", "hello", "--system", "You are a dog", ...SAMPLING]);
    assert.equal(system.code, 0, system.stderr);
    const messages = [{ role: "system", content: "You are a dog" }, user("hello")];
    assert.equal(system.stdout, printed(await apiAnswer(node, messages)));
    const json = await run(["tiny", "hello", "--json", ...SAMPLING]);
    assert.equal(json.code, 0, json.stderr);
    const completion = JSON.parse(json.stdout);
    assert.equal(completion.object, "chat.completion");
    assert.equal(completion.choices[0].message.content, await apiAnswer(node, [user("hello")]));
    assert.equal(completion.choices[0].finish_reason, "length");
    assert.equal(completion.usage.completion_tokens, 20);
  });

  await t.step("an unknown model: exit 1, and how to list and add models", async () => {
    const ran = await run(["no-such-model", "hello"]);
    assert.equal(ran.code, 1);
    assert.equal(ran.stdout, "");
    assert.match(ran.stderr, /^edgenode: model 'no-such-model' is not on the node at http:/);
    assert.match(ran.stderr, /edgenode models ls/);
    assert.match(ran.stderr, /edgenode models pull no-such-model URL/);
    const vectors = await run(["vectors", "hello"]);
    assert.equal(vectors.code, 1);
    assert.match(vectors.stderr, /'vectors' is an embedding model/);
  });

  await t.step("usage errors exit 2; an unreachable node and a wrong key exit 1", async () => {
    const nothing = await run(["tiny"]);
    assert.equal(nothing.code, 2);
    assert.match(nothing.stderr, /nothing to ask/);
    const noModel = await run([]);
    assert.equal(noModel.code, 2);
    assert.match(noModel.stderr, /usage: edgenode run MODEL/);
    const hot = await run(["tiny", "hi", "--temperature", "5"]);
    assert.equal(hot.code, 2);
    assert.match(hot.stderr, /--temperature must be a number from 0 to 2/);
    const json = await run(["tiny", "--interactive", "--json"]);
    assert.equal(json.code, 2);

    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const closed = `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`;
    listener.close();
    const away = await edgenode(["run", "tiny", "hi"], { ...env, EDGENODE_NODE: closed });
    assert.equal(away.code, 1);
    assert.match(away.stderr, new RegExp(`cannot reach the node at ${closed} \\(connection`));
    assert.match(away.stderr, /--node URL or EDGENODE_NODE/);

    const wrong = await edgenode(["run", "tiny", "hi"], {
      ...env,
      EDGENODE_API_KEY: "not-the-key-0123456789",
    });
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /incorrect API key/);
    assert.match(wrong.stderr, /--api-key or EDGENODE_API_KEY/);
  });

  await t.step("--interactive on piped lines: history kept, /clear, /bye", async () => {
    const ran = await run(
      ["tiny", ...SAMPLING, "--interactive"],
      "hello\nand then\n/clear\nhello\n/nope\n/bye\nnot asked\n",
    );
    assert.equal(ran.code, 0, ran.stderr);
    const first = await apiAnswer(node, [user("hello")]);
    const second = await apiAnswer(node, [
      user("hello"),
      { role: "assistant", content: first },
      user("and then"),
    ]);
    assert.notEqual(second, await apiAnswer(node, [user("and then")]), "history changes it");
    assert.equal(
      ran.stdout,
      `>>> ${printed(first)}\n>>> ${printed(second)}\n>>> Cleared the conversation.\n` +
        `>>> ${printed(first)}\n>>> Unknown command '/nope'. Type /? for help\n>>> `,
    );
    // A PROMPT with --interactive is the first question; the end of input ends the chat.
    const asked = await run(["tiny", "hello", ...SAMPLING, "--interactive"], "");
    assert.equal(asked.code, 0, asked.stderr);
    assert.equal(asked.stdout, `${printed(first)}\n>>> \n`);
  });
});

/** A shell word. */
const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;

Deno.test({
  name: "edgenode run on a terminal: load progress, a chat, Ctrl-C stops an answer, Ctrl-D",
  ignore: !HAS_SCRIPT,
  async fn() {
    await ensureTestEngine();
    await using node = await startTestNode({ config: { apiKey: KEY } });
    // A long context, so that an answer of 3000 tokens takes seconds to write.
    await upload(node, "tiny", "llm", tinyLlamaGguf({ contextLength: 4096 }));
    const command = [Deno.execPath(), "run", ...LAUNCHER_PERMISSIONS, MAIN, "run", "tiny"]
      .concat(["--temperature", "0", "--max-tokens", "3000"]).map(quote).join(" ");
    // script: -q quiet, -f flush at once, -e its child's exit code; `exec` so that Ctrl-C's
    // SIGINT goes to the CLI and no shell in between.
    const child = new Deno.Command("script", {
      args: ["-qfec", `exec ${command}`, "/dev/null"],
      clearEnv: true,
      env: cliEnv({
        TERM: "dumb",
        EDGENODE_NODE: node.url,
        EDGENODE_API_KEY: KEY,
      }),
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    let screen = "";
    const reading = (async () => {
      for await (const text of child.stdout.pipeThrough(new TextDecoderStream())) screen += text;
    })();
    const stderr = new Response(child.stderr).text();
    const keys = child.stdin.getWriter();
    const type = (text: string) => keys.write(new TextEncoder().encode(text));
    const prompts = () => screen.split(">>> ").length - 1;
    try {
      await waitFor(() => prompts() === 1, "the first prompt", 60_000);
      assert.match(screen, /loading tiny…/, "the first load's progress, on the terminal");

      await type("tell me a story\n");
      const before = screen.length;
      await waitFor(() => screen.length > before + 40, "the answer to start", 30_000);
      await type("\x03"); // Ctrl-C
      await waitFor(() => prompts() === 2, "the prompt after Ctrl-C", 30_000);
      const stopped = screen.slice(screen.indexOf("tell me a story"), screen.lastIndexOf(">>> "));
      assert.ok(stopped.length < 2000, `the answer went on: ${stopped.length} characters`);

      await type("\x03"); // Ctrl-C at the prompt: a hint, not an exit.
      await waitFor(() => prompts() === 3, "the hint", 10_000);
      assert.match(screen, /Use Ctrl \+ d or \/bye to exit\./);

      await type("/clear\n");
      await waitFor(() => prompts() === 4, "the prompt after /clear", 10_000);
      await type("\x04"); // Ctrl-D: the end of input ends the chat.
      const status = await child.status;
      assert.equal(status.code, 0, screen);
    } finally {
      await keys.close().catch(() => {});
      try {
        child.kill("SIGKILL");
      } catch { /* exited */ }
      await child.status;
      await reading;
      await stderr;
    }
  },
});
