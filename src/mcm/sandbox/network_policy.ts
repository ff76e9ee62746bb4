/**
 * Where a microservice's outbound requests may go, by the class of the address they reach
 * (`mcm.outboundNetworks`, like workerd's `allow = ["public", "private"]`). By default a
 * microservice reaches the internet and the LAN (other nodes), but not this machine's loopback,
 * link-local addresses (cloud metadata services live there) or the node's own addresses: the
 * node's API is not its to call (its own listing comes through node_calls.ts). A name is
 * checked by every address it resolves to.
 *
 * The node's addresses are those it had when the container started and those the machine has
 * at each request (an address that appears later, by DHCP, a VPN or a docker bridge, is the
 * node's as soon as it is there): the interfaces are read at every check, that is every
 * request and every redirect (a reading costs about 45 µs, against a connection's hundreds),
 * where the process may read them (--allow-sys=networkInterfaces; else the addresses given at
 * the start are all it knows). A cache would leave a new address open for its lifetime.
 *
 * @module
 */
import ipaddr from "ipaddr.js";
import type { NetworkClass } from "./channel_protocol.ts";

/** The default of mcm.outboundNetworks. */
export const DEFAULT_NETWORKS: readonly NetworkClass[] = ["public", "private"];

/** A destination the policy refuses. */
export class RefusedDestination extends Error {
  override name = "RefusedDestination";
}

const RANGE_CLASSES: Record<string, NetworkClass | "never"> = {
  unicast: "public",
  loopback: "loopback",
  unspecified: "loopback",
  linkLocal: "link-local",
  private: "private",
  uniqueLocal: "private",
  carrierGradeNat: "private",
  // Multicast, broadcast and reserved ranges are no destination for an HTTP request.
  multicast: "never",
  broadcast: "never",
  reserved: "never",
};

/** getaddrinfo, as fetch resolves; node:dns is loaded at the first name (it costs a start). */
async function resolve(host: string): Promise<{ address: string }[]> {
  const { lookup } = await import("node:dns/promises");
  return await lookup(host, { all: true, verbatim: true });
}

/** Addresses in one spelling (ipaddr.js's), invalid ones left out. */
function normalized(addresses: readonly string[]): Set<string> {
  return new Set(
    addresses.filter((a) => ipaddr.isValid(a)).map((a) => ipaddr.process(a).toString()),
  );
}

/** The machine's addresses now; empty where the process may not read them. */
export function currentAddresses(): ReadonlySet<string> {
  const allowed = Deno.permissions.querySync({ name: "sys", kind: "networkInterfaces" });
  if (allowed.state !== "granted") return new Set();
  return normalized(Deno.networkInterfaces().map((i) => i.address.split("%")[0]));
}

/** The policy of one container. */
export class NetworkPolicy {
  readonly #allowed: ReadonlySet<NetworkClass>;
  readonly #own: ReadonlySet<string>;
  readonly #live: () => ReadonlySet<string>;

  /**
   * `nodeAddresses`: the node's when the container started; `live`: the machine's now
   * (currentAddresses by default).
   */
  constructor(
    allowed: readonly NetworkClass[],
    nodeAddresses: readonly string[],
    live: () => ReadonlySet<string> = currentAddresses,
  ) {
    this.#allowed = new Set(allowed);
    this.#own = normalized(nodeAddresses);
    this.#live = live;
  }

  /** The class of an IP address; `live`: the machine's addresses now (read if not given). */
  classify(address: string, live?: ReadonlySet<string>): NetworkClass | "never" {
    const parsed = ipaddr.process(address);
    const kind = RANGE_CLASSES[parsed.range()] ?? "public";
    // Loopback stays loopback: "node" is the node's addresses on its networks.
    if (kind === "loopback") return kind;
    const spelled = parsed.toString();
    return this.#own.has(spelled) || (live ?? this.#live()).has(spelled) ? "node" : kind;
  }

  /** Refuses (RefusedDestination) a URL whose host is, or resolves to, a refused address. */
  async check(url: URL): Promise<void> {
    const host = url.hostname.replace(/^\[|\]$/g, "");
    const addresses = ipaddr.isValid(host)
      ? [host]
      : (await resolve(host)).map((entry) => entry.address);
    const live = this.#live();
    for (const address of addresses) {
      const kind = this.classify(address, live);
      if (kind === "never" || !this.#allowed.has(kind)) {
        throw new RefusedDestination(
          `${url.host} is ${
            address === host ? "" : `${address}, `
          }a ${kind} address, which microservices may not reach (mcm.outboundNetworks allows ${
            [...this.#allowed].join(", ") || "none"
          })`,
        );
      }
    }
  }
}

/** IPv4 ranges and single addresses of each class, as Deno's --deny-net takes them. */
const DENY_NET: Partial<Record<NetworkClass, string[]>> = {
  // 0.0.0.0 reaches loopback too.
  loopback: ["127.0.0.0/8", "0.0.0.0/8", "[::1]", "[::]"],
  "link-local": ["169.254.0.0/16"],
  private: ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"],
};

/**
 * The --deny-net list for a container process whose policy allows `allowed`: every refused
 * class Deno can express (IPv4 ranges, IPv6 single addresses) and the node's own addresses.
 */
export function deniedRanges(
  allowed: readonly NetworkClass[],
  nodeAddresses: readonly string[],
): string[] {
  const denied: string[] = [];
  for (const [kind, ranges] of Object.entries(DENY_NET)) {
    if (!allowed.includes(kind as NetworkClass)) denied.push(...ranges);
  }
  if (!allowed.includes("node")) {
    for (const address of nodeAddresses) {
      if (!ipaddr.isValid(address) || address.includes("%")) continue;
      const parsed = ipaddr.process(address);
      if (RANGE_CLASSES[parsed.range()] === "loopback") continue;
      // Deno takes no zone or range for IPv6; the host's own check covers those.
      if (parsed.kind() === "ipv6" && parsed.range() === "linkLocal") continue;
      denied.push(parsed.kind() === "ipv6" ? `[${parsed.toString()}]` : parsed.toString());
    }
  }
  return [...new Set(denied)];
}
