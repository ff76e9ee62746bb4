/**
 * The tunnel's own JavaScript per small request, without sockets, HTTP servers or other processes
 * (issue 39): the hub's half (the forwarded head, frames, the Response made of the node's answer)
 * and the node's half (the request's frames, the Request its handler sees, the answer's frames)
 * joined by two in-memory sockets that deliver each write in a later microtask, as a read would.
 * The node's handler answers a small JSON body as the node's routes do, and its token check is
 * a resolved promise (as the remembered token's is). Prints µs of CPU per request, median of
 * `--rounds`:
 * a steady figure for comparing changes on a machine whose other load makes wall-clock rates
 * swing (scripts/bench/hub_tunnel_cpu.ts gives the whole processes' CPU).
 *
 * `deno run -A scripts/bench/hub_tunnel_js.ts [--requests 50000] [--rounds 5]`
 *
 * @module
 */
import process from "node:process";
import { parseArgs } from "node:util";
import { nodeTunnel } from "../../src/hub_client/tunnel_requests.ts";
import type { Identity } from "../../src/identity/identity.ts";
import { MuxRequests } from "../../src/tunnel/mux_requests.ts";
import type { TunnelSocket } from "../../src/tunnel/raw_socket.ts";
import { forwardedHeaders } from "../../src/tunnel/routing.ts";
import { StreamMux } from "../../src/tunnel/stream_mux.ts";
import {
  FrameBatcher,
  receiveFrames,
  TUNNEL_SESSION,
  type WireResponse,
} from "../../src/tunnel/wire_frames.ts";

/** Requests in flight at once (wrk -c50). */
const CONCURRENCY = 50;

/** A socket whose writes arrive at `deliver` in a later microtask, joined per turn. */
function memorySocket(deliver: (bytes: Uint8Array) => void, joins: boolean): TunnelSocket {
  const socket = {
    readyState: WebSocket.OPEN,
    protocol: "edgenode-tunnel.3",
    joinsWrites: joins,
    send(data: string | Uint8Array) {
      if (typeof data === "string") throw new TypeError("frames only");
      // The bytes are read later, as a socket's peer would: a copy of what was sent.
      const copy = data.slice();
      queueMicrotask(() => deliver(copy));
    },
    close() {},
  };
  return socket as unknown as TunnelSocket;
}

/** One hub and one node joined in memory; `request()` sends a GET through them. */
function tunnelInMemory() {
  let toNode: (bytes: Uint8Array) => void = () => {};
  let toHub: (bytes: Uint8Array) => void = () => {};
  const hubMux = new StreamMux(
    new FrameBatcher(memorySocket((bytes) => toNode(bytes), true)).send,
    TUNNEL_SESSION,
  );
  const requests = new MuxRequests(hubMux);
  const answer = JSON.stringify({ data: { id: "0f".repeat(28) } });
  const answerHeaders = {
    "Content-Type": "application/json",
    "Access-Control-Allow-Origin": "*",
  };
  const node = nodeTunnel(memorySocket((bytes) => toHub(bytes), true), {
    identity: { checkAccountToken: () => Promise.resolve({}) } as unknown as Identity,
    port: () => 8080,
    serve: (request) => {
      // What a route reads of a request before it answers.
      void request.headers.get("authorization");
      new URL(request.url).searchParams.get("ping");
      return Promise.resolve(new Response(answer, { headers: answerHeaders }));
    },
  });
  toNode = (bytes) => node.receive(bytes);
  const frames = {
    head: (head: unknown) => requests.onResponse(head as WireResponse),
    data: (stream: number, bytes: Uint8Array) => hubMux.onBody(stream, bytes),
    control: (message: Parameters<StreamMux["onControl"]>[0]) => hubMux.onControl(message),
  };
  toHub = (bytes) => receiveFrames(bytes, "res", frames);
  const clientHeaders = {
    "host": "127.0.0.1:8090",
    "authorization": `Bearer ${"e".repeat(420)}`,
    "x-edge-port": "8080",
    "x-edge-routing": "r".repeat(120),
  };
  return async () => {
    // What the hub's handler has: the client's Request (Deno.serve builds it) and its headers.
    const request = new Request("http://127.0.0.1:8090/mds/v1/nodes?ping=true", {
      headers: clientHeaders,
    });
    const headers = forwardedHeaders(request.headers);
    headers.push(["x-edge-via", "hub"], ["x-edge-forwarded-for", "127.0.0.1"], [
      "x-edge-caller-account",
      "acct",
    ]);
    const response = await requests.send(
      { method: request.method, path: "/mds/v1/nodes?ping=true", port: 8080, headers },
      request.body,
    ).response;
    // Deno.serve takes the Response's bytes.
    await response.arrayBuffer();
  };
}

/** µs of this process's CPU per request of `count` requests, CONCURRENCY at a time. */
async function timeRequests(request: () => Promise<void>, count: number): Promise<number> {
  let left = count;
  // CPU time, not wall-clock: other processes' load does not count.
  const start = process.cpuUsage();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (left-- > 0) await request();
    }),
  );
  const used = process.cpuUsage(start);
  return (used.user + used.system) / count;
}

if (import.meta.main) {
  const { values: args } = parseArgs({
    args: Deno.args,
    options: { requests: { type: "string" }, rounds: { type: "string" } },
  });
  const count = Number(args.requests ?? 50_000);
  const request = tunnelInMemory();
  await timeRequests(request, count / 5);
  const times: number[] = [];
  for (let i = 0; i < Number(args.rounds ?? 5); i++) times.push(await timeRequests(request, count));
  times.sort((a, b) => a - b);
  console.log(
    `tunnel JS (hub + node halves, in memory): ${times[times.length >> 1].toFixed(2)} µs per ` +
      `request (rounds: ${times.map((t) => t.toFixed(2)).join(", ")})`,
  );
}
