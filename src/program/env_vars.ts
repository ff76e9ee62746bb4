/**
 * The environment variables each part of edgenode may read: the only ones its permissions name.
 *
 * @module
 */

/** The node's. */
export const NODE_ENV_VARS: string[] = [
  "EDGENODE_API_KEY",
  "EDGENODE_DATA_DIR",
  "EDGENODE_ENGINE_DIR",
  "HOME",
  "USERPROFILE",
  // Where Deno keeps its cache, passed on to container processes.
  "DENO_DIR",
  "XDG_CACHE_HOME",
];

/** The hub's. */
export const HUB_ENV_VARS: string[] = ["EDGENODE_HUB_DIR", "HOME", "USERPROFILE"];

/** The command-line clients' (src/cli/ and the issuer commands), besides the node's. */
export const CLIENT_ENV_VARS: string[] = [
  "EDGENODE_NODE",
  "EDGENODE_KEY",
  "EDGENODE_ISSUER_DIR",
  // The Hugging Face Hub `edgenode pull hf.co/...` asks (the Hub clients' own convention).
  "HF_ENDPOINT",
];
