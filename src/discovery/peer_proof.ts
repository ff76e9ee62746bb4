/**
 * Checking a peer: ask the node at an address to prove who it is, over HTTP, and verify the proof
 * (src/identity/node_proof.ts).
 *
 * @module
 */
import * as v from "valibot";
import { type NodeDescription, PingAnswerSchema } from "../../gen/mds/validators.ts";
import { readText } from "../streams/mod.ts";
import { newChallenge, ProofError, verifyProof } from "../identity/node_proof.ts";

/** A proof with 1024 services fits easily; anything larger is not a node. */
const MAX_ANSWER_BYTES = 512 * 1024;

/** How long a peer has to answer a check. */
const CHECK_TIMEOUT_MS = 3000;

/**
 * Asks the node at `baseUrl` to prove who it is (GET /mds/v1/nodes?ping=true&challenge=...) and
 * returns its verified description. Throws ProofError (or a network error) otherwise.
 */
export async function checkPeer(baseUrl: string, claimedId?: string): Promise<NodeDescription> {
  const challenge = newChallenge();
  const url = new URL("/mds/v1/nodes", baseUrl);
  url.searchParams.set("ping", "true");
  url.searchParams.set("challenge", challenge);
  const response = await fetch(url, {
    signal: AbortSignal.timeout(CHECK_TIMEOUT_MS),
    redirect: "error",
    // A compressed answer would be counted after inflating; a peer has no reason to compress.
    headers: { "Accept-Encoding": "identity" },
  });
  if (!response.ok) {
    await response.body?.cancel();
    throw new ProofError(`${url.host} answered ${response.status}`);
  }
  const text = await readText(response, MAX_ANSWER_BYTES, "the answer").catch(() => {
    throw new ProofError(`${url.host} sent more than ${MAX_ANSWER_BYTES} bytes`);
  });
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ProofError(`${url.host} did not answer JSON`);
  }
  const answer = v.safeParse(PingAnswerSchema, body);
  if (!answer.success || !answer.output.data.proof) {
    throw new ProofError(`${url.host} sent no proof`);
  }
  return await verifyProof(answer.output.data.proof, challenge, claimedId);
}

/** How long a node's proof at an origin is believed; then it is asked again. */
const PROVEN_MS = 30_000;
/** Proofs kept at most (one a peer and origin; a LAN has far fewer). */
const MAX_PROVEN = 1024;
/** Which node proved itself at which origin, until when (ms since the epoch). */
const proven = new Map<string, number>();

/**
 * Makes sure the node at `origin` is `nodeId` before this node sends it anything on someone's
 * behalf: a peer's advertised address is its own claim, and a peer that claimed `127.0.0.1:22`
 * or a metadata address would otherwise aim this node's requests there. The proof is believed
 * PROVEN_MS. Throws ProofError (or a network error, or the signal's reason) otherwise.
 */
export async function proveAt(origin: string, nodeId: string, signal: AbortSignal): Promise<void> {
  const key = `${nodeId}@${origin}`;
  if ((proven.get(key) ?? 0) > Date.now()) return;
  await Promise.race([
    checkPeer(origin, nodeId),
    new Promise<never>((_, reject) => {
      if (signal.aborted) reject(signal.reason);
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    }),
  ]);
  if (proven.size >= MAX_PROVEN) proven.delete(proven.keys().next().value!);
  proven.set(key, Date.now() + PROVEN_MS);
}
