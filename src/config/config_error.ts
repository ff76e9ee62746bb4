/**
 * The error of a setting or file the user must fix. A leaf module: discovery, identity and the
 * hub raise it without importing the node's configuration (src/node/config.ts).
 *
 * @module
 */

/** A setting or file the user must fix; main prints the message and exits 2. */
export class ConfigError extends Error {
  override name = "ConfigError";
}
