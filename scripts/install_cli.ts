/**
 * `deno task install-cli [--bin-dir DIR]`: puts an `edgenode` command on the PATH that runs this
 * checkout, so that `edgenode …` works as the README and docs/ write it instead of `npx -y deno@2.9.6
 * task edgenode …`. The command is a small shell script in DIR (default ~/.local/bin) that runs
 * `deno task edgenode`'s own command line (deno.json) with this deno, or with `npx -y
 * deno@2.9.6` should this deno be gone (npx's cache is not kept forever). Running it again
 * rewrites the script; a file it did not write is left alone.
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import meta from "../deno.json" with { type: "json" };

/** The first line after the shebang of every script this writes. */
const MARK = "# edgenode command for the checkout";

/** A word for sh, quoted when it needs to be. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** The script: deno.json's `edgenode` task, with absolute paths. */
export function cliScript(root: string, deno: string, version: string): string {
  const [program, ...args] = meta.tasks.edgenode.split(" ");
  if (program !== "deno" || args.at(-1) !== "src/main.ts") {
    throw new Error(`deno.json's edgenode task is not 'deno run … src/main.ts': ${program}`);
  }
  const words = [...args.slice(0, -1), `${root}/src/main.ts`].map(shellWord).join(" ");
  return `#!/bin/sh
${MARK} ${root} (deno task install-cli).
if [ -x ${shellWord(deno)} ]; then
  exec ${shellWord(deno)} ${words} "$@"
fi
exec npx -y deno@${version} ${words} "$@"
`;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { "bin-dir": { type: "string" } },
    strict: true,
  });
  const home = Deno.env.get("HOME");
  const binDir = values["bin-dir"] ?? (home ? `${home}/.local/bin` : undefined);
  if (!binDir) {
    console.error("install-cli: no HOME: pass --bin-dir DIR");
    Deno.exit(2);
  }
  // A path, not a URL's: a checkout in "My Projects" is not in "My%20Projects".
  const root = fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, "");
  const target = `${binDir}/edgenode`;
  const existing = await Deno.readTextFile(target).catch(() => undefined);
  if (existing !== undefined && !existing.includes(MARK)) {
    console.error(
      `install-cli: ${target} exists and was not written by install-cli; remove it, or pass ` +
        "--bin-dir DIR",
    );
    Deno.exit(2);
  }
  await Deno.mkdir(binDir, { recursive: true });
  await Deno.writeTextFile(`${target}.new`, cliScript(root, Deno.execPath(), Deno.version.deno), {
    mode: 0o755,
  });
  await Deno.chmod(`${target}.new`, 0o755);
  await Deno.rename(`${target}.new`, target);
  console.log(`installed ${target}: runs ${root}/src/main.ts with deno ${Deno.version.deno}`);
  const onPath = (Deno.env.get("PATH") ?? "").split(":").includes(binDir);
  if (!onPath) {
    console.log(`${binDir} is not on your PATH; add it, e.g. in ~/.profile:
  export PATH="${binDir}:$PATH"`);
  }
}
