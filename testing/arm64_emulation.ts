/**
 * An arm64 machine for tests, under user-mode emulation: Debian's qemu-aarch64-static runs the
 * arm64 Deno from npm (`@deno/linux-arm64-glibc`, the same version as the deno running the tests)
 * against the arm64 C library of `libc6-arm64-cross`. Installed when missing (the Debian packages
 * with apt-get, Deno into a cache folder kept between runs), or a reason why not that the test
 * prints when it skips.
 *
 * An arm64 program that starts others (the node's container processes and inference engine,
 * deploy/install.sh's deno) needs the kernel to run arm64 programs through qemu: a binfmt_misc
 * entry. A container cannot register one for the machine, but since Linux 6.7 a user namespace
 * can mount a binfmt_misc of its own: the programs run in such a namespace (with its own mount
 * namespace; the network stays the machine's), whose entry sends arm64 programs to qemu with the
 * arm64 C library. Else the machine's own entry is used, where it has one; else only the program
 * started through qemu runs, and `binfmt` is undefined.
 *
 * @module
 */
import { join } from "node:path";
import { tmpdir } from "node:os";
import { debianPackage, onPath } from "./debian.ts";
import { runToEnd } from "./run.ts";

/** The cache of the arm64 Deno, kept between runs. */
export const ARM64_CACHE: string = join(tmpdir(), "edgenode-test-arm64");
/** Where `libc6-arm64-cross` puts the arm64 C library (qemu's `-L`). */
export const ARM64_SYSROOT = "/usr/aarch64-linux-gnu";
/** The reason printed where a test needs binfmt_misc and this machine has none. */
export const NO_BINFMT =
  "no binfmt_misc registration for aarch64: the node's child processes cannot start under " +
  "user-mode emulation here";

/** The emulator and the arm64 Deno it runs. */
export interface Arm64Emulation {
  /** The arm64 deno binary. */
  deno: string;
  /**
   * Whose binfmt_misc entry runs arm64 programs (so that the processes an arm64 program starts
   * run too): a user namespace's own, the machine's, or none (only `deno` runs, through qemu).
   */
  binfmt?: "user namespace" | "machine";
  /**
   * The program and arguments that run `program args` where arm64 programs run: `deno` or,
   * with `binfmt`, any program (deploy/install.sh) that starts arm64 ones.
   */
  command(program: string, args: string[]): { program: string; args: string[] };
}

/** The registration of arm64 ELF executables (qemu's own magic and mask) for `interpreter`. */
function registration(interpreter: string): string {
  const magic =
    "\\x7fELF\\x02\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\xb7\\x00";
  const mask =
    "\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x00\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe\\xff\\xff\\xff";
  return `:qemu-aarch64:M::${magic}:${mask}:${interpreter}:`;
}

/** Whether `path` exists. */
async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

/** Whether the machine has an enabled binfmt_misc entry `qemu-aarch64`. */
export async function machineBinfmtAarch64(): Promise<boolean> {
  const entry = await Deno.readTextFile("/proc/sys/fs/binfmt_misc/qemu-aarch64")
    .catch(() => "");
  return entry.split("\n")[0].trim() === "enabled";
}

/** The ways to run an arm64 program, most capable first, for the arm64 deno at `deno`. */
async function runners(deno: string): Promise<Omit<Arm64Emulation, "deno">[]> {
  // binfmt_misc's interpreter gets no arguments of ours: a script adds qemu's -L.
  // Its full path: the node's child processes run with an emptied environment.
  const qemu = (await runToEnd("sh", { args: ["-c", "command -v qemu-aarch64-static"] })).stdout
    .trim();
  const interpreter = join(ARM64_CACHE, "qemu-aarch64");
  await Deno.writeTextFile(
    interpreter,
    `#!/bin/sh\nexec ${qemu} -L ${ARM64_SYSROOT} "$@"\n`,
    { mode: 0o755 },
  );
  const setup = "mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc && " +
    'printf %s "$1" > /proc/sys/fs/binfmt_misc/register && shift && exec "$@"';
  return [
    {
      binfmt: "user namespace",
      command: (program, args) => ({
        program: "unshare",
        args: [
          "--user",
          "--map-root-user",
          "--mount",
          "sh",
          "-c",
          setup,
          "sh",
          registration(interpreter),
          program,
          ...args,
        ],
      }),
    },
    ...(await machineBinfmtAarch64()
      ? [{
        binfmt: "machine" as const,
        command: (program: string, args: string[]) => ({ program, args }),
      }]
      : []),
    {
      command: (_program, args) => ({
        program: qemu,
        args: ["-L", ARM64_SYSROOT, deno, ...args],
      }),
    },
  ];
}

