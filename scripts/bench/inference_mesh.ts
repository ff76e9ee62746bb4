/**
 * Mesh routing figures for `deno task bench` (alone: `deno task bench --only inference`): a
 * streamed chat completion sent to node A, which lacks the model and routes it to node B on the
 * LAN (issue 37), next to the same chat sent straight to B, in the same run: time to the first
 * token and the generation rate, as the client sees them (inference.ts's nodeChat).
 *
 * Two nodes of one account in a private mDNS group on loopback; B holds the small llama of
 * inference.ts, loaded (two warm-up completions each way are left out). Each round sends one
 * prompt both ways, the order alternating; a prompt differs from the others from its first
 * words. Target: ≥ 0.95× the straight figures.
 *
 * @module
 */
import { ensureTestEngine } from "../../testing/engine.ts";
import { cliToken, makeIssuer, rpc } from "../../testing/identity.ts";
import { nodeIdOf, randomMdnsPort, startMeshNode } from "../../testing/mesh.ts";
import { waitFor } from "../../testing/node.ts";
import { tinyLlamaGguf } from "../../testing/tiny_llama.ts";
import { addModel, benchPrompt, nodeChat, type NodeRun } from "./inference.ts";
import { median } from "./tools.ts";

const MODEL = "bench-mesh-small";
const OPTIONS = { layers: 4, embedding: 256, heads: 8, feedForward: 512, contextLength: 2048 };
const ROUNDS = 15;
const WARMUPS = 2;

const rate = (run: NodeRun) => ((run.usage.completion_tokens - 1) / run.decodeMs) * 1000;
const int = (n: number) => Math.round(n).toLocaleString("en-US");

/** The mesh routing rows. */
export async function meshRoutingRows(): Promise<string[][]> {
  await ensureTestEngine();
  const dir = await Deno.makeTempDir({ prefix: "edgenode-bench-mesh-" });
  try {
    const issuer = await makeIssuer(`${dir}/issuer`);
    const port = randomMdnsPort();
    const options = (name: string) => ({ name, args: ["--trust", issuer.trustFile] });
    await using a = await startMeshNode(port, options("a"));
    await using b = await startMeshNode(port, options("b"));
    for (const node of [a, b]) {
      await rpc(node, "associateAccount", [
        await cliToken(issuer, "bench", "edge:account:associate"),
      ]);
    }
    const file = `${dir}/${MODEL}.gguf`;
    await Deno.writeFile(file, tinyLlamaGguf(OPTIONS));
    await addModel(b, MODEL, file, OPTIONS.contextLength);
    for (let i = 1; i <= WARMUPS; i++) await nodeChat(b, MODEL, benchPrompt(-i));
    const bId = await nodeIdOf(b);
    // A routes once it sees B's model loaded in B's description.
    await waitFor(
      async () => {
        const response = await fetch(`${a.url}/v1/models?scope=mesh`, { headers: a.auth() });
        const models = (await response.json()).data as {
          id: string;
          nodes: { loaded: boolean }[];
        }[];
        return models.some((m) => m.id === MODEL && m.nodes.some((n) => n.loaded));
      },
      "A to see B's model loaded",
      20_000,
    );
    for (let i = 1; i <= WARMUPS; i++) await nodeChat(a, MODEL, benchPrompt(-10 - i));

    const straight: NodeRun[] = [];
    const routed: NodeRun[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const viaA = () => nodeChat(a, MODEL, benchPrompt(100 + i)).then((r) => routed.push(r));
      const toB = () => nodeChat(b, MODEL, benchPrompt(200 + i)).then((r) => straight.push(r));
      if (i % 2 === 0) await toB().then(viaA);
      else await viaA().then(toB);
    }
    const servedBy = await fetch(`${a.url}/v1/chat/completions`, {
      method: "POST",
      headers: a.auth({ "content-type": "application/json" }),
      body: JSON.stringify({
        model: MODEL,
        messages: [{ role: "user", content: "hi" }],
        max_tokens: 2,
      }),
    }).then(async (r) => (await r.body?.cancel(), r.headers.get("x-edge-served-by")));
    if (servedBy !== bId) throw new Error(`A's chat was served by ${servedBy}, not B`);

    const ttft = {
      routed: median(routed.map((r) => r.ttftMs)),
      straight: median(straight.map((r) => r.ttftMs)),
    };
    const gen = { routed: median(routed.map(rate)), straight: median(straight.map(rate)) };
    console.log(
      `bench: mesh routing, ${ROUNDS} rounds\n` +
        `  routed   tokens/s ${routed.map((r) => int(rate(r))).join(" ")}; ttft ms ${
          routed.map((r) => r.ttftMs.toFixed(1)).join(" ")
        }\n` +
        `  straight tokens/s ${straight.map((r) => int(rate(r))).join(" ")}; ttft ms ${
          straight.map((r) => r.ttftMs.toFixed(1)).join(" ")
        }`,
    );
    const what = `routed streamed chat (A lacks the model, B on the LAN has the small llama ` +
      `loaded; 256 tokens, median of ${ROUNDS})`;
    return [
      [
        `${what}: generation, by the client from its first to its last chunk`,
        `${int(gen.routed)} tokens/s (${(gen.routed / gen.straight).toFixed(2)}×, target ≥ 0.95×)`,
        `the same chat sent straight to B: ${int(gen.straight)} tokens/s`,
      ],
      [
        `${what}: time to the first token`,
        `${ttft.routed.toFixed(1)} ms`,
        `straight to B: ${ttft.straight.toFixed(1)} ms (routing adds ${
          (ttft.routed - ttft.straight).toFixed(1)
        } ms: one more hop; A's signature and B's check of it are reused for seconds)`,
      ],
    ];
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
