/**
 * The encryption of node listings (spec/mds.yaml): JWE compact, `dir` + A256GCM, with the key
 * derived from the caller's edge access token by HKDF-SHA256. The node encrypts; clients that
 * hold the token decrypt.
 *
 * @module
 */
import { compactDecrypt, CompactEncrypt } from "jose";

const SALT = new TextEncoder().encode("edgenode mds v1");

/** The content key for listings of `clusters`, derived from the token. */
export async function listingKey(token: string, clusters: string): Promise<Uint8Array> {
  const material = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(token),
    "HKDF",
    false,
    ["deriveBits"],
  );
  const bits = await crypto.subtle.deriveBits(
    {
      name: "HKDF",
      hash: "SHA-256",
      salt: SALT,
      info: new TextEncoder().encode(`nodes:${clusters}`),
    },
    material,
    256,
  );
  return new Uint8Array(bits);
}

/** Encrypts a listing for the holder of `token`. */
export async function encryptListing(
  listing: unknown,
  token: string,
  clusters: string,
): Promise<string> {
  return await new CompactEncrypt(new TextEncoder().encode(JSON.stringify(listing)))
    .setProtectedHeader({ alg: "dir", enc: "A256GCM", cty: "json" })
    .encrypt(await listingKey(token, clusters));
}

/**
 * Decrypts the `data` of GET /mds/v1/nodes with the token it was requested with. Throws when the
 * token is not the one (the JWE does not authenticate).
 */
export async function decryptListing(
  data: string,
  token: string,
  clusters = "linkLocal",
): Promise<unknown> {
  const { plaintext } = await compactDecrypt(data, await listingKey(token, clusters));
  return JSON.parse(new TextDecoder().decode(plaintext));
}
