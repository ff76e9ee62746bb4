/**
 * Simulated nodes for the hub benchmark: `deno run ... hub_clients.ts HUB_URL TOKEN N`
 * opens N WebSockets to the hub, each proving a key of its own (spec/hub.yaml), 200 at a time,
 * prints `connected N in T ms`, and holds them until its stdin closes. 127.0.0.1 only.
 *
 * @module
 */
import { TUNNEL_PROTOCOL } from "../../src/tunnel/wire_frames.ts";
import { describeImpostor, impostorKey, proofFor } from "../../testing/mesh.ts";

const [hubUrl, token, countText] = Deno.args;
const count = Number(countText);
if (!new URL(hubUrl).hostname.startsWith("127.")) throw new Error("127.0.0.1 only");
const BATCH = 200;

async function connect(i: number): Promise<WebSocket> {
  const key = await impostorKey();
  const node = { ...describeImpostor(key.id, `sim-${i}`, 1), accountId: "bench" };
  const socket = new WebSocket(`${hubUrl.replace(/^http/, "ws")}/hub/v1/connect`, [
    TUNNEL_PROTOCOL,
  ]);
  const welcomed = Promise.withResolvers<WebSocket>();
  socket.onmessage = async (event) => {
    const message = JSON.parse(String(event.data));
    if (message.t === "challenge") {
      const proof = await proofFor(key, message.challenge, node);
      socket.send(JSON.stringify({ t: "hello", token, proof }));
    } else if (message.t === "welcome") welcomed.resolve(socket);
    else if (message.t === "ping") socket.send(JSON.stringify({ t: "pong" }));
    else if (message.t === "refused") welcomed.reject(new Error(message.message));
  };
  socket.onclose = (event) => welcomed.reject(new Error(`closed: ${event.reason}`));
  return await welcomed.promise;
}

const started = performance.now();
const sockets: WebSocket[] = [];
for (let i = 0; i < count; i += BATCH) {
  const batch = Array.from({ length: Math.min(BATCH, count - i) }, (_, j) => connect(i + j));
  sockets.push(...await Promise.all(batch));
}
console.log(`connected ${sockets.length} in ${Math.round(performance.now() - started)} ms`);
for await (const _ of Deno.stdin.readable) { /* hold until the bench closes stdin */ }
for (const socket of sockets) socket.close();
