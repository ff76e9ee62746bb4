import assert from "node:assert/strict";
import type { NetworkPolicy } from "../network_policy.ts";
import { serveOutbound } from "./outbound_relay.ts";
import type { StorageFiles } from "./storage_files.ts";

/**
 * A worker that speaks the relay's protocol itself (it replaced MessagePort.prototype.postMessage
 * and took the port): one id sent again and again, requests cancelled before they answer, and a
 * deadline far past the execution time. None of it holds more than the cap's sockets.
 */
Deno.test("the outbound cap holds against a worker that forges the protocol", async () => {
  let pending = 0;
  const hung: PromiseWithResolvers<Response>[] = [];
  await using server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, () => {
    pending++;
    const answer = Promise.withResolvers<Response>();
    hung.push(answer);
    return answer.promise;
  });
  const url = `http://127.0.0.1:${server.addr.port}/`;
  const { port1, port2 } = new MessageChannel();
  const policy = { check: () => Promise.resolve() } as unknown as NetworkPolicy;
  const relay = serveOutbound(port1, {} as StorageFiles, policy, {
    requests: 2,
    bodyBytes: 1e6,
    deadlineMs: 400,
  });
  const errors: string[] = [];
  port2.onmessage = (event) => {
    if (event.data.t === "error") errors.push(event.data.message);
  };
  const fetchCall = (id: number) => ({
    t: "fetch",
    id,
    url,
    method: "GET",
    headers: [],
    body: null,
    timeoutMs: 3_600_000,
  });
  for (let i = 0; i < 10; i++) port2.postMessage(fetchCall(1));
  for (let id = 100; id < 110; id++) {
    port2.postMessage(fetchCall(id));
    port2.postMessage({ t: "cancel", id });
  }
  await new Promise((resolve) => setTimeout(resolve, 250));
  try {
    assert.ok(pending <= 2, `the server saw ${pending} requests at once, over the cap of 2`);
    assert.ok(relay.inFlight() <= 2);
    assert.ok(errors.some((message) => /request 1 is open already/.test(message)), `${errors}`);
    // The deadline asked (an hour) is cut to the relay's: every place is free after it.
    await new Promise((resolve) => setTimeout(resolve, 600));
    assert.equal(relay.inFlight(), 0);
  } finally {
    relay.close();
    port2.close();
    for (const answer of hung) answer.resolve(new Response("late"));
  }
});
