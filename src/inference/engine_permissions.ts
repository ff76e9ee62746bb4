/**
 * What the inference engine's process may do (src/inference/engine_process.ts starts it): FFI
 * into its own build only, and read that build, the models and the system's libraries.
 *
 * @module
 */

/** System folders the library reads to check the C library its build needs. */
const SYSTEM_READS = ["/lib", "/lib64", "/usr/lib", "/usr/lib64", "/etc/os-release"];

/**
 * The engine process's `deno run` flags: FFI into its build's `folder` only, and reading that
 * folder, `reads` and the system's libraries.
 */
export function engineRunFlags(folder: string, reads: string[]): string[] {
  return [
    "--no-config",
    "--node-modules-dir=manual",
    "--no-prompt",
    `--allow-ffi=${folder}`,
    `--allow-read=${[folder, ...reads, ...SYSTEM_READS].join(",")}`,
    "--allow-env",
    "--allow-sys=homedir,uid,osRelease",
    // node-llama-cpp tries its native build in a child of the same runtime before loading it.
    `--allow-run=${Deno.execPath()}`,
  ];
}
