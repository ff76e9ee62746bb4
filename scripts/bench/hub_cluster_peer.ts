/**
 * The processes scripts/bench/hub_cluster.ts drives (127.0.0.1 only), one mode per run:
 *
 * - `nodes HUB_URL TOKEN N`: N simulated nodes (a key each, proof + JWT, 200 at a time), as
 *   scripts/bench/hub_clients.ts, but each reconnects by itself when its connection closes, with
 *   the node's own backoff (src/hub_client/hub_link.ts: 500 ms doubling, ±20 %). Prints JSON
 *   lines: `{"connected":N,"ms":T}` once all are in; then, after losses, `{"whole":...}` each
 *   time all N are connected again (with when the first went and when the last came back).
 *   Holds them until stdin closes.
 * - `nats-recv SERVER USER PASSWORD_FILE SUBJECT`: counts the bytes published on SUBJECT,
 *   acknowledging each chunk to its reply subject; an empty message ends the transfer and is
 *   answered with the count. `nats-send SERVER USER PASSWORD_FILE SUBJECT MIB CHUNK_KIB WINDOW`:
 *   publishes MIB MiB in CHUNK_KIB KiB chunks, at most WINDOW unacknowledged.
 * - `http-recv`: a bare Deno.serve counting the bytes of each POST (prints its port).
 *   `http-send URL MIB CHUNK_KIB`: one POST of MIB MiB, streamed in CHUNK_KIB KiB chunks.
 *
 * Senders print `{"bytes":B,"ms":T,"cpuMs":C}` (C: their own CPU time while sending); receivers
 * print `{"bytes":B,"cpuMs":C}` after each transfer.
 *
 * @module
 */
import process from "node:process";
import { connect, createInbox, type Msg } from "@nats-io/transport-node";
import { backoffDelay } from "../../src/async/backoff.ts";
import { TUNNEL_PROTOCOL } from "../../src/tunnel/wire_frames.ts";
import { describeImpostor, impostorKey, proofFor } from "../../testing/mesh.ts";

const [mode, ...args] = Deno.args;

function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

function print(record: Record<string, unknown>): void {
  console.log(JSON.stringify(record));
}

/** A payload chunk: random bytes, copied per send as a real body's chunks would be fresh. */
function chunkSource(chunkKib: number) {
  const block = new Uint8Array(chunkKib * 1024);
  for (let i = 0; i < block.length; i += 65536) {
    crypto.getRandomValues(block.subarray(i, Math.min(block.length, i + 65536)));
  }
  return (bytes: number) => block.slice(0, bytes);
}

async function held(): Promise<void> {
  for await (const _ of Deno.stdin.readable) { /* until the bench closes stdin */ }
}

// ---- simulated nodes that reconnect ----------------------------------------------------------

/** The node's reconnect backoff (src/hub_client/hub_link.ts). */
const RECONNECT_BACKOFF = { minTimeout: 500, maxTimeout: 30_000, jitter: 0.2 };
const BATCH = 200;

async function nodes(hubUrl: string, token: string, count: number): Promise<void> {
  if (!new URL(hubUrl).hostname.startsWith("127.")) throw new Error("127.0.0.1 only");
  const url = `${hubUrl.replace(/^http/, "ws")}/hub/v1/connect`;
  let connected = 0;
  let whole = false;
  let firstLost = 0;
  let reconnects: number[] = [];
  const sockets = new Set<WebSocket>();
  let closing = false;

  const slot = async (i: number) => {
    const key = await impostorKey();
    const node = { ...describeImpostor(key.id, `sim-${i}`, 1), accountId: "bench" };
    let attempt = 0;
    const first = Promise.withResolvers<void>();
    const open = () => {
      const socket = new WebSocket(url, [TUNNEL_PROTOCOL]);
      sockets.add(socket);
      let welcomed = false;
      socket.onmessage = async (event) => {
        const message = JSON.parse(String(event.data));
        if (message.t === "challenge") {
          const proof = await proofFor(key, message.challenge, node);
          socket.send(JSON.stringify({ t: "hello", token, proof }));
        } else if (message.t === "welcome") {
          welcomed = true;
          attempt = 0;
          connected++;
          first.resolve();
          if (firstLost) reconnects.push(Date.now());
          if (!whole && connected === count && firstLost) {
            whole = true;
            const sorted = reconnects.sort((a, b) => a - b);
            print({
              whole: count,
              lostAt: firstLost,
              reconnected: sorted.length,
              medianAt: sorted[Math.floor(sorted.length / 2)],
              lastAt: Date.now(),
            });
            firstLost = 0;
            reconnects = [];
          }
        } else if (message.t === "ping") socket.send(JSON.stringify({ t: "pong" }));
      };
      socket.onclose = () => {
        sockets.delete(socket);
        if (closing) return;
        if (welcomed) {
          connected--;
          if (!firstLost) firstLost = Date.now();
          whole = false;
        }
        setTimeout(open, backoffDelay(++attempt, RECONNECT_BACKOFF));
      };
    };
    open();
    await first.promise;
  };

  const started = performance.now();
  for (let i = 0; i < count; i += BATCH) {
    await Promise.all(Array.from({ length: Math.min(BATCH, count - i) }, (_, j) => slot(i + j)));
  }
  whole = true;
  print({ connected, ms: Math.round(performance.now() - started) });
  await held();
  closing = true;
  for (const socket of sockets) socket.close();
}

