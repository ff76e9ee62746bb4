/**
 * Issuers and tokens for identity tests, made the way users make them: `edgenode issuer init`
 * and `edgenode token`. For claims the CLI will not produce (expired, not yet valid, unsigned),
 * tokens are signed with the CLI-made issuer key directly.
 *
 * @module
 */
import assert from "node:assert/strict";
import { importJWK, type JWTPayload, SignJWT } from "jose";
import { runEdgenode, type TestNode } from "./node.ts";

/** A local issuer made by the CLI. */
export interface TestIssuer {
  dir: string;
  issuer: string;
  /** The trust file for `--trust`. */
  trustFile: string;
}

/** `edgenode issuer init --dir DIR --issuer NAME`. */
export async function makeIssuer(dir: string, issuer = "test-issuer"): Promise<TestIssuer> {
  const result = await runEdgenode(["issuer", "init", "--dir", dir, "--issuer", issuer]);
  assert.equal(result.code, 0, result.stderr);
  return { dir, issuer, trustFile: `${dir}/trust.json` };
}

/** `edgenode token ...`; returns the token. */
export async function cliToken(
  issuer: TestIssuer,
  account: string,
  scope: string,
  extra: string[] = [],
): Promise<string> {
  const result = await runEdgenode([
    "token",
    "--dir",
    issuer.dir,
    "--account",
    account,
    "--scope",
    scope,
    ...extra,
  ]);
  assert.equal(result.code, 0, result.stderr);
  return result.stdout.trim();
}

/** A token with exactly these claims, signed by the issuer's key (iss added). */
export async function signedToken(issuer: TestIssuer, claims: JWTPayload): Promise<string> {
  const key = JSON.parse(await Deno.readTextFile(`${issuer.dir}/issuer-key.json`));
  return await new SignJWT({ iss: issuer.issuer, ...claims })
    .setProtectedHeader({ alg: "EdDSA", kid: key.privateJwk.kid })
    .sign(await importJWK(key.privateJwk, "EdDSA"));
}

/** Unix seconds, now. */
export const now = () => Math.floor(Date.now() / 1000);

/** POST /jsonrpc/v1 with this body; returns the parsed answer (undefined for 204). */
export async function rpcRaw(node: TestNode, body: string): Promise<unknown> {
  const response = await fetch(`${node.url}/jsonrpc/v1`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body,
  });
  if (response.status === 204) return undefined;
  assert.equal(response.status, 200);
  return await response.json();
}

/** One JSON-RPC call; returns its `result`, or throws with the error's code and message. */
// deno-lint-ignore no-explicit-any
export async function rpc(node: TestNode, method: string, params?: unknown): Promise<any> {
  const answer = await rpcRaw(
    node,
    JSON.stringify({ jsonrpc: "2.0", id: 1, method, ...(params === undefined ? {} : { params }) }),
  ) as { result?: unknown; error?: { code: number; message: string } };
  if (answer.error) throw new RpcError(answer.error.code, answer.error.message);
  return answer.result;
}

/** A JSON-RPC error answer. */
export class RpcError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(`${code}: ${message}`);
    this.code = code;
  }
}

/** Asserts that a call fails with `code` and a message matching `message`. */
export async function rpcFails(
  node: TestNode,
  method: string,
  params: unknown,
  code: number,
  message: RegExp,
): Promise<void> {
  await assert.rejects(rpc(node, method, params), (error: RpcError) => {
    assert.equal(error.code, code, error.message);
    assert.match(error.message, message);
    return true;
  });
}
