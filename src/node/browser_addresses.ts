/**
 * Where a browser can open the node: a wildcard bind (`0.0.0.0`, `::`) is no address a browser
 * can go to, so start-up names the loopback address for this machine and the LAN addresses for
 * the others.
 *
 * @example
 * ```ts
 * import { browserAddresses } from "./browser_addresses.ts";
 * const { local, lan } = browserAddresses("0.0.0.0", 8083, [
 *   { family: "IPv4", address: "192.168.1.20" },
 * ]);
 * console.log(local, lan); // http://127.0.0.1:8083 [ "http://192.168.1.20:8083" ]
 * ```
 *
 * @module
 */

/** The LAN addresses named at most: a host with many bridges would fill the screen. */
const MAX_LAN_ADDRESSES = 4;

/** An interface address, as Deno.networkInterfaces() gives it. */
export interface InterfaceAddress {
  family: "IPv4" | "IPv6";
  address: string;
}

/** Origins (`http://host:port`) a browser can open. */
export interface BrowserAddresses {
  /** The origin on this machine (or the bound address when it is a single one). */
  local: string;
  /** The origins other machines of the LAN can use (IPv4, not loopback, not link-local). */
  lan: string[];
}

const origin = (host: string, port: number) =>
  `http://${host.includes(":") ? `[${host}]` : host}:${port}`;

/** The addresses a browser can open for a node bound to `host:port`. */
export function browserAddresses(
  host: string,
  port: number,
  interfaces: InterfaceAddress[],
): BrowserAddresses {
  if (host !== "0.0.0.0" && host !== "::") return { local: origin(host, port), lan: [] };
  const lan = interfaces
    .filter((i) => i.family === "IPv4" && !/^(127\.|169\.254\.)/.test(i.address))
    .map((i) => origin(i.address, port));
  return {
    local: origin(host === "::" ? "::1" : "127.0.0.1", port),
    lan: [...new Set(lan)].slice(0, MAX_LAN_ADDRESSES),
  };
}

/** The machine's interface addresses, or none where they may not be read. */
export function interfaceAddresses(): InterfaceAddress[] {
  try {
    return Deno.networkInterfaces();
  } catch {
    return [];
  }
}

/** The start-up line naming where the dashboard at `path` opens. */
export function dashboardLine(addresses: BrowserAddresses, path: string): string {
  const lan = addresses.lan.map((o) => `${o}${path}`);
  return `dashboard at ${addresses.local}${path}` +
    (lan.length > 0 ? ` (from other machines: ${lan.join(", ")})` : "");
}
