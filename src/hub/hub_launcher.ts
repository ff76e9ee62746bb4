/**
 * `edgenode hub` runs the hub as a child process with narrow permissions, as `serve` does for a
 * node: its data directory and config, its listening address, and its issuers' JWKS hosts.
 *
 * @module
 */
import type { EnvReader } from "../node/config.ts";
import { netAddress, realConfigPath, runChild } from "../node/launcher.ts";
import { type HubFlags, type HubSettings, loadHubSettings } from "./hub_settings.ts";

/** The environment variables the hub may read. */
export const HUB_ENV_VARS = ["EDGENODE_HUB_DIR", "HOME", "USERPROFILE"];

/** The Deno permission flags of a hub with these settings. */
export function hubPermissions(settings: HubSettings): string[] {
  const jwksFiles = settings.trustedIssuers.flatMap((t) => (t.jwksFile ? [t.jwksFile] : []));
  const jwksHosts = settings.trustedIssuers.flatMap((t) =>
    t.jwksUrl ? [new URL(t.jwksUrl).host] : []
  );
  // Port 0 (any free port) cannot be named in a permission; the host alone allows it.
  const listen = settings.port === 0 ? settings.host : netAddress(settings.host, settings.port);
  return [
    "--no-prompt",
    `--allow-read=${[settings.dataDir, settings.configPath, ...settings.trustFiles, ...jwksFiles]}`,
    `--allow-write=${settings.dataDir}`,
    `--allow-net=${[listen, ...jwksHosts]}`,
    `--allow-env=${HUB_ENV_VARS.join(",")}`,
  ];
}

/** Runs the hub in a child process and returns its exit code. */
export async function launchHub(flags: HubFlags, env: EnvReader): Promise<number> {
  const settings = await loadHubSettings(flags, env);
  settings.dataDir = await Deno.realPath(settings.dataDir);
  settings.configPath = await realConfigPath(settings.configPath);
  return await runChild(hubPermissions(settings), [
    "__hub",
    `--data-dir=${settings.dataDir}`,
    `--host=${settings.host}`,
    `--port=${settings.port}`,
    ...(flags.config ? [`--config=${settings.configPath}`] : []),
    ...(flags.publicUrl ? [`--public-url=${flags.publicUrl}`] : []),
    ...settings.trustFiles.map((path) => `--trust=${path}`),
  ]);
}