/** Whether `deno` run by `runner` is an arm64 deno of the tests' own version. */
async function runsAsArm64(
  deno: string,
  runner: Omit<Arm64Emulation, "deno">,
): Promise<boolean> {
  if (!await exists(deno)) return false;
  const { program, args } = runner.command(deno, ["--version"]);
  const done = await runToEnd(program, { args }).catch(() => undefined);
  return done?.code === 0 &&
    done.stdout.startsWith(`deno ${Deno.version.deno} `) && done.stdout.includes("aarch64");
}
/** Fetches `@deno/linux-arm64-glibc` from npm into the cache; why not, if it fails. */
async function fetchArm64Deno(deno: string): Promise<string | undefined> {
  if (!await onPath("npm")) return "no npm to fetch @deno/linux-arm64-glibc";
  await Deno.mkdir(ARM64_CACHE, { recursive: true });
  const work = await Deno.makeTempDir({ dir: ARM64_CACHE, prefix: "fetch-" });
  try {
    const name = `@deno/linux-arm64-glibc@${Deno.version.deno}`;
    const packed = await runToEnd("npm", {
      args: ["pack", "--silent", "--pack-destination", work, name],
      cwd: work,
    });
    if (packed.code !== 0) return `npm pack ${name} failed: ${packed.stderr.trim()}`;
    const tarball = join(work, packed.stdout.trim().split("\n").pop()!);
    const unpacked = await runToEnd("tar", { args: ["-xzf", tarball, "-C", work] });
    if (unpacked.code !== 0) return `unpacking ${tarball} failed: ${unpacked.stderr.trim()}`;
    await Deno.chmod(`${work}/package/deno`, 0o755);
    // Renamed into place once whole: an interrupted fetch never looks installed.
    await Deno.rename(`${work}/package/deno`, deno);
    return undefined;
  } finally {
    await Deno.remove(work, { recursive: true }).catch(() => {});
  }
}

/**
 * The emulated arm64 machine, installed now where something is missing; or why it cannot be
 * had here (no apt-get or no root for the Debian packages, no npm or no network for Deno).
 */
export async function arm64Emulation(): Promise<Arm64Emulation | { missing: string }> {
  const packages: [string, () => Promise<boolean>][] = [
    ["qemu-user-static", () => onPath("qemu-aarch64-static")],
    ["libc6-arm64-cross", () => exists(`${ARM64_SYSROOT}/lib/ld-linux-aarch64.so.1`)],
    // Deno links libgcc_s, the engine's llama.cpp libstdc++: libc6-arm64-cross brings neither.
    ["libgcc-s1-arm64-cross", () => exists(`${ARM64_SYSROOT}/lib/libgcc_s.so.1`)],
    ["libstdc++6-arm64-cross", () => exists(`${ARM64_SYSROOT}/lib/libstdc++.so.6`)],
  ];
  for (const [name, present] of packages) {
    const installed = await debianPackage(name, present).catch((error: Error) => ({
      missing: `apt-get install ${name}: ${error.message}`,
    }));
    if (installed !== true) return installed;
  }
  const deno = join(ARM64_CACHE, `deno-${Deno.version.deno}`);
  await Deno.mkdir(ARM64_CACHE, { recursive: true });
  const ways = await runners(deno);
  const qemuOnly = ways[ways.length - 1];
  if (!await runsAsArm64(deno, qemuOnly)) {
    const why = await fetchArm64Deno(deno);
    if (why) return { missing: why };
    if (!await runsAsArm64(deno, qemuOnly)) {
      return { missing: `${deno} does not run under qemu-aarch64-static` };
    }
  }
  for (const way of ways) {
    if (await runsAsArm64(deno, way)) return { deno, ...way };
  }
  return { deno, ...qemuOnly };
}

/** A node started under emulation. */
export interface EmulatedNode extends AsyncDisposable {
  url: string;
  /** Everything it printed so far. */
  output(): string;
}

/**
 * Runs `deno run ARGS` under emulation with only `env`, and waits (at most `ms`: emulation is
 * 5 to 20 times slower than the machine) until it prints where it listens. Disposing of it sends
 * SIGTERM (qemu passes it on) and waits for the exit, SIGKILL after 30 s.
 */
export async function startEmulatedNode(
  emulation: Arm64Emulation,
  args: string[],
  env: Record<string, string>,
  ms = 90_000,
): Promise<EmulatedNode> {
  const { program, args: argv } = emulation.command(emulation.deno, ["run", ...args]);
  const child = new Deno.Command(program, {
    args: argv,
    clearEnv: true,
    env: { NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let text = "";
  const listening = Promise.withResolvers<string>();
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      text += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(text);
      if (match) listening.resolve(match[1]);
    }
  };
  const drained = Promise.all([collect(child.stdout), collect(child.stderr)]);
  const exited = child.status.then(async (status) => {
    await drained;
    listening.reject(new Error(`the emulated node exited with ${status.code}:\n${text}`));
  });
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch { /* exited already */ }
    const timer = setTimeout(() => {
      try {
        child.kill("SIGKILL");
      } catch { /* exited meanwhile */ }
    }, 30_000);
    await exited.finally(() => clearTimeout(timer));
  };
  const timer = setTimeout(
    () => listening.reject(new Error(`no 'listening' in ${ms / 1000} s:\n${text}`)),
    ms,
  );
  try {
    const url = await listening.promise.finally(() => clearTimeout(timer));
    return { url, output: () => text, [Symbol.asyncDispose]: stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