// ---- NATS: chunks with a window of acknowledgements -----------------------------------------

async function natsConnection(server: string, user: string, passwordFile: string) {
  const pass = (await Deno.readTextFile(passwordFile)).trim();
  return await connect({ servers: server, user, pass });
}

async function natsReceive(server: string, user: string, passwordFile: string, subject: string) {
  const nc = await natsConnection(server, user, passwordFile);
  let bytes = 0;
  let cpuAtStart: number | undefined;
  nc.subscribe(subject, {
    callback: (_error, msg: Msg) => {
      cpuAtStart ??= cpuMs();
      if (msg.data.length > 0) {
        bytes += msg.data.length;
        msg.respond();
        return;
      }
      msg.respond(JSON.stringify({ bytes }));
      print({ bytes, cpuMs: Math.round(cpuMs() - cpuAtStart) });
      bytes = 0;
      cpuAtStart = undefined;
    },
  });
  await nc.flush();
  print({ ready: true });
  await held();
  await nc.close();
}

async function natsSend(
  server: string,
  user: string,
  passwordFile: string,
  subject: string,
  total: number,
  chunkKib: number,
  window: number,
) {
  const nc = await natsConnection(server, user, passwordFile);
  const chunk = chunkSource(chunkKib);
  const inbox = createInbox();
  let inFlight = 0;
  let wake: (() => void) | undefined;
  nc.subscribe(inbox, {
    callback: () => {
      inFlight--;
      wake?.();
    },
  });
  await nc.flush();
  const started = performance.now();
  const cpuAtStart = cpuMs();
  for (let sent = 0; sent < total;) {
    while (inFlight >= window) await new Promise<void>((resolve) => (wake = resolve));
    const size = Math.min(chunkKib * 1024, total - sent);
    nc.publish(subject, chunk(size), { reply: inbox });
    inFlight++;
    sent += size;
  }
  while (inFlight > 0) await new Promise<void>((resolve) => (wake = resolve));
  const answer = await nc.request(subject, new Uint8Array(0), { timeout: 60_000 });
  const { bytes } = answer.json<{ bytes: number }>();
  print({
    bytes,
    ms: Math.round(performance.now() - started),
    cpuMs: Math.round(cpuMs() - cpuAtStart),
  });
  await nc.close();
}

// ---- HTTP: one streamed POST ------------------------------------------------------------------

async function httpReceive() {
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: ({ port }) => print({ port }),
  }, async (request) => {
    const cpuAtStart = cpuMs();
    let bytes = 0;
    let reads = 0;
    for await (const part of request.body!) {
      bytes += part.length;
      reads++;
    }
    print({ bytes, reads, cpuMs: Math.round(cpuMs() - cpuAtStart) });
    return Response.json({ bytes });
  });
  await held();
  await server.shutdown();
}

async function httpSend(url: string, total: number, chunkKib: number) {
  const chunk = chunkSource(chunkKib);
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= total) return controller.close();
      const size = Math.min(chunkKib * 1024, total - sent);
      sent += size;
      controller.enqueue(chunk(size));
    },
  }, { highWaterMark: 0 });
  const started = performance.now();
  const cpuAtStart = cpuMs();
  const response = await fetch(url, { method: "POST", body });
  const { bytes } = await response.json();
  print({
    bytes,
    ms: Math.round(performance.now() - started),
    cpuMs: Math.round(cpuMs() - cpuAtStart),
  });
}

if (mode === "nodes") await nodes(args[0], args[1], Number(args[2]));
else if (mode === "nats-recv") await natsReceive(args[0], args[1], args[2], args[3]);
else if (mode === "nats-send") {
  const [server, user, passwordFile, subject, mib, chunkKib, window] = args;
  await natsSend(
    server,
    user,
    passwordFile,
    subject,
    Number(mib) * 2 ** 20,
    Number(chunkKib),
    Number(window),
  );
} else if (mode === "http-recv") await httpReceive();
else if (mode === "http-send") await httpSend(args[0], Number(args[1]) * 2 ** 20, Number(args[2]));
else throw new Error(`unknown mode ${mode}: nodes, nats-recv, nats-send, http-recv, http-send`);
