import assert from "node:assert/strict";
import { meshAddress, type MeshCall, meshFetch } from "./mesh_fetch.ts";

Deno.test("meshAddress: <nodeId>@mmesh/<path>, with or without http://, and nothing else", () => {
  assert.deepEqual(meshAddress("abc@mmesh/c/milm/v1/chat?x=1"), {
    node: "abc",
    path: "/c/milm/v1/chat?x=1",
  });
  assert.deepEqual(meshAddress("http://abc@mmesh/p"), { node: "abc", path: "/p" });
  assert.deepEqual(meshAddress("HTTPS://abc@MMESH"), { node: "abc", path: "/" });
  assert.deepEqual(meshAddress("abc@mmesh/p#frag"), { node: "abc", path: "/p" });
  // An address smuggled after the name, a user and password, another host: no mesh URL.
  for (
    const url of [
      "abc@mmesh@127.0.0.1:8083/",
      "abc:pw@mmesh/p",
      "http://abc@mmesh.example.com/p",
      "http://127.0.0.1:8083/abc@mmesh/p",
      "@mmesh/p",
    ]
  ) {
    assert.equal(meshAddress(url), undefined, url);
  }
});

/** A node that answers a head, then `parts` every 10 ms, then ends (or fails with `failure`). */
function fakeNode(parts: string[], failure?: { message: string; kind: string; status: number }) {
  const asked: MeshCall[] = [];
  const calls = {
    call(call: MeshCall, options: { onEvent?: (value: unknown) => void; signal?: AbortSignal }) {
      asked.push(call);
      return new Promise((resolve, reject) => {
        options.signal?.addEventListener("abort", () => reject({ kind: "cancelled" }));
        if (failure) return reject(failure);
        options.onEvent!({ status: 200, statusText: "OK", headers: [["x-from", "b"]] });
        parts.forEach((part, i) =>
          setTimeout(
            () => options.onEvent!({ chunk: new TextEncoder().encode(part).toBase64() }),
            10 * (i + 1),
          )
        );
        setTimeout(resolve, 10 * (parts.length + 1));
      });
    },
  };
  return { calls, asked };
}

Deno.test("meshFetch: the caller's request goes as is; the answer streams in its parts", async () => {
  const { calls, asked } = fakeNode(["one", "two"]);
  const response = await meshFetch(
    calls,
    { node: "b", path: "/x?y=1" },
    { method: "POST", headers: { "x-trace": "t" }, body: "hello" },
    {},
    5000,
  );
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("x-from"), "b");
  assert.equal(await response.text(), "onetwo");
  assert.equal(asked[0].method, "POST");
  assert.equal(asked[0].path, "/x?y=1");
  assert.deepEqual(asked[0].headers.find(([name]) => name === "x-trace"), ["x-trace", "t"]);
  assert.equal(atob(asked[0].data!), "hello");
});

Deno.test("meshFetch: an unknown node is a 404 in the reference's shape; others throw", async () => {
  const unknown = fakeNode([], { message: "Cannot find node z", kind: "not_found", status: 404 });
  const response = await meshFetch(unknown.calls, { node: "z", path: "/" }, undefined, {}, 5000);
  assert.equal(response.status, 404);
  assert.deepEqual(await response.json(), { message: "Cannot find node z", statusCode: 404 });
  // A refusal of the node addressed (not that node's address, no token) is an answer too.
  const forbidden = fakeNode([], { message: "not that node's", kind: "forbidden", status: 403 });
  const answered = await meshFetch(forbidden.calls, { node: "z", path: "/" }, undefined, {}, 5000);
  assert.equal(answered.status, 403);
  assert.deepEqual(await answered.json(), { message: "not that node's", statusCode: 403 });
  const refused = fakeNode([], { message: "no answer", kind: "upstream_failed", status: 502 });
  await assert.rejects(
    meshFetch(refused.calls, { node: "z", path: "/" }, undefined, {}, 5000),
    { name: "TypeError", message: "no answer" },
  );
  await assert.rejects(
    meshFetch(refused.calls, { node: "z", path: "/" }, undefined, { saveTo: "f" }, 5000),
    /outputFile is not available/,
  );
});

