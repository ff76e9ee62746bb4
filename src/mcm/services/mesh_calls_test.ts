import assert from "node:assert/strict";
import type { NodeDescription } from "../../../gen/mds/validators.ts";
import { NotFound } from "../../errors/mod.ts";
import { meshTarget } from "./mesh_calls.ts";

const B = "b".repeat(56);

function view(addresses: { type: string; href: string }[]) {
  const node = {
    id: B,
    addresses: addresses.map(({ type, href }) => ({ type, url: { href } })),
  } as unknown as NodeDescription;
  return { members: () => [node] };
}

Deno.test("meshTarget: the node's local address and the path, inside that origin", () => {
  const mesh = view([
    { type: "public", href: "http://203.0.113.9:8083" },
    { type: "local", href: "http://192.168.1.20:8083/" },
  ]);
  assert.equal(
    meshTarget(mesh, B, "c/milm/v1/chat/completions?x=1").href,
    "http://192.168.1.20:8083/c/milm/v1/chat/completions?x=1",
  );
  assert.equal(meshTarget(mesh, B, "/p").href, "http://192.168.1.20:8083/p");
  // A path that names another host stays a path of this node.
  for (const path of ["//169.254.169.254/x", "/../../x", "@127.0.0.1:22/", "/%2e%2e/x"]) {
    assert.equal(meshTarget(mesh, B, path).origin, "http://192.168.1.20:8083", path);
  }
});

Deno.test("meshTarget: an unknown node, or one without a local address, is not found", () => {
  assert.throws(
    () => meshTarget(view([]), "c".repeat(56), "/"),
    (error: Error) => error instanceof NotFound && /Cannot find node c{56}/.test(error.message),
  );
  assert.throws(
    () => meshTarget(view([{ type: "public", href: "http://203.0.113.9:8083" }]), B, "/"),
    NotFound,
  );
});
