/**
 * Outside implementations the tests use (Chromium, python-zeroconf, systemd-analyze) come from
 * Debian's packages: installed with apt-get when missing, or a reason why not that the test
 * prints when it skips.
 *
 * @module
 */

let listsRefreshed = false;

async function aptGet(args: string[]): Promise<{ ok: boolean; why: string }> {
  const output = await new Deno.Command("apt-get", {
    args,
    env: { DEBIAN_FRONTEND: "noninteractive" },
    stdout: "null",
    stderr: "piped",
  }).output().catch((error: Error) => ({
    success: false,
    stderr: new TextEncoder().encode(error.message),
  }));
  const why = new TextDecoder().decode(output.stderr).trim().split("\n").pop() ?? "";
  return { ok: output.success, why };
}

/**
 * Installs Debian package `name` unless `present()` already holds; true once it holds, else why
 * not. A failed install is tried once more after `apt-get update` (a new machine may have no
 * package lists yet).
 */
export async function debianPackage(
  name: string,
  present: () => Promise<boolean>,
): Promise<true | { missing: string }> {
  if (await present()) return true;
  const args = ["install", "-y", "--no-install-recommends", name];
  let install = await aptGet(args);
  if (!install.ok && !listsRefreshed) {
    listsRefreshed = true;
    await aptGet(["update"]);
    install = await aptGet(args);
  }
  if (install.ok && await present()) return true;
  return { missing: `apt-get install ${name} failed: ${install.why}` };
}

/** Whether `program` is on the PATH. */
export async function onPath(program: string): Promise<boolean> {
  const output = await new Deno.Command("sh", { args: ["-c", `command -v ${program}`] }).output();
  return output.success;
}