Deno.test("meshFetch: the time without data (idleMs) and in all (timeoutMs) cut the answer", async () => {
  const slow = fakeNode(["one", "", "", "", "", "", "", "", "", "two"]);
  const idle = await meshFetch(
    slow.calls,
    { node: "b", path: "/" },
    undefined,
    { idleMs: 500 },
    5000,
  );
  assert.equal(await idle.text(), "onetwo", "parts 10 ms apart are in time");
  const late = fakeNode(Array.from({ length: 30 }, () => "x"));
  const total = await meshFetch(late.calls, { node: "b", path: "/" }, undefined, {}, 100);
  await assert.rejects(total.text(), /timed out \(no end within 100 ms\)/);
});

/** A node that redirects as `routes` say (path → status and Location), else answers "ok". */
function redirectingNode(routes: Record<string, [number, string]>) {
  const asked: MeshCall[] = [];
  const calls = {
    call(call: MeshCall, options: { onEvent?: (value: unknown) => void }) {
      asked.push(call);
      const route = routes[call.path];
      options.onEvent!(
        route
          ? { status: route[0], statusText: "", headers: [["location", route[1]]] }
          : { status: 200, statusText: "OK", headers: [] },
      );
      if (!route) options.onEvent!({ chunk: new TextEncoder().encode("ok").toBase64() });
      return Promise.resolve(null);
    },
  };
  return { calls, asked };
}

Deno.test("meshFetch: a redirect to a path stays on that node; one elsewhere goes by the policy", async () => {
  const node = redirectingNode({
    "/a": [307, "b?x=1"],
    "/b?x=1": [303, "/c"],
    "/out": [302, "http://127.0.0.1:22/"],
  });
  const answer = await meshFetch(
    node.calls,
    { node: "n", path: "/a" },
    {
      method: "POST",
      body: "hi",
    },
    {},
    5000,
  );
  assert.equal(await answer.text(), "ok");
  assert.deepEqual(node.asked.map((c) => [c.node, c.method, c.path, c.data]), [
    ["n", "POST", "/a", btoa("hi")],
    ["n", "POST", "/b?x=1", btoa("hi")],
    ["n", "GET", "/c", undefined],
  ]);

  const elsewhere: string[] = [];
  const sentOut: [string, string][][] = [];
  const refused = await meshFetch(
    node.calls,
    { node: "n", path: "/out" },
    {
      headers: {
        authorization: "bearer 1234",
        "x-edge-authorization": "Bearer account-token",
        cookie: "a=b",
        "x-trace": "t",
      },
    },
    {},
    5000,
    (input, init) => {
      elsewhere.push(String(input));
      sentOut.push([...new Headers(init?.headers)]);
      return Promise.resolve(new Response("refused by the policy", { status: 599 }));
    },
  );
  assert.deepEqual(elsewhere, ["http://127.0.0.1:22/"]);
  // The caller's credentials stay in the mesh; other headers go on.
  assert.deepEqual(sentOut, [[["x-trace", "t"]]]);
  assert.equal(refused.status, 599);

  const manual = await meshFetch(
    node.calls,
    { node: "n", path: "/out" },
    {
      redirect: "manual",
    },
    {},
    5000,
  );
  assert.equal(manual.status, 302);
  assert.equal(manual.headers.get("location"), "http://127.0.0.1:22/");
});

Deno.test("meshFetch: redirects share the request's time limit", async () => {
  // Each hop answers after 40 ms with a redirect to the next path, forever.
  let hops = 0;
  const calls = {
    call(call: MeshCall, options: { onEvent?: (value: unknown) => void; signal?: AbortSignal }) {
      hops++;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          options.onEvent!({
            status: 307,
            statusText: "",
            headers: [["location", `${call.path}x`]],
          });
          resolve(null);
        }, 40);
        options.signal?.addEventListener("abort", () => {
          clearTimeout(timer);
          reject({ message: "cancelled", kind: "cancelled", status: 499 });
        });
      });
    },
  };
  const started = Date.now();
  await assert.rejects(
    meshFetch(calls, { node: "n", path: "/r" }, undefined, {}, 150),
    /timed out/,
  );
  // Ten hops of 40 ms would be 440 ms with a limit per hop; one limit ends it near 150 ms.
  assert.ok(hops <= 5, `${hops} hops`);
  assert.ok(Date.now() - started < 400, `${Date.now() - started} ms`);
});
