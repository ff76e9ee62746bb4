/**
 * A multicast DNS socket over `node:dgram` (stable in Deno), with dns-packet as the wire codec.
 *
 * Why not the `multicast-dns` package (which wraps the same codec): it sends on one interface
 * only (it sets the multicast interface once), binds to the interface address when given one
 * (so that multicast packets never arrive on Linux), and polls the interface list every 5 s. A
 * node must announce on every interface it serves, so it sets the outgoing interface before each
 * send; one socket bound to `0.0.0.0:<port>` joins the group on every interface.
 *
 * @module
 */
import dgram from "node:dgram";
import dnsPacket from "dns-packet";
import { ConfigError } from "../config/config_error.ts";

/** The IPv4 mDNS group (RFC 6762 §3). */
export const MDNS_GROUP = "224.0.0.251";

/** Where a packet came from. */
export interface Sender {
  address: string;
  port: number;
}

/** A decoded packet and its sender. */
export type PacketListener = (packet: dnsPacket.Packet, from: Sender) => void;

/** One UDP socket joined to the mDNS group on a set of interface addresses. */
export class MdnsSocket {
  readonly #socket: dgram.Socket;
  readonly #interfaces: string[];
  readonly port: number;
  #closed = false;
  /** Failures of multicast() already logged. */
  readonly #warned = new Set<string>();
  /** Multicasts one after another: each sets the socket's outgoing interface. */
  #queue: Promise<void> = Promise.resolve();

  private constructor(socket: dgram.Socket, interfaces: string[], port: number) {
    this.#socket = socket;
    this.#interfaces = interfaces;
    this.port = port;
  }

  /**
   * Binds `0.0.0.0:port` (shared with other responders), joins the group on each address and
   * checks that each can send. Throws, the socket closed, when none can: what failed first and
   * why (a machine without multicast, a port held by another program, an emulator whose
   * setsockopt refuses IP_MULTICAST_IF with EINVAL).
   */
  static async open(
    port: number,
    interfaces: string[],
    onPacket: PacketListener,
    createSocket: (options: dgram.SocketOptions) => dgram.Socket = dgram.createSocket,
  ): Promise<MdnsSocket> {
    const socket = createSocket({ type: "udp4", reuseAddr: true });
    try {
      const bound = Promise.withResolvers<void>();
      socket.once("error", bound.reject);
      socket.bind(port, "0.0.0.0", () => bound.resolve());
      await bound.promise;
      socket.removeListener("error", bound.reject);
      const usable = joinedInterfaces(socket, interfaces);
      socket.setMulticastTTL(255);
      // Other nodes on this machine (and tests) must hear our packets.
      socket.setMulticastLoopback(true);
      socket.on("error", (error) => console.warn(`mDNS socket: ${error.message}`));
      socket.on("message", (message: Uint8Array, rinfo: dgram.RemoteInfo) => {
        let packet: dnsPacket.Packet;
        try {
          packet = dnsPacket.decode(message as never);
        } catch {
          return; // Not DNS, or truncated: other traffic on the port is none of ours.
        }
        onPacket(packet, { address: rinfo.address, port: rinfo.port });
      });
      return new MdnsSocket(socket, usable, port);
    } catch (error) {
      try {
        socket.close();
      } catch {
        // Never bound, or closed already.
      }
      throw error;
    }
  }

  /** Sends a packet to the group on every joined interface; never rejects (failures logged). */
  multicast(packet: dnsPacket.Packet): Promise<void> {
    const bytes = dnsPacket.encode(packet);
    this.#queue = this.#queue.then(async () => {
      for (const address of this.#interfaces) {
        if (this.#closed) return;
        try {
          this.#socket.setMulticastInterface(address);
        } catch (error) {
          // The interface went away since open(): said once, and its turn skipped.
          this.#warnOnce(`mDNS: cannot send on ${address}: ${(error as Error).message}`);
          continue;
        }
        await this.#send(bytes, this.port, MDNS_GROUP);
      }
    });
    return this.#queue;
  }

  #warnOnce(message: string): void {
    if (this.#warned.has(message)) return;
    this.#warned.add(message);
    console.warn(message);
  }

  /** Sends a packet to one host (legacy unicast answers). */
  async unicast(packet: dnsPacket.Packet, to: Sender): Promise<void> {
    await this.#send(dnsPacket.encode(packet), to.port, to.address);
  }

  #send(bytes: Uint8Array, port: number, address: string): Promise<void> {
    if (this.#closed) return Promise.resolve();
    return new Promise((resolve) => {
      try {
        this.#socket.send(bytes, port, address, (error) => {
          if (error) console.warn(`mDNS: send to ${address}:${port} failed: ${error.message}`);
          resolve();
        });
      } catch (error) {
        // Refused before sending (the socket or the destination): no later send fares better.
        this.#warnOnce(`mDNS: cannot send to ${address}:${port}: ${(error as Error).message}`);
        resolve();
      }
    });
  }

  /** Leaves the group and closes the socket. */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    return new Promise((resolve) => this.#socket.close(() => resolve()));
  }
}

/**
 * The addresses of `interfaces` where `socket` joined the group and may send to it (the
 * outgoing interface could be set); each one left out is logged. Throws when none is left.
 */
function joinedInterfaces(socket: dgram.Socket, interfaces: string[]): string[] {
  const usable: string[] = [];
  const failures: string[] = [];
  for (const address of interfaces) {
    try {
      socket.addMembership(MDNS_GROUP, address);
      socket.setMulticastInterface(address);
      usable.push(address);
    } catch (error) {
      failures.push(`${address}: ${(error as Error).message}`);
    }
  }
  if (usable.length === 0) {
    throw new Error(`cannot multicast to ${MDNS_GROUP} on ${failures.join("; ")}`);
  }
  for (const failure of failures) console.warn(`mDNS: left out ${failure}`);
  return usable;
}

/**
 * The IPv4 addresses to announce on, from names or addresses in the configuration; by default
 * every non-internal IPv4 interface, or loopback when there is none.
 */
export function interfaceAddresses(configured: string[] | undefined): string[] {
  const all = Deno.networkInterfaces().filter((i) => i.family === "IPv4");
  if (!configured || configured.length === 0) {
    const external = all.filter((i) => !i.address.startsWith("127.")).map((i) => i.address);
    return external.length > 0 ? [...new Set(external)] : ["127.0.0.1"];
  }
  const addresses = configured.flatMap((wanted) => {
    const found = all.filter((i) => i.name === wanted || i.address === wanted);
    if (found.length === 0) {
      throw new ConfigError(
        `discovery.interfaces: no IPv4 interface '${wanted}'; there are ${
          all.map((i) => `${i.name} (${i.address})`).join(", ")
        }`,
      );
    }
    return found.map((i) => i.address);
  });
  return [...new Set(addresses)];
}
