/**
 * The program itself, shared by every command that starts a process: how to run this program
 * again (source or single executable), the permissions it passes, the environment it keeps, the
 * roles of its workers (the executable's container process is mcm's: src/mcm/sandbox/host/).
 *
 * @module
 */
export * from "./env_vars.ts";
export * from "./executable_flags.ts";
export * from "./permission_set.ts";
export * from "./self_program.ts";
export * from "./worker_roles.ts";
