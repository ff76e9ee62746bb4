/**
 * The permissions the single executable is built with (`deno task compile`) and its bundle is
 * run with in CI.
 *
 * @module
 */
import { CLIENT_ENV_VARS, HUB_ENV_VARS, NODE_ENV_VARS } from "./env_vars.ts";

/**
 * The executable's own permissions: the launcher's and the command-line clients'. The node, the
 * hub and each container host run narrowed within them (src/program/self_program.ts). Never
 * `-A`: no FFI, no system information beyond the node's, and only the environment variables
 * edgenode reads.
 */
export const EXECUTABLE_FLAGS: string[] = [
  "--no-prompt",
  "--unstable-worker-options",
  // request.signal aborts only when a client goes away, not after every answer: the legacy
  // behaviour prints a deprecation on the first chat, and nothing here relies on it.
  "--unstable-no-legacy-abort",
  "--allow-read",
  "--allow-write",
  "--allow-net",
  `--allow-env=${[...new Set([...NODE_ENV_VARS, ...HUB_ENV_VARS, ...CLIENT_ENV_VARS])]}`,
  "--allow-run",
  "--allow-sys=statfs,hostname,networkInterfaces,systemMemoryInfo",
];
