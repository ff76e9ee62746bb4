/**
 * The node's identity key: an Ed25519 key pair created at first start in
 * `<dataDir>/identity/node-key.json` (mode 0600), and the node id derived from it.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { importJWK, type JWK } from "jose";
import { ConfigError } from "../config/config_error.ts";
import { newEd25519Jwks, parsePrivateJwk, readSecretFile, writeSecretFile } from "./key_files.ts";

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

/**
 * Loads the node key, creating it when the data directory has none. A key file that cannot be
 * read or is not a key stops the start with a ConfigError that names it and the way out.
 */
export async function loadNodeKey(dataDir: string): Promise<NodeKey> {
  const dir = `${dataDir}/identity`;
  const path = `${dir}/node-key.json`;
  const text = await readSecretFile(path);
  let privateJwk: JWK;
  if (text === undefined) {
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    ({ privateJwk } = await newEd25519Jwks());
    await writeSecretFile(path, JSON.stringify(privateJwk));
  } else {
    try {
      privateJwk = await parsePrivateJwk(text);
    } catch (error) {
      throw new ConfigError(
        `${path} is not a valid node key (${(error as Error).message}): restore it from a ` +
          `backup, or move it away to make a new identity (the node id will change)`,
      );
    }
  }
  const { d: _private, ...publicPart } = privateJwk;
  const nodeId = await nodeIdOf(publicPart);
  return {
    nodeId,
    privateKey: await importJWK(privateJwk, "EdDSA") as CryptoKey,
    publicJwk: { ...publicPart, kid: nodeId, alg: "EdDSA", use: "sig" },
  };
}
