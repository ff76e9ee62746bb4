/**
 * Cryptography of the wire formats that both the node and its clients need: the encryption of
 * node listings (spec/mds.yaml), derived from the caller's edge access token. A leaf: the SDK
 * imports it without importing any node service.
 *
 * @module
 */
export * from "./listing_crypto.ts";
