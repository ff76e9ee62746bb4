/**
 * Configuration pieces shared by the node, the hub and the CLI, with no dependency on either
 * composition root: the error a user must fix, and reading checked JSON, trust and config files.
 *
 * @example
 * ```ts
 * import { ConfigError } from "./mod.ts";
 * throw new ConfigError("no data directory: pass --data-dir or set EDGENODE_DATA_DIR");
 * ```
 *
 * @module
 */
export { ConfigError } from "./config_error.ts";
export { type EnvReader, readJsonFile, readTrustFiles, realConfigPath } from "./config_files.ts";
export { closestName } from "./closest_name.ts";
export * from "./file_errors.ts";
export {
  type FilePlaces,
  HUB_FILES,
  issuerAccess,
  makeDataDir,
  NODE_FILES,
  type PathFlags,
  readConfigIfAny,
  resolveLinks,
  resolvePaths,
  settingsFiles,
  trustedIssuersOf,
} from "./server_settings.ts";
