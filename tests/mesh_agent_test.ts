/**
 * Issue 36's "done when", on one LAN: an agent written the way mai-v1 is, deployed on node A,
 * answers a streamed chat whose prompt is served by a mILM-style microservice on node B,
 * addressed as `<nodeB>@mmesh/<clientId>/milm/v1/chat/completions` (both scripts:
 * tests/helpers/reference_style_mims.ts). Two real nodes on loopback in a private mDNS group,
 * inference on, one account. B's mILM downloads a tiny model into `cache/` and lists it ready;
 * A's agent is configured as the reference's guide configures mai-v1 (a collection of prompt
 * URLs, the model id, mILM's key as `apikey: "Bearer <key>"`), resolves the prompt URL the
 * agent's way (the decrypted linkLocal listing) and the runtime's way (the URL handed to
 * `context.http.request`), and relays the model's chunks as they come. A wrong key is refused
 * by B's mILM and reported by the agent, so is a node the LAN does not have; B's mILM deletes
 * the model and it unloads.
 */
import assert from "node:assert/strict";
import { ensureTestEngine } from "../testing/engine.ts";
import { startFileServer } from "../testing/file_server.ts";
import { cliToken, makeIssuer, rpc } from "../testing/identity.ts";
import { deployScript, mcm } from "../testing/mcm.ts";
import { linkLocalNodes, nodeIdOf, randomMdnsPort, startMeshNode } from "../testing/mesh.ts";
import { type TestNode, waitFor, withTempDir } from "../testing/node.ts";
import { tinyLlamaGguf } from "../testing/tiny_llama.ts";
import { AGENT_STYLE, MILM_STYLE } from "./helpers/reference_style_mims.ts";

/** The reference's clients are UUIDs; the agent takes its service type's first 36 characters. */
const CLIENT = "0b6c4a2e-6f4b-4d4e-9a51-3c2f1e0d9b8a";
/** mILM's API key (`[milm-v1] API_KEY`, the reference's default), and the agent's. */
const KEY = "1234";
/**
 * The model B serves: the tiny test model, wider and deeper than its default (about 17 MB) so
 * that an answer takes some 100 ms to generate rather than 20: long enough to arrive in several
 * reads where each hop relays as it receives.
 */
const MODEL = { embedding: 256, layers: 4, feedForward: 1024 };
/** Tokens per answer: several chunks, little time on a loaded 2-core machine. */
const MAX_TOKENS = 48;
/**
 * Chats per way until one arrives in two reads or more: llama.cpp's threads take every core
 * while they generate, so a starved reader may now and then get a whole answer in one read; a
 * hop that buffers whole answers gives one read every time.
 */
const TRIES = 4;

/** Why inference cannot run here, if it cannot (the engine is installed on first use). */
const noEngine = await ensureTestEngine().then(() => undefined, (e: Error) => e.message);
if (noEngine) console.log(`mesh_agent_test: skipped, no inference engine here: ${noEngine}`);

/** The names of the files B's container has loaded (its record's `inference.loadedFiles`). */
async function loadedOn(node: TestNode, container: string): Promise<string[]> {
  const response = await mcm(node, `/containers/${container}`);
  const record = await response.json();
  assert.equal(response.status, 200, JSON.stringify(record));
  return (record.inference?.loadedFiles ?? []).map((file: { name: string }) => file.name);
}

