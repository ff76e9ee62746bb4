/**
 * Slow or odd hardware degrades, never dies (issue 38): a container's code may take up to
 * mcm.loadTimeoutSeconds to load, and a node whose multicast socket cannot be set up (as under
 * qemu user-mode emulation, where setsockopt(IP_MULTICAST_IF) fails with EINVAL) serves on
 * without link-local discovery and says why once.
 */
import assert from "node:assert/strict";
import dgram from "node:dgram";
import { expectError } from "../testing/contract.ts";
import { rpc } from "../testing/identity.ts";
import { postContainer, scriptImage, startContainer, uploadImage } from "../testing/mcm.ts";
import { startTestNode, type TestNode, waitFor } from "../testing/node.ts";

const API_KEY = "a-test-key-of-enough-length";

/** A microservice whose top level keeps its thread busy for `ms` before it exports. */
function slowLoading(ms: number): string {
  return `var end = Date.now() + ${ms}; while (Date.now() < end) {}
mimikModule.exports = function (context, req, res) { res.end("loaded"); };`;
}

async function deploy(node: TestNode, name: string, script: string): Promise<Response> {
  await uploadImage(node, await scriptImage(script), `${name}.tar`);
  return await postContainer(node, { name, image: name });
}

Deno.test("mcm.loadTimeoutSeconds: code slower to load fails naming it, code within it starts, code that throws fails at once", async () => {
  await using node = await startTestNode({
    config: { apiKey: API_KEY, discovery: { mdns: false }, mcm: { loadTimeoutSeconds: 1.5 } },
  });
  let began = Date.now();
  await expectError(
    await deploy(node, "slow", slowLoading(4000)),
    422,
    /the code did not load within 1\.5 s \(mcm\.loadTimeoutSeconds\)/,
  );
  const waited = Date.now() - began;
  assert.ok(waited >= 1400 && waited < 3500, `the limit was waited for (${waited} ms)`);

  await uploadImage(node, await scriptImage(slowLoading(700)), "within.tar");
  const within = await startContainer(node, { name: "within", image: "within" });
  const served = await fetch(`${node.url}${within.env["MCM.BASE_API_PATH"]}/`);
  assert.equal(await served.text(), "loaded");

  // A bundle that throws while loading is not waited for: its error comes at once.
  began = Date.now();
  await expectError(
    await deploy(node, "broken", 'throw new Error("broken at load");'),
    422,
    /broken at load/,
  );
  assert.ok(Date.now() - began < 1400, "a throwing bundle fails before the limit");
});

/**
 * Builds an LD_PRELOAD library whose setsockopt refuses IP_MULTICAST_IF with EINVAL, as qemu's
 * user-mode emulation does for an arm64 node; undefined without a C compiler.
 */
async function einvalShim(dir: string): Promise<string | undefined> {
  const source = `${dir}/einval.c`;
  await Deno.writeTextFile(
    source,
    `#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
int setsockopt(int fd, int level, int name, const void *value, socklen_t length) {
  static int (*real)(int, int, int, const void *, socklen_t);
  if (level == IPPROTO_IP && name == IP_MULTICAST_IF) { errno = EINVAL; return -1; }
  if (!real) real = dlsym(RTLD_NEXT, "setsockopt");
  return real(fd, level, name, value, length);
}
`,
  );
  try {
    const built = await new Deno.Command("cc", {
      args: ["-shared", "-fPIC", "-o", `${dir}/einval.so`, source, "-ldl"],
      stdout: "null",
      stderr: "piped",
    }).output();
    return built.success ? `${dir}/einval.so` : undefined;
  } catch {
    return undefined;
  }
}

/** A UDP port held without SO_REUSEADDR, so that the node's mDNS socket cannot bind it. */
async function heldUdpPort(): Promise<{ port: number; socket: dgram.Socket }> {
  const socket = dgram.createSocket({ type: "udp4", reuseAddr: false });
  const bound = Promise.withResolvers<void>();
  socket.once("error", bound.reject);
  socket.bind(0, "0.0.0.0", () => bound.resolve());
  await bound.promise;
  return { port: socket.address().port, socket };
}

/** The node answers its registry, JSON-RPC and insight, listing `expected` node ids only. */
async function servesWithout(node: TestNode, expected: string[]): Promise<void> {
  const models = await fetch(`${node.storeUrl}/models`, { headers: node.auth() });
  const text = await models.text();
  assert.equal(models.status, 200, text);
  const me = await rpc(node, "getMe", [""]);
  assert.match(me.nodeId, /^[0-9a-f]{56}$/);
  const listed = await fetch(`${node.url}/mesh/insight/v1/nodes?type=linkLocal`, {
    headers: node.auth(),
  });
  const ids = (await listed.json()).data.map((n: { id: string }) => n.id).sort();
  assert.deepEqual(ids, [me.nodeId, ...expected].sort());
}

/** How many times `text` occurs in the node's output. */
function count(node: TestNode, text: string): number {
  return node.output().split(text).length - 1;
}

const UNAVAILABLE = "discovery: multicast DNS is unavailable";

Deno.test("an outgoing multicast interface refused with EINVAL (qemu) leaves the node serving without mDNS, said once", async () => {
  const dir = await Deno.makeTempDir({ prefix: "edgenode-einval-" });
  try {
    const shim = await einvalShim(dir);
    if (!shim) {
      console.log("skipped: no C compiler (cc) to build the LD_PRELOAD library");
      return;
    }
    const { port, socket } = await heldUdpPort();
    socket.close(); // A free port of our own: no other test's traffic.
    await using node = await startTestNode({
      config: { apiKey: API_KEY, discovery: { mdns: true, port, announceSeconds: 0.5 } },
      env: { LD_PRELOAD: shim },
    });
    await servesWithout(node, []);
    // Announcements are due every 0.5 s: none is tried, so nothing more is said.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.equal(count(node, UNAVAILABLE), 1, node.output());
    assert.match(node.output(), /setMulticastInterface EINVAL/);
    assert.match(node.output(), /discovery\.mdns to false/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an mDNS port that cannot be bound leaves the node serving; its static peers are still listed", async () => {
  const { port, socket } = await heldUdpPort();
  try {
    await using peer = await startTestNode({
      config: { apiKey: API_KEY, discovery: { mdns: false } },
    });
    const peerId = (await rpc(peer, "getMe", [""])).nodeId;
    await using node = await startTestNode({
      config: { apiKey: API_KEY, discovery: { mdns: true, port, peers: [peer.url] } },
    });
    assert.equal(count(node, UNAVAILABLE), 1, node.output());
    assert.match(node.output(), /EADDRINUSE/);
    await waitFor(async () => {
      try {
        await servesWithout(node, [peerId]);
        return true;
      } catch {
        return false;
      }
    }, "the static peer listed");
    await servesWithout(node, [peerId]);
  } finally {
    socket.close();
  }
});
