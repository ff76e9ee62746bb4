import assert from "node:assert/strict";
import { localAddresses, selfDescriber } from "./self_description.ts";

Deno.test("localAddresses: the listening host as a local URL, IPv6 in brackets", () => {
  assert.deepEqual(localAddresses("192.168.1.20", 8083), [
    { type: "local", url: { href: "http://192.168.1.20:8083" } },
  ]);
  assert.deepEqual(localAddresses("fe80::1", 8083), [
    { type: "local", url: { href: "http://[fe80::1]:8083" } },
  ]);
});

Deno.test("selfDescriber: the node as it is at each call (the account can change)", () => {
  const identity = { nodeId: "0f".repeat(28), accountId: "", name: "pi3-0f0f", version: "0.1.0" };
  const characteristics = [{ name: "os", value: Deno.build.os }];
  const addresses = () => [{ type: "local", url: { href: "http://127.0.0.1:8083" } }];
  const describe = selfDescriber(identity, characteristics, addresses);
  assert.deepEqual(describe(), {
    id: identity.nodeId,
    accountId: "",
    name: "pi3-0f0f",
    os: Deno.build.os,
    version: "0.1.0",
    addresses: addresses(),
    services: [],
    characteristics,
  });
  identity.accountId = "acct-1";
  assert.equal(describe().accountId, "acct-1");
});

Deno.test("selfDescriber: models and backend only while there are models", () => {
  const identity = { nodeId: "0f".repeat(28), accountId: "", name: "n", version: "0.1.0" };
  const addresses = () => [];
  const adverts = { models: [] as { id: string; kind: string; ready: boolean; loaded: boolean }[] };
  const describe = selfDescriber(
    identity,
    [],
    addresses,
    () => [],
    () => ({ ...adverts, backend: "cpu" }),
  );
  assert.equal("models" in describe(), false);
  assert.equal("backend" in describe(), false);
  adverts.models = [{ id: "m", kind: "llm", ready: false, loaded: false }];
  assert.deepEqual(describe().models, adverts.models);
  assert.equal(describe().backend, "cpu");
});