/** Calls a reference-style microservice at `url` with its key and a JSON body. */
function call(url: string, body?: unknown, method = "POST", key = KEY): Promise<Response> {
  return fetch(url, {
    method,
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** The body's reads as they came, and its `data:` payloads (JSON parsed, `[DONE]` as is). */
async function readEvents(response: Response) {
  const reads: string[] = [];
  const decoder = new TextDecoder();
  for await (const chunk of response.body!) reads.push(decoder.decode(chunk, { stream: true }));
  const events = reads.join("").split("\n\n").filter(Boolean).map((event) => {
    assert.match(event, /^data: /, event);
    const data = event.slice("data: ".length);
    return data === "[DONE]" ? data : JSON.parse(data);
  });
  // deno-lint-ignore no-explicit-any
  return { reads, events: events as any[] };
}

/**
 * Asks until an answer arrives in two reads or more ({@link TRIES} at most); each answer is
 * asserted an event stream. Returns the last.
 */
async function streamedAnswer(ask: () => Promise<Response>, way: string) {
  for (let tried = 1;; tried++) {
    const started = Date.now();
    const answer = await ask();
    assert.equal(answer.status, 200, `${way}: ${answer.status}`);
    assert.equal(answer.headers.get("content-type"), "text/event-stream", way);
    const { reads, events } = await readEvents(answer);
    console.log(
      `mesh_agent_test: ${way}: ${events.length} events in ${reads.length} reads, ` +
        `${Date.now() - started} ms`,
    );
    if (reads.length >= 2 || tried === TRIES) return { answer, reads, events };
  }
}

/**
 * Starts A (trusting `trustFile`) and B in a new mDNS group, both allowed to call loopback (in
 * a test every node and the file server are 127.0.0.1), and runs `test` once A lists B.
 */
async function withPair(
  trustFile: string,
  test: (a: TestNode, b: TestNode, bId: string) => Promise<void>,
) {
  const port = randomMdnsPort();
  const config = { mcm: { outboundNetworks: ["public", "private", "loopback"] } };
  const quiet = { announceSeconds: 30, config };
  await using a = await startMeshNode(port, { name: "a", args: ["--trust", trustFile], ...quiet });
  await using b = await startMeshNode(port, { name: "b", ...quiet });
  const bId = await nodeIdOf(b);
  await waitFor(
    async () => (await linkLocalNodes(a)).some((n: { id: string }) => n.id === bId),
    "A to list B",
  );
  await test(a, b, bId);
}

Deno.test({
  name:
    "an agent on A answers a streamed chat served by B's mILM at <nodeB>@mmesh/<clientId>/milm/v1",
  ignore: noEngine !== undefined,
  fn: () =>
    withTempDir(async (dir) => {
      const issuer = await makeIssuer(`${dir}/issuer`);
      await using files = startFileServer();
      await withPair(issuer.trustFile, async (a, b, bId) => {
        await rpc(a, "associateAccount", [
          await cliToken(issuer, "acct-1", "edge:account:associate"),
        ]);
        const token = await cliToken(issuer, "acct-1", "edge:clusters");

        // B: the mILM-style microservice downloads the model into cache/ and lists it ready.
        const milm = await deployScript(b, "milm-v1", MILM_STYLE, {
          "MCM.BASE_API_PATH": "/milm/v1",
          API_KEY: KEY,
        }, CLIENT);
        const modelUrl = files.serve("/tiny.gguf", tinyLlamaGguf(MODEL));
        const downloaded = await call(`${milm.url}/models`, { id: "tiny", url: modelUrl });
        assert.equal(downloaded.status, 201, await downloaded.text());
        const listed = await (await fetch(`${milm.url}/models`)).json();
        assert.deepEqual(listed.data, [{ id: "tiny", object: "model", readyToUse: true }]);
        await waitFor(
          async () =>
            (await linkLocalNodes(a)).find((n: { id: string }) => n.id === bId)?.services
              .some((s: { serviceType: string }) => s.serviceType === `${CLIENT}-milm-v1`),
          "A to list B's milm-v1",
        );

        // A: the agent, once resolving by its listing (mai-v1's way), once by the runtime.
        const prompt = `${bId}@mmesh/${CLIENT}/milm/v1/chat/completions`;
        const agents = {
          listing: await deployScript(a, "mai-v1", AGENT_STYLE, {
            EDGE_ACCESS_TOKEN: token,
            API_KEY: KEY,
          }, CLIENT),
          runtime: await deployScript(a, "mai-v1-runtime", AGENT_STYLE, {
            API_KEY: KEY,
            MMESH_RESOLVE: "runtime",
          }, CLIENT),
        };
        for (const [way, agent] of Object.entries(agents)) {
          const collections = [
            ["pair", prompt, `Bearer ${KEY}`],
            ["wrong-key", prompt, "Bearer nope"],
            ["nobody", `${"0".repeat(56)}@mmesh/${CLIENT}/milm/v1/chat/completions`, KEY],
          ];
          for (const [id, url, apikey] of collections) {
            const declared = await call(`${agent.url}/models`, {
              id,
              object: "model",
              modelfile: { prompts: [{ url, model: "tiny", apikey, required: true }] },
              owned_by: "mimik",
            });
            assert.equal(declared.status, 201, `${way}: ${await declared.text()}`);
          }
          const ask = (model: string) =>
            call(`${agent.url}/chat/completions`, {
              model,
              messages: [{ role: "user", content: `hello B, the ${way} way` }],
              stream: true,
              max_tokens: MAX_TOKENS,
            });

          const { answer, reads, events } = await streamedAnswer(() => ask("pair"), way);
          assert.ok(reads.length >= 2, `${way}: ${TRIES} answers, each in one read: not streamed`);
          assert.equal(events.pop(), "[DONE]", way);
          assert.ok(!events.includes("[DONE]"), `${way}: one [DONE], at the end`);
          assert.ok(events.length >= 2, `${way}: ${JSON.stringify(events)}`);
          for (const chunk of events) {
            assert.equal(chunk.object, "chat.completion.chunk", JSON.stringify(chunk));
            assert.equal(chunk.model, "cache/tiny.gguf", "named as context.ml names B's file");
          }
          assert.equal(events.at(-1).usage.completion_tokens, MAX_TOKENS, "the model on B wrote");
          if (way === "listing") {
            assert.equal(answer.headers.get("x-peer-os"), Deno.build.os, "B's os characteristic");
          }
          assert.deepEqual(await loadedOn(b, milm.container.id), ["cache/tiny.gguf"], way);

          const refused = await ask("wrong-key");
          const why = await refused.json();
          assert.equal(refused.status, 403, `${way}: ${JSON.stringify(why)}`);
          assert.match(why.message, /^prompt .*@mmesh\/.*: HTTP 403/, way);
          assert.deepEqual(JSON.parse(why.content), { message: "Forbidden", statusCode: 403 });

          // A node the LAN does not have: the agent's own 404, or the runtime's in the
          // reference's shape.
          const nobody = await ask("nobody");
          const missing = await nobody.json();
          assert.equal(nobody.status, 404, `${way}: ${JSON.stringify(missing)}`);
          const said = way === "listing" ? missing.message : JSON.parse(missing.content).message;
          assert.match(said, /Cannot find node 0{56}/, way);
        }

        // B's mILM deletes the model: it unloads, and the agent reports B's refusal after.
        const deleted = await call(`${milm.url}/models?modelId=tiny`, undefined, "DELETE");
        assert.equal(deleted.status, 200, await deleted.text());
        await waitFor(
          async () => (await loadedOn(b, milm.container.id)).length === 0,
          "the deleted model unloaded",
        );
        assert.deepEqual((await (await fetch(`${milm.url}/models`)).json()).data, []);
        const gone = await call(`${agents.runtime.url}/chat/completions`, {
          model: "pair",
          messages: [{ role: "user", content: "still there?" }],
          stream: true,
        });
        const reported = await gone.json();
        assert.equal(gone.status, 400, JSON.stringify(reported));
        assert.match(JSON.parse(reported.content).message, /no such file in the container's/);
      });
    }),
});
