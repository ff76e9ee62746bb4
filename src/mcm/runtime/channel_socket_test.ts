import assert from "node:assert/strict";
import { ChannelSocket, TOKEN_BYTES } from "./channel_socket.ts";

const encoder = new TextEncoder();

/**
 * The project's test flags allow TCP to a few hosts only, not unix sockets: the tests below
 * then run in a child `deno test` of this file allowed any network (and are ignored here).
 */
const canListen = Deno.permissions.querySync({ name: "net" }).state === "granted";

Deno.test({
  name: "the socket's tests, in a process allowed unix sockets",
  ignore: canListen,
  fn: async () => {
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "test",
        "--no-prompt",
        "--allow-read",
        "--allow-write",
        "--allow-net",
        "--allow-env",
        new URL(import.meta.url).pathname,
      ],
      env: { NO_COLOR: "1" },
    }).output();
    const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
    assert.ok(output.success, text);
    assert.match(text, /ok \| 4 passed/);
  },
});

/** A test that needs to listen on a unix socket. */
const socketTest = (name: string, fn: () => Promise<void>) =>
  Deno.test({ name, ignore: !canListen, fn });

async function withSocket(test: (socket: ChannelSocket, dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "channel-socket-" });
  const socket = ChannelSocket.open(dir);
  assert.ok(socket, "listens");
  try {
    await test(socket, dir);
  } finally {
    socket.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** Reads until the peer closes; the bytes read. */
async function readAll(conn: Deno.Conn): Promise<Uint8Array> {
  return new Uint8Array(await new Response(conn.readable).arrayBuffer());
}

socketTest(
  "a worker's connection with its token is handed over, the bytes after it intact",
  async () => {
    await withSocket(async (socket) => {
      const expected = socket.expect();
      assert.equal(expected.token.length, TOKEN_BYTES * 2);
      const worker = await Deno.connect({ transport: "unix", path: socket.path });
      await worker.write(encoder.encode(`${expected.token}after`));
      const conn = await expected.conn;
      assert.ok(conn);
      const buffer = new Uint8Array(16);
      const read = await conn.read(buffer);
      assert.equal(new TextDecoder().decode(buffer.subarray(0, read ?? 0)), "after");
      conn.close();
      worker.close();
    });
  },
);

socketTest(
  "a token connects once; a wrong one, or silence, gets the connection closed",
  async () => {
    await withSocket(async (socket) => {
      const expected = socket.expect();
      // A silent connection does not hold up the others.
      const silent = await Deno.connect({ transport: "unix", path: socket.path });
      const wrong = await Deno.connect({ transport: "unix", path: socket.path });
      await wrong.write(encoder.encode("0".repeat(TOKEN_BYTES * 2)));
      assert.equal((await readAll(wrong)).length, 0, "a wrong token is closed");
      const first = await Deno.connect({ transport: "unix", path: socket.path });
      await first.write(encoder.encode(expected.token));
      assert.ok(await expected.conn);
      const again = await Deno.connect({ transport: "unix", path: socket.path });
      await again.write(encoder.encode(expected.token));
      assert.equal((await readAll(again)).length, 0, "a token used once is closed");
      (await expected.conn)?.close();
      first.close();
      silent.close();
    });
  },
);

socketTest(
  "a cancelled expectation closes its connection; close() ends the waiting ones",
  async () => {
    await withSocket(async (socket) => {
      const cancelled = socket.expect();
      cancelled.cancel();
      assert.equal(await cancelled.conn, undefined);
      const late = await Deno.connect({ transport: "unix", path: socket.path });
      await late.write(encoder.encode(cancelled.token));
      assert.equal((await readAll(late)).length, 0, "a cancelled token is closed");

      const taken = socket.expect();
      const worker = await Deno.connect({ transport: "unix", path: socket.path });
      await worker.write(encoder.encode(taken.token));
      assert.ok(await taken.conn);
      taken.cancel();
      assert.equal((await readAll(worker)).length, 0, "its connection closes with it");

      const waiting = socket.expect();
      socket.close();
      assert.equal(await waiting.conn, undefined);
      await new Promise((resolve) => setTimeout(resolve, 50));
      await assert.rejects(Deno.lstat(socket.path), Deno.errors.NotFound);
      assert.equal(await socket.expect().conn, undefined, "closed: nothing more comes");
    });
  },
);

socketTest("no socket where its path would be too long for one: the process relays", async () => {
  const dir = await Deno.makeTempDir({ prefix: "channel-socket-" });
  try {
    const deep = `${dir}/${"d".repeat(100)}`;
    await Deno.mkdir(deep);
    assert.equal(ChannelSocket.open(deep), undefined);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
