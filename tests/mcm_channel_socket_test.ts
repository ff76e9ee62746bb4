/**
 * The channel of a container in its client's process (mcm.containerProcess `per-client`) goes
 * over a unix socket the node opens for that process, which each of its workers connects to
 * (src/mcm/runtime/channel_socket.ts), not through the process's main thread. These tests hold
 * the socket to the relayed path's answers (a node whose socket path would be too long relays,
 * as before) and to a process of its own (stdio), and attack the socket from outside: a wrong
 * token, garbage, a flood and silent connections harm no container.
 *
 * @module
 */
import assert from "node:assert/strict";
import { containerProcesses } from "../testing/container_processes.ts";
import { containerRecord, deployScript } from "../testing/mcm.ts";
import { startTestNode, type TestNode } from "../testing/node.ts";

const CONFIG = { apiKey: "a-test-key-of-enough-length", discovery: { mdns: false } };

/**
 * Answers with what it got (method, path, query, a header, the body's length and sum), a
 * status and headers of its choosing and, for /big, a body of many reads' size.
 */
const ECHO = `mimikModule.exports = { fetch: async function (request) {
  var url = new URL(request.url);
  var bytes = new Uint8Array(await request.arrayBuffer());
  var sum = 0;
  for (var i = 0; i < bytes.length; i++) sum = (sum + bytes[i] * (i % 251 + 1)) % 1000000007;
  if (url.pathname.endsWith("/big")) {
    var big = "";
    for (var j = 0; j < 20000; j++) big += "line " + j + " of a body that spans many reads\\n";
    return new Response(big, { headers: { "content-type": "text/plain", "x-lines": "20000" } });
  }
  return new Response(JSON.stringify({
    method: request.method,
    path: url.pathname,
    query: url.search,
    header: request.headers.get("x-test"),
    length: bytes.length,
    sum: sum,
  }), { status: 201, headers: { "content-type": "application/json", "x-echo": "yes" } });
} };`;

/** A request body of `size` bytes that differ from one place to the next. */
function bodyOf(size: number): Uint8Array<ArrayBuffer> {
  return Uint8Array.from({ length: size }, (_, i) => (i * 31 + 7) % 256);
}

/** What a client sees of a request's answer: status, headers but the date, and body. */
async function answer(url: string, init?: RequestInit): Promise<string> {
  const response = await fetch(url, init);
  const headers = [...response.headers].filter(([name]) => name !== "date");
  return JSON.stringify({ status: response.status, headers, body: await response.text() });
}

/** The answers of the echo service on `node` to a few requests. */
async function answers(node: TestNode): Promise<string[]> {
  const { url } = await deployScript(node, "echo", ECHO, {}, "alice");
  return [
    await answer(`${url}/a/b?c=d&e=%20f`, { headers: { "x-test": "one" } }),
    await answer(`${url}/post`, { method: "POST", body: bodyOf(300_000) }),
    await answer(`${url}/put`, { method: "PUT", body: "small", headers: { "x-test": "two" } }),
    await answer(`${url}/big`),
  ];
}

/** The socket a client's process of `node` was started with (its command line's last word). */
async function socketOf(node: TestNode): Promise<string | undefined> {
  const [process] = (await containerProcesses(node.dataDir)).filter((found) => found.group);
  assert.ok(process, "a client's process runs");
  return / group (\S+\.sock)$/.exec(process.cmdline)?.[1];
}

Deno.test("over the socket a microservice answers as relayed through its process, and as in a process of its own", async () => {
  const viaSocket = await (async () => {
    await using node = await startTestNode({ config: CONFIG });
    const found = await answers(node);
    assert.ok(await socketOf(node), "the client's process got a socket");
    return found;
  })();
  // A data directory whose socket path would pass a unix socket's 107 bytes: the main thread
  // relays, as before the socket.
  const parent = await Deno.makeTempDir({ prefix: "edgenode-relay-" });
  const relayed = await (async () => {
    const dataDir = `${parent}/${"r".repeat(90)}`;
    await Deno.mkdir(dataDir);
    await using node = await startTestNode({ dataDir, config: CONFIG });
    const found = await answers(node);
    assert.equal(await socketOf(node), undefined, "no socket: relayed");
    return found;
  })();
  await Deno.remove(parent, { recursive: true });
  const alone = await (async () => {
    await using node = await startTestNode({
      config: { ...CONFIG, mcm: { containerProcess: "per-container" } },
    });
    return await answers(node);
  })();
  assert.deepEqual(viaSocket, relayed);
  assert.deepEqual(viaSocket, alone);
  assert.match(viaSocket[1], /"length\\":300000/);
});

