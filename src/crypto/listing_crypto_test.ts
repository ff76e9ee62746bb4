import assert from "node:assert/strict";
import { decodeProtectedHeader } from "jose";
import { decryptListing, encryptListing, listingKey } from "./listing_crypto.ts";

const LISTING = { localLinkNetwork: { localLinkNetworkId: "lln-0f", nodes: [] } };

Deno.test("a listing encrypted for a token decrypts with the same token and clusters", async () => {
  const data = await encryptListing(LISTING, "token-1", "linkLocal");
  assert.deepEqual(decodeProtectedHeader(data), { alg: "dir", enc: "A256GCM", cty: "json" });
  assert.equal(data.split(".").length, 5, "JWE compact");
  assert.deepEqual(await decryptListing(data, "token-1"), LISTING);
});

Deno.test("another token or another clusters value does not decrypt it", async () => {
  const data = await encryptListing(LISTING, "token-1", "account");
  await assert.rejects(decryptListing(data, "token-2", "account"));
  await assert.rejects(decryptListing(data, "token-1", "linkLocal"));
  assert.deepEqual(await decryptListing(data, "token-1", "account"), LISTING);
});

Deno.test("the key is 32 bytes, the same for the same token and clusters", async () => {
  const key = await listingKey("token-1", "linkLocal");
  assert.equal(key.length, 32);
  assert.deepEqual(await listingKey("token-1", "linkLocal"), key);
  assert.notDeepEqual(await listingKey("token-1", "account"), key);
});
