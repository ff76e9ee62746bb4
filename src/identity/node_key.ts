/**
 * The node's identity key: an Ed25519 key pair created at first start in
 * `<dataDir>/identity/node-key.json` (mode 0600), and the node id derived from it.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { importJWK, type JWK } from "jose";
import { newEd25519Jwks, writeSecretFile } from "./key_files.ts";

/** The node's key pair and id. */
export interface NodeKey {
  /** 56 lowercase hex digits: the first 28 bytes of SHA-256 of the raw public key. */
  nodeId: string;
  privateKey: CryptoKey;
  /** The public key as a JWK (`kid` = node id, `alg` EdDSA, `use` sig). */
  publicJwk: JWK;
}

/** The node id of a public key: the first 28 bytes of SHA-256 of its raw bytes, in hex. */
export async function nodeIdOf(publicJwk: JWK): Promise<string> {
  const raw = Buffer.from(publicJwk.x!, "base64url");
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", raw));
  return Buffer.from(digest.subarray(0, 28)).toString("hex");
}

/** Loads the node key, creating it when the data directory has none. */
export async function loadNodeKey(dataDir: string): Promise<NodeKey> {
  const dir = `${dataDir}/identity`;
  const path = `${dir}/node-key.json`;
  let privateJwk: JWK;
  try {
    privateJwk = JSON.parse(await Deno.readTextFile(path));
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    ({ privateJwk } = await newEd25519Jwks());
    await writeSecretFile(path, JSON.stringify(privateJwk));
  }
  const { d: _private, ...publicPart } = privateJwk;
  const nodeId = await nodeIdOf(publicPart);
  return {
    nodeId,
    privateKey: await importJWK(privateJwk, "EdDSA") as CryptoKey,
    publicJwk: { ...publicPart, kid: nodeId, alg: "EdDSA", use: "sig" },
  };
}
