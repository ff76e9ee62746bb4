import assert from "node:assert/strict";
import { browserAddresses, dashboardLine } from "./browser_addresses.ts";

const INTERFACES = [
  { family: "IPv4", address: "127.0.0.1" },
  { family: "IPv4", address: "192.168.1.20" },
  { family: "IPv6", address: "fe80::1" },
  { family: "IPv4", address: "169.254.3.4" },
  { family: "IPv4", address: "10.0.0.7" },
] as const;

const cases: [string, { host: string; want: string }][] = [
  ["a wildcard bind: loopback, then the LAN", {
    host: "0.0.0.0",
    want: "dashboard at http://127.0.0.1:8083/ (from other machines: " +
      "http://192.168.1.20:8083/, http://10.0.0.7:8083/)",
  }],
  ["an IPv6 wildcard: the IPv6 loopback", {
    host: "::",
    want: "dashboard at http://[::1]:8083/ (from other machines: " +
      "http://192.168.1.20:8083/, http://10.0.0.7:8083/)",
  }],
  ["one address: that one", { host: "127.0.0.1", want: "dashboard at http://127.0.0.1:8083/" }],
  ["an IPv6 address: in brackets", {
    host: "fd00::2",
    want: "dashboard at http://[fd00::2]:8083/",
  }],
];

for (const [name, { host, want }] of cases) {
  Deno.test(`dashboardLine: ${name}`, () => {
    assert.equal(dashboardLine(browserAddresses(host, 8083, [...INTERFACES]), "/"), want);
  });
}

Deno.test("browserAddresses: no wildcard address and at most four LAN addresses", () => {
  const many = Array.from(
    { length: 9 },
    (_, i) => ({ family: "IPv4" as const, address: `10.0.0.${i}` }),
  );
  const { local, lan } = browserAddresses("0.0.0.0", 80, many);
  assert.equal(local, "http://127.0.0.1:80");
  assert.equal(lan.length, 4);
  assert.ok(!lan.some((o) => o.startsWith("http://0.0.0.0")));
});
