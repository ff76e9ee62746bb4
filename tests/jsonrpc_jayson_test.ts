/**
 * The JSON-RPC endpoint through jayson's command-line client (a JSON-RPC 2.0 client nobody here
 * wrote, run by Node through npx): calls with positional and named params, the standard errors and
 * an application error. Skipped, with the reason printed, where npx cannot run it.
 */
import assert from "node:assert/strict";
import { startTestNode } from "../testing/node.ts";

const JAYSON = "jayson@5.0.0";

type Answer = { id?: unknown; result?: Record<string, unknown>; error?: { code: number } };

async function jayson(url: string, method: string, params: unknown): Promise<Answer> {
  const output = await new Deno.Command("npx", {
    args: [
      "-y",
      JAYSON,
      "-u",
      `${url}/jsonrpc/v1`,
      "-m",
      method,
      "-p",
      JSON.stringify(params),
      "-j",
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout).trim();
  assert.ok(text, `jayson printed nothing: ${new TextDecoder().decode(output.stderr)}`);
  return JSON.parse(text);
}

async function npxMissing(): Promise<string | undefined> {
  try {
    const probe = await new Deno.Command("npx", {
      args: ["-y", JAYSON, "--version"],
      stdout: "null",
      stderr: "piped",
    }).output();
    return probe.success ? undefined : new TextDecoder().decode(probe.stderr).slice(0, 300);
  } catch (error) {
    return (error as Error).message;
  }
}

const missing = await npxMissing();
if (missing) console.log(`skipping the jayson test: npx cannot run ${JAYSON}: ${missing}`);

Deno.test({
  name: "jayson: calls, named params, the standard and application errors",
  ignore: missing !== undefined,
  async fn() {
    await using node = await startTestNode();
    const me = await jayson(node.url, "getMe", [""]);
    assert.match(String(me.result?.nodeId), /^[0-9a-f]{56}$/);
    assert.equal(typeof me.id, "string", "jayson's own id comes back");
    const token = await jayson(node.url, "getEdgeIdToken", []);
    assert.equal(String(token.result?.id_token).split(".").length, 3);
    assert.equal((await jayson(node.url, "getYou", [])).error?.code, -32601);
    assert.equal((await jayson(node.url, "associateAccount", { token: "x" })).error?.code, -32602);
    assert.equal((await jayson(node.url, "associateAccount", ["not.a.token"])).error?.code, -32001);
  },
});
