import assert from "node:assert/strict";
import dgram from "node:dgram";
import { MdnsSocket } from "./mdns_socket.ts";

/** A UDP port free now (the sockets bind it with SO_REUSEADDR, as mDNS responders do). */
async function freePort(): Promise<number> {
  const socket = dgram.createSocket("udp4");
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(resolve));
  return port;
}

/** The warnings printed while `run` runs. */
async function warnings(run: () => Promise<void>): Promise<string[]> {
  const said: string[] = [];
  const warn = console.warn;
  console.warn = (...parts: unknown[]) => said.push(parts.join(" "));
  try {
    await run();
  } finally {
    console.warn = warn;
  }
  return said;
}

/**
 * Real sockets whose outgoing interface cannot be set on the addresses `refused` says (as under
 * qemu: EINVAL); `sockets` collects them.
 */
function refusing(refused: (address: string) => boolean, sockets: dgram.Socket[]) {
  return (options: dgram.SocketOptions) => {
    const socket = dgram.createSocket(options);
    const set = socket.setMulticastInterface.bind(socket);
    socket.setMulticastInterface = (address: string) => {
      if (refused(address)) throw new Error("setMulticastInterface EINVAL");
      set(address);
    };
    sockets.push(socket);
    return socket;
  };
}

Deno.test("MdnsSocket.open: an outgoing interface that cannot be set is a clear error, the socket closed", async () => {
  const sockets: dgram.Socket[] = [];
  await assert.rejects(
    MdnsSocket.open(0, ["127.0.0.1"], () => {}, refusing(() => true, sockets)),
    /cannot multicast to 224\.0\.0\.251 on 127\.0\.0\.1: setMulticastInterface EINVAL/,
  );
  assert.equal(sockets.length, 1);
  assert.throws(() => sockets[0].address(), "closed");
});

Deno.test("MdnsSocket: a multicast that fails later is said once and never rejects", async () => {
  let refuse = false;
  const sockets: dgram.Socket[] = [];
  const socket = await MdnsSocket.open(
    await freePort(),
    ["127.0.0.1"],
    () => {},
    refusing(() => refuse, sockets),
  );
  try {
    refuse = true;
    const said = await warnings(async () => {
      for (let i = 0; i < 3; i++) await socket.multicast({ type: "query", questions: [] });
    });
    assert.deepEqual(said, ["mDNS: cannot send on 127.0.0.1: setMulticastInterface EINVAL"]);
    refuse = false;
    await socket.multicast({ type: "query", questions: [] });
  } finally {
    await socket.close();
  }
});

Deno.test("MdnsSocket.open: an interface that cannot send is left out, said once; the others serve", async () => {
  const sockets: dgram.Socket[] = [];
  const create = refusing((address) => address === "192.0.2.1", sockets);
  const port = await freePort();
  let socket: MdnsSocket | undefined;
  const said = await warnings(async () => {
    socket = await MdnsSocket.open(port, ["192.0.2.1", "127.0.0.1"], () => {}, (options) => {
      const made = create(options);
      const join = made.addMembership.bind(made);
      // A documentation address stands for a second interface that joins but cannot send.
      made.addMembership = (group, address) => address === "192.0.2.1" || join(group, address);
      return made;
    });
  });
  try {
    assert.deepEqual(said, ["mDNS: left out 192.0.2.1: setMulticastInterface EINVAL"]);
    const quiet = await warnings(() => socket!.multicast({ type: "query", questions: [] }));
    assert.deepEqual(quiet, [], "only 127.0.0.1 is sent on");
  } finally {
    await socket?.close();
  }
});
