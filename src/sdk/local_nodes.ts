/**
 * Client helpers for the local node listing (GET /mds/v1/nodes): fetch it with an edge access
 * token and decrypt it (spec/mds.yaml gives the format).
 *
 * @module
 */
import * as v from "valibot";
import {
  type LocalLinkListing as GenLocalLinkListing,
  LocalLinkListingSchema,
} from "../../gen/mds/validators.ts";
import { decryptListing } from "../crypto/listing_crypto.ts";
import { nodeError, nodeFetch } from "./node_errors.ts";

/**
 * The decrypted linkLocal listing of a node (spec/mds.yaml's LocalLinkListing).
 *
 * @internal The type gen/mds/validators.ts gives the schema.
 */
export type LocalLinkListing = GenLocalLinkListing;

/**
 * Decrypts a listing: the whole answer body (`{ data }`, parsed or as text) or the bare `data`
 * string. Throws when the token is not the one it was requested with.
 */
export async function decryptNodeListing(
  body: unknown,
  token: string,
  clusters: string = "linkLocal",
): Promise<unknown> {
  let data = body;
  if (typeof data === "string" && data.trimStart().startsWith("{")) {
    try {
      data = JSON.parse(data);
    } catch (error) {
      throw new TypeError(`not a node listing: not JSON (${(error as Error).message})`);
    }
  }
  if (typeof data === "object" && data !== null && "data" in data) data = data.data;
  if (typeof data !== "string") throw new TypeError("not a node listing: expected { data: <JWE> }");
  try {
    return await decryptListing(data.trim(), token, clusters);
  } catch (error) {
    throw new Error(
      `cannot decrypt the listing with this token (it must be the token it was requested with): ${
        (error as Error).message
      }`,
    );
  }
}

/** Fetches and decrypts the linkLocal listing of the node at `baseUrl`. */
export async function fetchLocalNodes(baseUrl: string, token: string): Promise<LocalLinkListing> {
  const response = await nodeFetch(baseUrl)(new URL("/mds/v1/nodes?clusters=linkLocal", baseUrl), {
    headers: { Authorization: `Bearer ${token}` },
  });
  const text = await response.text();
  if (!response.ok) {
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch { /* a plain text answer is its own message */ }
    throw nodeError(response, body, "listing the local nodes");
  }
  return v.parse(LocalLinkListingSchema, await decryptNodeListing(text, token));
}
