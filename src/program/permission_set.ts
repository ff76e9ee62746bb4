/**
 * A Deno permission set, written once and given either as `deno run` flags to a child process or
 * as the permissions of a Worker (the single executable's way, src/program/self_program.ts).
 *
 * @module
 */

/** What a narrowed part of edgenode may touch. */
export interface PermissionSet {
  read: string[];
  write: string[];
  /** Hosts to connect to or listen on; `true`: any. */
  net: string[] | true;
  env: string[];
  run: string[];
  sys: NonNullable<Deno.SysPermissionDescriptor["kind"]>[];
}

/** `host:port` as Deno's --allow-net takes it. */
export function netAddress(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Nothing at all; fields are then added. */
export const NO_PERMISSIONS: PermissionSet = {
  read: [],
  write: [],
  net: [],
  env: [],
  run: [],
  sys: [],
};

/** The set as `deno run` flags (`--no-prompt` first). */
export function permissionFlags(set: PermissionSet): string[] {
  const listed = (flag: string, values: string[]) =>
    values.length > 0 ? [`--allow-${flag}=${values.join(",")}`] : [];
  return [
    "--no-prompt",
    ...listed("read", set.read),
    ...listed("write", set.write),
    ...(set.net === true ? ["--allow-net"] : listed("net", set.net)),
    ...listed("env", set.env),
    ...listed("run", set.run),
    ...listed("sys", set.sys),
  ];
}

/** The set as a Worker's `deno.permissions` (needs --unstable-worker-options). */
export function workerPermissions(set: PermissionSet): Deno.PermissionOptionsObject {
  const listed = (values: string[]) => (values.length > 0 ? values : false);
  return {
    read: listed(set.read),
    write: listed(set.write),
    net: set.net === true ? true : listed(set.net),
    env: listed(set.env),
    run: listed(set.run),
    sys: listed(set.sys),
    ffi: false,
    import: false,
  };
}
