import assert from "node:assert/strict";
import { RouteTree } from "./route_tree.ts";

Deno.test("RouteTree: static before parameters, decoding, HEAD as GET, 405 and misses", () => {
  const tree = new RouteTree<string>();
  tree.add("GET", "/models", "list");
  tree.add("POST", "/models", "create");
  tree.add("GET", "/models/:id", "get");
  tree.add("DELETE", "/models/:id", "delete");
  tree.add("GET", "/models/special", "special");
  tree.add("POST", "/models/:id/upload", "upload");
  tree.add("GET", "/:client/:name/v1/info", "deep");
  const cases: [string, string, ReturnType<typeof tree.find>][] = [
    ["GET", "/models", { kind: "match", value: "list", params: {} }],
    ["GET", "/models/", { kind: "match", value: "list", params: {} }],
    ["POST", "/models", { kind: "match", value: "create", params: {} }],
    ["GET", "/models/m1", { kind: "match", value: "get", params: { id: "m1" } }],
    ["GET", "/models/a%20b", { kind: "match", value: "get", params: { id: "a b" } }],
    ["GET", "/models/%E0%A4%A", { kind: "match", value: "get", params: { id: "%E0%A4%A" } }],
    ["HEAD", "/models/m1", { kind: "match", value: "get", params: { id: "m1" } }],
    ["GET", "/models/special", { kind: "match", value: "special", params: {} }],
    ["DELETE", "/models/special", { kind: "match", value: "delete", params: { id: "special" } }],
    ["POST", "/models/m1/upload", { kind: "match", value: "upload", params: { id: "m1" } }],
    ["GET", "/models/upload", { kind: "match", value: "get", params: { id: "upload" } }],
    ["GET", "/c/n/v1/info", { kind: "match", value: "deep", params: { client: "c", name: "n" } }],
    ["PUT", "/models/m1", { kind: "method", allow: ["GET", "DELETE"], other: "get" }],
    ["GET", "/models/m1/upload", { kind: "method", allow: ["POST"], other: "upload" }],
    ["GET", "/nothing", { kind: "none" }],
    ["GET", "/models/m1/upload/more", { kind: "none" }],
    ["GET", "/", { kind: "none" }],
  ];
  for (const [method, path, want] of cases) {
    assert.deepEqual(tree.find(method, path), want, `${method} ${path}`);
  }
});

Deno.test("RouteTree: a method added twice and clashing parameter names are refused", () => {
  const tree = new RouteTree<number>();
  tree.add("GET", "/a/:id", 1);
  assert.throws(() => tree.add("GET", "/a/:id", 2), /added twice/);
  assert.throws(() => tree.add("PUT", "/a/:name", 3), /clashes/);
});