/**
 * Connects to `socket` from a process allowed to (this test's own flags allow no unix socket),
 * which writes `writes` (each a string, or a number: that many bytes of garbage), then holds
 * `silent` more connections open without a word for `holdMs`. Prints how many bytes the
 * socket took before it was closed on it.
 */
async function attack(socket: string, silent: number, holdMs: number): Promise<string> {
  const script = `
    const path = ${JSON.stringify(socket)};
    const held = [];
    for (let i = 0; i < ${silent}; i++) held.push(await Deno.connect({ transport: "unix", path }));
    const conn = await Deno.connect({ transport: "unix", path });
    let taken = 0;
    try {
      taken += await conn.write(new TextEncoder().encode("f".repeat(32)));
      const garbage = new Uint8Array(1 << 20).fill(0xff);
      for (let i = 0; i < 64; i++) taken += await conn.write(garbage);
    } catch { /* closed on it */ }
    await new Promise((resolve) => setTimeout(resolve, ${holdMs}));
    for (const other of held) other.close();
    console.log("taken " + taken);
  `;
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["eval", script],
    env: { NO_COLOR: "1" },
  }).output();
  const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
  assert.ok(output.success, text);
  return text;
}

Deno.test("a wrong token, garbage, a flood or silent connections on a client's socket harm no container", async () => {
  await using node = await startTestNode({ config: CONFIG });
  const first = await deployScript(node, "echo", ECHO, {}, "alice");
  const second = await deployScript(node, "echo2", ECHO, {}, "alice");
  const socket = await socketOf(node);
  assert.ok(socket, "the client's process got a socket");
  const before = await answer(`${first.url}/x`);
  // 70 silent connections: past the socket's 64 handshakes at once, held 1 s.
  const attacked = attack(socket, 70, 1000);
  // Served meanwhile, both.
  assert.equal(await answer(`${first.url}/x`), before);
  assert.equal(JSON.parse(await answer(`${second.url}/x`)).status, 201);
  const taken = Number(/taken (\d+)/.exec(await attacked)?.[1]);
  // The node closed the connection after the token it did not know: the flood of 64 MiB went
  // nowhere (what the kernel buffered before the close at most).
  assert.ok(taken < 8 * 2 ** 20, `the socket took ${taken} bytes of garbage`);
  assert.equal(await answer(`${first.url}/x`), before);
  assert.equal(JSON.parse(await answer(`${second.url}/x`)).status, 201);
  for (const { container } of [first, second]) {
    const record = await containerRecord(node, container.id);
    assert.equal(record.restarts, 0, `${container.name} went on (${record.lastError})`);
    assert.equal(record.state, "started");
  }
});

Deno.test("each client's process may reach its own socket only, and so may its workers", async () => {
  // No warm spare: the client processes found are the two clients'.
  await using node = await startTestNode({ config: { ...CONFIG, mcm: { spareContainers: 0 } } });
  await deployScript(node, "echo", ECHO, {}, "alice");
  await deployScript(node, "echo", ECHO, {}, "bob");
  const groups = (await containerProcesses(node.dataDir)).filter((found) => found.group);
  assert.equal(groups.length, 2, "one process per client");
  const sockets = groups.map((group) => / group (\S+\.sock)$/.exec(group.cmdline)?.[1]);
  assert.ok(sockets[0] && sockets[1] && sockets[0] !== sockets[1], "a socket each");
  for (const [i, group] of groups.entries()) {
    const other = sockets[1 - i]!;
    assert.ok(!group.cmdline.includes(other), `${group.pid}'s flags name only its own socket`);
    // Its read and write flags name its own socket (a unix socket needs both to connect).
    assert.match(group.cmdline, new RegExp(`--allow-read=\\S*${sockets[i]}`));
    assert.match(group.cmdline, new RegExp(`--allow-write=\\S*${sockets[i]}`));
  }
});
