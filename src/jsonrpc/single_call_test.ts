import assert from "node:assert/strict";
import { singleCall } from "./single_call.ts";

const methods = new Set(["getMe", "echo"]);

Deno.test("singleCall: takes a valid single call of a known method, leaves the rest", () => {
  const taken: [string, unknown][] = [
    [`{"jsonrpc":"2.0","id":1,"method":"getMe"}`, { id: 1, method: "getMe", params: undefined }],
    [`{"jsonrpc":"2.0","method":"getMe","params":[""]}`, {
      id: null,
      method: "getMe",
      params: [""],
    }],
    [`{"jsonrpc":"2.0","id":"x","method":"echo","params":{"token":"t"}}`, {
      id: "x",
      method: "echo",
      params: { token: "t" },
    }],
  ];
  for (const [text, call] of taken) assert.deepEqual(singleCall(text, methods), call, text);
  const left = [
    `[{"jsonrpc":"2.0","id":1,"method":"getMe"}]`,
    `{"jsonrpc":"2.0","id":1,"method":"nope"}`,
    `{"jsonrpc":"2.0","id":12345678901234567890,"method":"getMe"}`,
    `{"jsonrpc":"2.0","id":true,"method":"getMe"}`,
    `{"jsonrpc":"2.0","id":1,"method":"getMe","params":null}`,
    `{"jsonrpc":"2.0","id":1,"method":"getMe","params":[{"id":1}]}`,
    `{"jsonrpc":"2.0","id":1,"method":"getMe","result":1}`,
    `{"jsonrpc":"1.0","id":1,"method":"getMe"}`,
    `{"jsonrpc":"2.0","id":1,"method":"getMe"`,
  ];
  for (const text of left) assert.equal(singleCall(text, methods), undefined, text);
});
